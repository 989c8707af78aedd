// shelf + shelf_router (+ shelf_static for the file scenario) on shelf_io.
import 'dart:io';

import 'package:fairbench_dart_shelf/fairbench.dart';
import 'package:fairbench_dart_shelf/stack.dart';
import 'package:fairbench_dart_shelf/study.dart';
import 'package:shelf/shelf.dart' show Handler, Pipeline, Request, Response;
import 'package:shelf/shelf_io.dart' as shelf_io;
import 'package:shelf_router/shelf_router.dart' show Router;
import 'package:shelf_static/shelf_static.dart' show createStaticHandler;

// RESPONSE=study runs the code the study published instead (lib/study.dart).
Future<void> main(List<String> args) =>
    studyRequested ? serveStudy() : runServer(args, start);

Future<Stop> start(Config config) async {
  await openStack(config.cores);
  final HttpServer server;
  if (config.normalized) {
    server = await HttpServer.bind(
      InternetAddress.anyIPv6,
      config.port,
      shared: true,
    );
    // shelf_io leaves dart:io's defaults on every response: Content-Type,
    // X-Frame-Options, X-Content-Type-Options, X-XSS-Protection. Cleared
    // before serveRequests, so no response is ever written with them.
    server.defaultResponseHeaders.clear();
    // null drops the X-Powered-By header shelf_io adds by default.
    shelf_io.serveRequests(server, withStack(normalizedHandler(config)),
        poweredByHeader: null);
  } else {
    server = await shelf_io.serve(
      withStack(defaultHandler(config)),
      InternetAddress.anyIPv6,
      config.port,
      shared: true,
    );
  }
  return () => server.close(force: true);
}

/// What a shelf user writes. shelf computes Content-Length for a String body
/// and shelf_io adds Date and X-Powered-By; Content-Type comes from dart:io's
/// default headers because an ASCII String body gets none from shelf.
Handler defaultHandler(Config config) {
  if (config.scenario == 'file') {
    return createStaticHandler(config.filesDir);
  }
  final router = Router();
  if (config.scenario == 'dynamic') {
    router.get('/',
        (Request request) => Response.ok(dynamicBody(secondPrecision: false)));
  } else {
    router.get('/', (Request request) => Response.ok(staticBody));
  }
  return router.call;
}

/// Go's shape: the Content-Type set on the Response (dart:io's default is
/// gone), Content-Length from shelf, Date from shelf_io.
Handler normalizedHandler(Config config) {
  if (config.scenario == 'file') {
    return const Pipeline()
        .addMiddleware(plainFileHeaders)
        .addHandler(createStaticHandler(config.filesDir));
  }
  const headers = {HttpHeaders.contentTypeHeader: plainTextUtf8};
  final router = Router();
  if (config.scenario == 'dynamic') {
    router.get(
        '/',
        (Request request) =>
            Response.ok(dynamicBody(secondPrecision: true), headers: headers));
  } else {
    router.get(
        '/', (Request request) => Response.ok(staticBody, headers: headers));
  }
  return router.call;
}

/// shelf_static answers with Last-Modified, Accept-Ranges, (ETag in newer
/// releases) and `text/plain` without a charset; keep its body and length,
/// replace the rest with Go's headers.
Handler plainFileHeaders(Handler inner) {
  return (Request request) async {
    final response = await inner(request);
    final length = response.headers[HttpHeaders.contentLengthHeader];
    if (response.statusCode != HttpStatus.ok || length == null) {
      return response;
    }
    return Response.ok(
      response.read(),
      headers: {
        HttpHeaders.contentTypeHeader: plainTextUtf8,
        HttpHeaders.contentLengthHeader: length,
      },
    );
  };
}

/// The json, db, queries, fortunes and updates routes (lib/stack.dart) in
/// front of the scenario's handler, under every scenario: a shelf Response
/// with the Content-Type; shelf sets Content-Length for a byte body and
/// shelf_io adds Date (and, in `default`, its and dart:io's other headers).
Handler withStack(Handler inner) {
  return (Request request) async {
    final path = request.requestedUri.path;
    if (request.method != 'GET' || !stackPaths.contains(path)) {
      return inner(request);
    }
    Answer result;
    try {
      result = await answer(path, request.requestedUri.queryParameters);
    } on Object catch (error) {
      // A failed query is this request's 500, not the isolate's end.
      stderr.writeln('$path: $error');
      result = Answer(500, plainTextUtf8, 'database error');
    }
    return Response(result.status,
        body: result.body,
        headers: {HttpHeaders.contentTypeHeader: result.contentType});
  };
}
