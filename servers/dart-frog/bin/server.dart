// The server `dart_frog build` generates for this project (routes/index.dart,
// the custom entrypoint main.dart and, for `file`, a public/ folder), written
// out by hand so that plain `dart compile` builds it without dart_frog_cli.
// Its shape follows the template
// bricks/dart_frog_prod_server/__brick__/build/bin/server.dart
// (dart-frog-dev/dart_frog, the same in dart_frog_cli 1.2.11 to 1.2.13): a
// Cascade of the static file handler and the root handler; the root handler
// a Pipeline over a Router that mounts `/` on a closure which builds the
// directory's Pipeline and Router, and registers its routes, for every
// request. That per-request work is what a dart_frog app pays, so both
// variants keep it. Two differences: main() starts CORES isolates through
// runServer (the generated main serves one), and the static file handler is
// added for `file` only, as if only that project had a public/ folder.
import 'dart:io';

import 'package:dart_frog/dart_frog.dart'
    show Cascade, Handler, Pipeline, Router, createStaticFileHandler;
import 'package:fairbench_dart_frog/fairbench.dart';
import 'package:fairbench_dart_frog/served.dart';

import '../main.dart' as entrypoint;
import '../routes/index.dart' as index;

Future<void> main(List<String> args) => runServer(args, start);

Future<Stop> start(Config config) async {
  served = config;
  final server = await createServer(InternetAddress.anyIPv6, config.port);
  return () => server.close(force: true);
}

Future<HttpServer> createServer(InternetAddress address, int port) async {
  var cascade = Cascade();
  if (served.scenario == 'file') {
    // FILES_DIR stands in for public/.
    cascade = cascade.add(createStaticFileHandler(path: served.filesDir));
  }
  final handler = cascade.add(buildRootHandler()).handler;
  return entrypoint.run(handler, address, port);
}

Handler buildRootHandler() {
  const pipeline = Pipeline();
  final router = Router()..mount('/', (context) => buildHandler()(context));
  return pipeline.addHandler(router.call);
}

Handler buildHandler() {
  const pipeline = Pipeline();
  final router = Router()..all('/', (context) => index.onRequest(context));
  return pipeline.addHandler(router.call);
}
