// dart:io HttpServer and no framework: what every Dart framework builds on.
import 'dart:convert';
import 'dart:io';

import 'package:fairbench_dart_io/fairbench.dart';
import 'package:fairbench_dart_io/stack.dart';
import 'package:fairbench_dart_io/post2012.dart';
import 'package:fairbench_dart_io/study.dart';

// RESPONSE=study runs the code the study published instead (lib/study.dart),
// RESPONSE=post2012-* one of the 2012 post's handlers (lib/post2012.dart)
// for the file scenario; the post had no other, so the others are served
// as `default` serves them.
Future<void> main(List<String> args) {
  final post = post2012Requested;
  if (post != null && Platform.environment['SCENARIO'] == 'file') {
    return servePost2012(post);
  }
  return studyRequested ? serveStudy() : runServer(args, start);
}

Future<Stop> start(Config config) async {
  await openStack(config.cores);
  final server = await HttpServer.bind(
    InternetAddress.anyIPv6,
    config.port,
    shared: true,
  );
  if (config.normalized) {
    // Every response starts as a copy of these: Content-Type plus the
    // X-Frame-Options, X-Content-Type-Options and X-XSS-Protection that Go
    // does not send.
    server.defaultResponseHeaders.clear();
    // Already dart:io's default; set so that the shape cannot drift.
    server.serverHeader = null;
    server.listen(withStack(normalizedHandler(config), normalized: true));
  } else {
    server.listen(withStack(defaultHandler(config), normalized: false));
  }
  return () => server.close(force: true);
}

/// The handlers a dart:io user writes: write the body and close. dart:io then
/// sends its default headers, no Date, and chunked framing for any body.
void Function(HttpRequest) defaultHandler(Config config) {
  switch (config.scenario) {
    case 'dynamic':
      return (request) {
        request.response
          ..write(dynamicBody(secondPrecision: false))
          ..close();
      };
    case 'file':
      final file = File(config.file);
      return (request) {
        file.openRead().pipe(request.response);
      };
    default:
      return (request) {
        request.response
          ..write(staticBody)
          ..close();
      };
  }
}

/// Go's shape: an explicit Content-Length (dart:io otherwise chunks), the
/// Content-Type, and a Date, which dart:io never adds by itself.
void Function(HttpRequest) normalizedHandler(Config config) {
  switch (config.scenario) {
    case 'dynamic':
      return (request) {
        final body = utf8.encode(dynamicBody(secondPrecision: true));
        request.response.headers
          ..set(HttpHeaders.contentTypeHeader, plainTextUtf8)
          ..contentLength = body.length
          ..date = DateTime.now();
        request.response
          ..add(body)
          ..close();
      };
    case 'file':
      final file = File(config.file);
      return (request) async {
        final length = await file.length();
        request.response.headers
          ..set(HttpHeaders.contentTypeHeader, plainTextUtf8)
          ..contentLength = length
          ..date = DateTime.now();
        await file.openRead().pipe(request.response);
      };
    default:
      final body = utf8.encode(staticBody);
      return (request) {
        request.response.headers
          ..set(HttpHeaders.contentTypeHeader, plainTextUtf8)
          ..contentLength = body.length
          ..date = DateTime.now();
        request.response
          ..add(body)
          ..close();
      };
  }
}

/// The json, db, queries, fortunes and updates routes (lib/stack.dart) in
/// front of the scenario's handler, under every scenario. `default` writes
/// the body as a dart:io user does (chunked, no Date); `normalized` adds
/// Content-Length and Date, as for the other scenarios.
void Function(HttpRequest) withStack(void Function(HttpRequest) handler,
    {required bool normalized}) {
  return (request) async {
    final path = request.uri.path;
    if (request.method != 'GET' || !stackPaths.contains(path)) {
      handler(request);
      return;
    }
    Answer result;
    try {
      result = await answer(path, request.uri.queryParameters);
    } on Object catch (error) {
      // A failed query is this request's 500, not the isolate's end.
      stderr.writeln('$path: $error');
      result = Answer(500, plainTextUtf8, 'database error');
    }
    request.response
      ..statusCode = result.status
      ..headers.set(HttpHeaders.contentTypeHeader, result.contentType);
    if (normalized) {
      request.response.headers
        ..contentLength = result.body.length
        ..date = DateTime.now();
    }
    request.response
      ..add(result.body)
      ..close();
  };
}
