// The `study` response shape: the Alfred server as the Dart-vs-Go study
// published it (docs/servers/study-code.md): `Alfred(logLevel:
// LogType.error)`, a route returning a String (`Hello World\n`, no `!`), on
// the one isolate the published code ran, whatever CORES or WORKERS say.
import 'dart:io';

import 'package:alfred/alfred.dart' show Alfred, LogType;

/// Whether fairbench asked for the `study` shape.
bool get studyRequested => Platform.environment['RESPONSE'] == 'study';

Future<void> serveStudy() async {
  final env = Platform.environment;
  final server = Alfred(logLevel: LogType.error);
  switch (env['SCENARIO']) {
    case 'dynamic':
      // DateTime.now() is local time: toIso8601String() adds no `Z`.
      server.get(
          '/', (req, res) => 'The time is ${DateTime.now().toIso8601String()}\n');
      break;
    case 'file':
      // The study had no file case: served as `default` serves it.
      final file = File('${env['FILES_DIR']}/hello-16k.txt');
      server.get('/hello-16k.txt', (req, res) => file);
      break;
    default:
      server.get('/', (req, res) => 'Hello World\n');
  }
  // The study does not quote its address; the any address (dual-stack)
  // answers fairbench on 127.0.0.1 and [::1] alike.
  await server.listen(int.parse(env['PORT']!), InternetAddress.anyIPv6);
}
