// The `study` response shape: the Jaguar server as the Dart-vs-Go study
// published it (docs/servers/study-code.md): `Jaguar()`, a route returning a
// String (`Hello World\n`, no `!`), `serve()`, on the one isolate the
// published code ran, whatever CORES or WORKERS say. The study left Jaguar's
// address and port at their defaults; the port must be fairbench's, the
// address stays Jaguar's default, "0.0.0.0": IPv4 only, as published.
import 'dart:io';

import 'package:jaguar/jaguar.dart' show Jaguar;

/// Whether fairbench asked for the `study` shape.
bool get studyRequested => Platform.environment['RESPONSE'] == 'study';

Future<void> serveStudy() async {
  final env = Platform.environment;
  final server = Jaguar(port: int.parse(env['PORT']!));
  switch (env['SCENARIO']) {
    case 'dynamic':
      // DateTime.now() is local time: toIso8601String() adds no `Z`.
      server.get(
          '/', (context) => 'The time is ${DateTime.now().toIso8601String()}\n');
      break;
    case 'file':
      // The study had no file case: served as `default` serves it.
      server.staticFile('/hello-16k.txt', '${env['FILES_DIR']}/hello-16k.txt');
      break;
    default:
      server.get('/', (context) => 'Hello World\n');
  }
  await server.serve();
}
