// dart_frog's custom entrypoint (docs: advanced/custom-entrypoint): a root
// main.dart exposing `run`, which the server `dart_frog build` generates calls
// instead of its plain `serve(handler, address, port)`. It is where a
// dart_frog app decides how it binds: here `shared: true`, so that every
// isolate can serve the port; and, for `normalized`, what it sends.
import 'dart:io';

import 'package:dart_frog/dart_frog.dart'
    show Handler, HandlerUse, RequestContext, Response, serve;
import 'package:fairbench_dart_frog/fairbench.dart';
import 'package:fairbench_dart_frog/served.dart';

Future<HttpServer> run(Handler handler, InternetAddress ip, int port) async {
  final config = served;
  if (config.normalized) {
    // The static file handler sits in front of the routes in the generated
    // server, out of reach of routes/_middleware.dart: the whole handler is
    // wrapped here instead.
    final root =
        config.scenario == 'file' ? handler.use(plainFileHeaders) : handler;
    // null drops X-Powered-By: Dart with package:dart_frog
    // (docs: advanced/powered-by-header).
    final server =
        await serve(root, ip, port, shared: true, poweredByHeader: null);
    // dart:io's defaults: Content-Type, X-Frame-Options,
    // X-Content-Type-Options, X-XSS-Protection. serve() completes in a
    // microtask, ahead of any socket event, so no response has used them.
    server.defaultResponseHeaders.clear();
    return server;
  }
  return serve(handler, ip, port, shared: true);
}

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
