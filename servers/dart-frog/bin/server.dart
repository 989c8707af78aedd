// dart_frog. `dart_frog build` turns routes/ into build/bin/server.dart; this
// file is that generated server written out for one route, so that plain
// `dart compile` builds it (no dart_frog_cli at build time). Like the
// generated one it binds [::] and hands the handler to the custom entrypoint.
import 'dart:io';

import 'package:dart_frog/dart_frog.dart'
    show
        Cascade,
        Handler,
        HandlerUse,
        Pipeline,
        RequestContext,
        Response,
        Router,
        createStaticFileHandler;
import 'package:fairbench_dart_frog/fairbench.dart';

import '../main.dart' as entrypoint;

Future<void> main(List<String> args) => runServer(args, start);

Future<Stop> start(Config config) async {
  final server = await entrypoint.run(
    buildRootHandler(config),
    InternetAddress.anyIPv6,
    config.port,
    normalized: config.normalized,
  );
  return () => server.close(force: true);
}

Handler buildRootHandler(Config config) {
  final router = Router();
  if (config.scenario == 'file') {
    // The generated server puts the static file handler in front of the
    // routes; FILES_DIR stands in for public/.
    var files = createStaticFileHandler(path: config.filesDir);
    if (config.normalized) {
      files = files.use(plainFileHeaders);
    }
    return Cascade().add(files).add(router.call).handler;
  }
  if (config.normalized) {
    router.all(
      '/',
      config.scenario == 'dynamic' ? normalizedTime : normalizedHello,
    );
  } else {
    router.all('/', config.scenario == 'dynamic' ? time : hello);
  }
  return const Pipeline().addHandler(router.call);
}

/// Route handlers as a dart_frog user writes them. An ASCII String body gets
/// a Content-Length from shelf and no Content-Type, so dart:io's default
/// Content-Type applies; shelf_io adds Date and X-Powered-By.
Response hello(RequestContext context) => Response(body: staticBody);

Response time(RequestContext context) =>
    Response(body: dynamicBody(secondPrecision: false));

/// Go's shape: dart:io's defaults are cleared in main.dart, so the
/// Content-Type is set here.
const plainHeaders = {HttpHeaders.contentTypeHeader: plainTextUtf8};

Response normalizedHello(RequestContext context) =>
    Response(body: staticBody, headers: plainHeaders);

Response normalizedTime(RequestContext context) =>
    Response(body: dynamicBody(secondPrecision: true), headers: plainHeaders);

/// createStaticFileHandler (shelf_static) answers with Last-Modified,
/// Accept-Ranges and `text/plain` without a charset; keep its body and
/// length, replace the rest with Go's headers.
Handler plainFileHeaders(Handler inner) {
  return (RequestContext context) async {
    final response = await inner(context);
    final length = response.headers[HttpHeaders.contentLengthHeader];
    if (response.statusCode != HttpStatus.ok || length == null) {
      return response;
    }
    return Response.stream(
      body: response.bytes(),
      headers: {
        HttpHeaders.contentTypeHeader: plainTextUtf8,
        HttpHeaders.contentLengthHeader: length,
      },
    );
  };
}
