// The `study` response shape: the Conduit server as the Dart-vs-Go study
// published it (docs/servers/study-code.md): a channel whose entry point is a
// Router with one route answering `Response.ok(String)` — no content type
// set, so Conduit sends the String JSON-encoded (`"Hello World!\n"` in
// quotes, `application/json`) — started with `startOnCurrentIsolate()` for
// one worker and `start(numberOfInstances: N)` for N, the study's only
// multi-isolate Dart server. It lives in lib/ because Conduit finds the
// channel through dart:mirrors.
import 'dart:io';

import 'package:conduit_core/conduit_core.dart'
    show Application, ApplicationChannel, Controller, FileController, Response, Router;

/// Whether fairbench asked for the `study` shape.
bool get studyRequested => Platform.environment['RESPONSE'] == 'study';

Future<void> serveStudy() async {
  final env = Platform.environment;
  // WORKERS (a suite's `workers`) when given, else one isolate per CPU.
  final isolates = int.parse(env['WORKERS'] ?? env['CORES'] ?? '1');
  final app = Application<StudyChannel>()
    // The study does not quote its address; Conduit's default is IPv4 only,
    // so the any address, dual-stack, as in `default`.
    ..options.address = InternetAddress.anyIPv6
    ..options.isIpv6Only = false
    ..options.port = int.parse(env['PORT']!)
    ..options.context['scenario'] = env['SCENARIO'] ?? 'static'
    ..options.context['filesDir'] = env['FILES_DIR'] ?? '';
  if (isolates == 1) {
    await app.startOnCurrentIsolate();
  } else {
    await app.start(numberOfInstances: isolates);
  }
}

class StudyChannel extends ApplicationChannel {
  @override
  Controller get entryPoint {
    final router = Router();
    final context = options!.context;
    switch (context['scenario']) {
      case 'dynamic':
        // DateTime.now() is local time: toIso8601String() adds no `Z`.
        router.route('/').linkFunction((request) async =>
            Response.ok('The time is ${DateTime.now().toIso8601String()}\n'));
        break;
      case 'file':
        // The study had no file case: served as `default` serves it.
        router
            .route('/*')
            .link(() => FileController(context['filesDir'] as String));
        break;
      default:
        router
            .route('/')
            .linkFunction((request) async => Response.ok('Hello World!\n'));
    }
    return router;
  }
}
