// The `study` response shape: the dart:io server as the Dart-vs-Go study
// published it (docs/servers/study-code.md): HttpServer.bind, listen, write
// and close, on the one isolate the published code ran, whatever CORES or
// WORKERS say.
import 'dart:io';

/// Whether fairbench asked for the `study` shape.
bool get studyRequested => Platform.environment['RESPONSE'] == 'study';

Future<void> serveStudy() async {
  final env = Platform.environment;
  final scenario = env['SCENARIO'];
  // The study does not quote its address; the any address (dual-stack)
  // answers fairbench on 127.0.0.1 and [::1] alike.
  final server =
      await HttpServer.bind(InternetAddress.anyIPv6, int.parse(env['PORT']!));
  if (scenario == 'file') {
    // The study had no file case: served as `default` serves it.
    final file = File('${env['FILES_DIR']}/hello-16k.txt');
    server.listen((request) {
      file.openRead().pipe(request.response);
    });
    return;
  }
  server.listen((request) {
    // DateTime.now() is local time: toIso8601String() adds no `Z`.
    request.response.write(scenario == 'dynamic'
        ? 'The time is ${DateTime.now().toIso8601String()}\n'
        : 'Hello World!\n');
    request.response.close();
  });
}
