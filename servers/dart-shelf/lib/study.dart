// The `study` response shape: the shelf server as the Dart-vs-Go study
// published it (docs/servers/study-code.md): a bare `Pipeline` with one
// handler returning `Response.ok(String)`, no router, `shelf_io.serve`, on
// the one isolate the published code ran, whatever CORES or WORKERS say.
import 'dart:io';

import 'package:shelf/shelf.dart' show Pipeline, Request, Response;
import 'package:shelf/shelf_io.dart' as shelf_io;
import 'package:shelf_static/shelf_static.dart' show createStaticHandler;

/// Whether fairbench asked for the `study` shape.
bool get studyRequested => Platform.environment['RESPONSE'] == 'study';

Future<void> serveStudy() async {
  final env = Platform.environment;
  final scenario = env['SCENARIO'];
  final handler = scenario == 'file'
      // The study had no file case: served as `default` serves it.
      ? const Pipeline().addHandler(createStaticHandler(env['FILES_DIR']!))
      : const Pipeline().addHandler((Request request) => Response.ok(
          // DateTime.now() is local time: toIso8601String() adds no `Z`.
          scenario == 'dynamic'
              ? 'The time is ${DateTime.now().toIso8601String()}\n'
              : 'Hello World!\n'));
  // The study does not quote its address; the any address (dual-stack)
  // answers fairbench on 127.0.0.1 and [::1] alike.
  await shelf_io.serve(handler, InternetAddress.anyIPv6, int.parse(env['PORT']!));
}
