// The fairbench server contract, shared by the Dart servers.
//
// Every servers/dart-*/lib/fairbench.dart is a byte-identical copy of this file
// (tests/dart checks that): each folder must stay a standalone Dart package, so
// it cannot import a sibling.
import 'dart:io';
import 'dart:isolate';

/// Body of the `static` scenario (scenarios/static.toml).
const staticBody = 'Hello World!\n';

/// The Content-Type of every scenario, and what Go's net/http sends.
const plainTextUtf8 = 'text/plain; charset=utf-8';

/// The file served by the `file` scenario, found in FILES_DIR.
const fileName = 'hello-16k.txt';

/// Request path of the `file` scenario; `static` and `dynamic` use `/`.
const filePath = '/hello-16k.txt';

/// Body of the `dynamic` scenario, computed per request.
///
/// Dart's own formatter gives microseconds; the normalized variant cuts them
/// so that the body is the 33 bytes every other runtime sends.
String dynamicBody({required bool secondPrecision}) {
  final iso = DateTime.now().toUtc().toIso8601String();
  if (secondPrecision) {
    return 'The time is ${iso.substring(0, 19)}Z\n';
  }
  return 'The time is $iso\n';
}

/// What fairbench asks of this run, from the environment it starts us with.
class Config {
  Config({
    required this.scenario,
    required this.normalized,
    required this.port,
    required this.cores,
    required this.filesDir,
    this.mode = 'jit',
    this.training = false,
  });

  factory Config.fromEnvironment([Map<String, String>? environment]) {
    final env = environment ?? Platform.environment;
    final scenario = env['SCENARIO'] ?? 'static';
    if (!scenarios.contains(scenario) &&
        !stackScenarios.contains(scenario.split('-').first)) {
      throw ArgumentError.value(
          scenario, 'SCENARIO', 'not one of $scenarios, $stackScenarios');
    }
    final response = env['RESPONSE'] ?? 'default';
    if (response != 'default' && response != 'normalized') {
      throw ArgumentError.value(response, 'RESPONSE', 'not default/normalized');
    }
    return Config(
      scenario: scenario,
      normalized: response == 'normalized',
      port: int.parse(env['PORT'] ?? '8080'),
      cores: int.parse(env['CORES'] ?? '1'),
      filesDir: env['FILES_DIR'] ?? '../../scenarios/files',
      mode: env['MODE'] ?? 'jit',
    );
  }

  /// Rebuilds a [Config] sent as [toMap] to another isolate.
  factory Config.fromMap(Map<dynamic, dynamic> map) => Config(
        scenario: map['scenario'] as String,
        normalized: map['normalized'] as bool,
        port: map['port'] as int,
        cores: map['cores'] as int,
        filesDir: map['filesDir'] as String,
        mode: map['mode'] as String,
        training: map['training'] as bool,
      );

  static const scenarios = ['static', 'dynamic', 'file'];

  /// The scenarios of issue 26 (and their `<route>-<detail>` variants, such
  /// as queries-1), served by a server's lib/stack.dart routes (whose
  /// manifest does not list only [scenarios]). Not in the training run: all
  /// but json need a database.
  static const stackScenarios = ['json', 'db', 'queries', 'fortunes', 'updates'];

  final String scenario;
  final bool normalized;
  final int port;
  final int cores;
  final String filesDir;
  final String mode;

  /// True during the `dart compile jit-snapshot` training run.
  final bool training;

  String get path => scenario == 'file' ? filePath : '/';
  String get response => normalized ? 'normalized' : 'default';
  String get file => '$filesDir/$fileName';

  Map<String, Object> toMap() => {
        'scenario': scenario,
        'normalized': normalized,
        'port': port,
        'cores': cores,
        'filesDir': filesDir,
        'mode': mode,
        'training': training,
      };
}

/// Stops a server started by a [Start].
typedef Stop = Future<void> Function();

/// Starts one server (one isolate's worth) for [config].
typedef Start = Future<Stop> Function(Config config);

/// The `main` of every Dart server.
///
/// With `--train` or FAIRBENCH_TRAIN=1 it runs [train] and returns, which is
/// what `dart compile jit-snapshot` needs. Otherwise it starts CORES isolates
/// (this one and CORES-1 spawned) that each call [start] and bind the same
/// port with `shared: true`. A framework that spawns its own isolates passes
/// [spawnIsolates] false and reads [Config.cores] itself.
Future<void> runServer(
  List<String> args,
  Start start, {
  bool spawnIsolates = true,
}) async {
  if (args.contains('--train') ||
      Platform.environment['FAIRBENCH_TRAIN'] == '1') {
    await train(start, Platform.environment['FILES_DIR'] ?? '');
    return;
  }
  final Config config;
  try {
    config = Config.fromEnvironment();
  } on Object catch (error) {
    stderr.writeln('fairbench: $error');
    exit(2);
  }
  final isolates = spawnIsolates ? config.cores : 1;
  if (isolates > 1) {
    // A spawned isolate that fails to bind must take the process down:
    // fairbench would otherwise measure fewer isolates than it asked for.
    final errors = ReceivePort()
      ..listen((error) {
        stderr.writeln('fairbench: isolate failed: $error');
        exit(1);
      });
    for (var i = 1; i < isolates; i++) {
      await Isolate.spawn(
        _serveInIsolate,
        _IsolateJob(start, config.toMap()),
        onError: errors.sendPort,
        debugName: 'server-$i',
      );
    }
  }
  await start(config);
  stdout.writeln('listening on [::]:${config.port} scenario=${config.scenario}'
      ' response=${config.response} cores=${config.cores} mode=${config.mode}');
}

class _IsolateJob {
  _IsolateJob(this.start, this.config);

  final Start start;
  final Map<String, Object> config;
}

Future<void> _serveInIsolate(_IsolateJob job) async {
  await job.start(Config.fromMap(job.config));
}

/// The training run of `dart compile jit-snapshot`: serves [requests]
/// requests of every scenario in both response shapes to itself, on one
/// isolate and an ephemeral port, then stops so that the compiler can write
/// the snapshot.
Future<void> train(Start start, String filesDir, {int requests = 300}) async {
  final client = HttpClient();
  try {
    for (final scenario in Config.scenarios) {
      for (final normalized in const [false, true]) {
        final config = Config(
          scenario: scenario,
          normalized: normalized,
          port: await _freePort(),
          cores: 1,
          filesDir: filesDir,
          mode: 'training',
          training: true,
        );
        final stop = await start(config);
        try {
          for (var i = 0; i < requests; i++) {
            final request =
                await client.get('127.0.0.1', config.port, config.path);
            final response = await request.close();
            await response.drain<void>();
            if (response.statusCode != HttpStatus.ok) {
              throw StateError('training ${config.scenario}/${config.response}:'
                  ' status ${response.statusCode}');
            }
          }
        } finally {
          await stop();
        }
      }
    }
  } finally {
    client.close(force: true);
  }
  stdout.writeln('training done');
}

Future<int> _freePort() async {
  final socket = await ServerSocket.bind(InternetAddress.loopbackIPv4, 0);
  final port = socket.port;
  await socket.close();
  return port;
}
