// jaguar 3: route handlers return values or Response objects.
import 'dart:convert';
import 'dart:io';

import 'package:fairbench_dart_jaguar/fairbench.dart';
import 'package:fairbench_dart_jaguar/study.dart';
import 'package:jaguar/jaguar.dart'
    show Context, Jaguar, StreamResponse, StringResponse;

// RESPONSE=study runs the code the study published instead (lib/study.dart).
Future<void> main(List<String> args) =>
    studyRequested ? serveStudy() : runServer(args, start);

Future<Stop> start(Config config) async {
  // multiThread is passed to HttpServer.bind as `shared`, which lets every
  // isolate bind the port. address '::' is dual-stack (v6Only: false).
  final server = Jaguar(
    address: InternetAddress.anyIPv6.address,
    port: config.port,
    multiThread: true,
  );
  if (config.normalized) {
    addNormalizedRoutes(server, config);
  } else {
    addDefaultRoutes(server, config);
  }
  await server.serve();
  if (config.normalized) {
    // dart:io's defaults: Content-Type, X-Frame-Options,
    // X-Content-Type-Options, X-XSS-Protection. jaguar exposes its
    // HttpServers through `servers` (lib/serve/server.dart, 3.1.4). serve()
    // starts listening before it returns, but a request needs a socket event,
    // which cannot run before this continuation (a microtask), so no response
    // is ever made with the defaults.
    for (final httpServer in server.servers) {
      httpServer.defaultResponseHeaders.clear();
    }
  }
  return server.close;
}

/// What a jaguar user writes: return a String (jaguar sets Content-Type
/// text/plain; charset=utf-8) or use the staticFile facility. Bodies are
/// written without a length, so dart:io chunks them; no Date.
void addDefaultRoutes(Jaguar server, Config config) {
  switch (config.scenario) {
    case 'dynamic':
      server.get('/', (Context ctx) => dynamicBody(secondPrecision: false));
      break;
    case 'file':
      server.staticFile(filePath, config.file);
      break;
    default:
      server.get('/', (Context ctx) => staticBody);
  }
}

/// Go's shape through jaguar's own Response types: the subclasses below set
/// Content-Length (jaguar writes bodies without one, so dart:io would chunk)
/// and Date (neither jaguar nor dart:io sends one).
void addNormalizedRoutes(Jaguar server, Config config) {
  switch (config.scenario) {
    case 'dynamic':
      server.get('/',
          (Context ctx) => PlainResponse(dynamicBody(secondPrecision: true)));
      break;
    case 'file':
      final file = File(config.file);
      server.get(filePath,
          (Context ctx) async => PlainFileResponse(file, await file.length()));
      break;
    default:
      server.get('/', (Context ctx) => PlainResponse(staticBody));
  }
}

void setLengthAndDate(HttpResponse resp, int length) {
  resp.headers
    ..contentLength = length
    ..date = DateTime.now();
}

class PlainResponse extends StringResponse {
  PlainResponse(String text)
      : super(
          body: text,
          headers: {HttpHeaders.contentTypeHeader: plainTextUtf8},
        );

  @override
  void writeResponse(HttpResponse resp) {
    final bytes = utf8.encode(body!);
    setLengthAndDate(resp, bytes.length);
    writeAllButBody(resp);
    resp.add(bytes);
  }
}

class PlainFileResponse extends StreamResponse {
  PlainFileResponse(File file, this.length)
      : super(
          body: file.openRead(),
          headers: {HttpHeaders.contentTypeHeader: plainTextUtf8},
        );

  final int length;

  @override
  Future<void> writeResponse(HttpResponse resp) async {
    setLengthAndDate(resp, length);
    await super.writeResponse(resp);
  }
}
