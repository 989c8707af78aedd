// alfred: express-like routing over dart:io HttpRequest/HttpResponse.
import 'dart:convert';
import 'dart:io';

import 'package:alfred/alfred.dart' show Alfred, LogType;
import 'package:fairbench_dart_alfred/fairbench.dart';
import 'package:fairbench_dart_alfred/stack.dart';
import 'package:fairbench_dart_alfred/study.dart';

// RESPONSE=study runs the code the study published instead (lib/study.dart).
Future<void> main(List<String> args) =>
    studyRequested ? serveStudy() : runServer(args, start);

Future<Stop> start(Config config) async {
  await openStack(config.cores);
  final Alfred app;
  if (config.normalized) {
    // alfred's default, LogType.info, prints a line per request to stdout:
    // work Go's net/http does not do, so the normalized variant logs errors
    // only.
    app = Alfred(logLevel: LogType.error);
    addNormalizedRoutes(app, config);
  } else {
    // Out of the box: a line per request on stdout, which fairbench writes to
    // the case's log file.
    app = Alfred();
    addDefaultRoutes(app, config);
  }
  addStackRoutes(app, normalized: config.normalized);
  // listen() binds with shared: true by default and sets idleTimeout to 1 s.
  final server = await app.listen(config.port, InternetAddress.anyIPv6, true);
  if (config.normalized) {
    // alfred leaves dart:io's defaults on every response: Content-Type,
    // X-Frame-Options, X-Content-Type-Options, X-XSS-Protection.
    server.defaultResponseHeaders.clear();
  }
  return () => app.close();
}

/// What an alfred user writes: return a String or a File and let alfred's
/// type handlers write it (chunked, no Date).
void addDefaultRoutes(Alfred app, Config config) {
  switch (config.scenario) {
    case 'dynamic':
      app.get('/', (req, res) => dynamicBody(secondPrecision: false));
      break;
    case 'file':
      final file = File(config.file);
      app.get(filePath, (req, res) => file);
      break;
    default:
      app.get('/', (req, res) => staticBody);
  }
}

/// Go's shape: Content-Type, Content-Length (else chunked) and Date set on
/// the dart:io response before alfred's String handler writes the body.
void addNormalizedRoutes(Alfred app, Config config) {
  switch (config.scenario) {
    case 'dynamic':
      app.get('/', (req, res) {
        final body = dynamicBody(secondPrecision: true);
        plainHeaders(res, utf8.encode(body).length);
        return body;
      });
      break;
    case 'file':
      // alfred's File handler replaces a text/plain Content-Type with its own
      // (no charset), so the file is streamed here instead.
      final file = File(config.file);
      app.get(filePath, (req, res) async {
        plainHeaders(res, await file.length());
        await file.openRead().pipe(res);
      });
      break;
    default:
      final length = utf8.encode(staticBody).length;
      app.get('/', (req, res) {
        plainHeaders(res, length);
        return staticBody;
      });
  }
}

void plainHeaders(HttpResponse res, int length) {
  res.headers
    ..set(HttpHeaders.contentTypeHeader, plainTextUtf8)
    ..contentLength = length
    ..date = DateTime.now();
}

/// The json, db, queries, fortunes and updates routes (lib/stack.dart),
/// under every scenario: the status and Content-Type set on the response,
/// the body returned as a String for alfred's String handler to write
/// (`normalized` also sets Content-Length and Date, as for `/`).
void addStackRoutes(Alfred app, {required bool normalized}) {
  for (final path in stackPaths) {
    app.get(path, (HttpRequest req, HttpResponse res) async {
      Answer result;
      try {
        result = await answer(path, req.uri.queryParameters);
      } on Object catch (error) {
        // A failed query is this request's 500, not the isolate's end.
        stderr.writeln('$path: $error');
        result = Answer(500, plainTextUtf8, 'database error');
      }
      res
        ..statusCode = result.status
        ..headers.set(HttpHeaders.contentTypeHeader, result.contentType);
      if (normalized) {
        res.headers
          ..contentLength = result.body.length
          ..date = DateTime.now();
      }
      return result.text;
    });
  }
}
