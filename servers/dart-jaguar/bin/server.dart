// jaguar 3: route handlers return values or Response objects.
import 'dart:convert';
import 'dart:io';

import 'package:fairbench_dart_jaguar/fairbench.dart';
import 'package:jaguar/jaguar.dart'
    show Context, Jaguar, StreamResponse, StringResponse;

Future<void> main(List<String> args) => runServer(args, start);

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
/// Content-Length and Date and drop dart:io's default headers.
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

/// What dart:io's HttpServer.defaultResponseHeaders adds besides
/// Content-Type. Jaguar keeps its HttpServer private, so the defaults cannot
/// be cleared once at the server; they are removed from each response.
const ioSecurityHeaders = [
  'x-frame-options',
  'x-content-type-options',
  'x-xss-protection',
];

void normalizeIoHeaders(HttpResponse resp, int length) {
  for (final name in ioSecurityHeaders) {
    resp.headers.removeAll(name);
  }
  resp.headers
    ..contentLength = length
    ..date = DateTime.now();
}

class PlainResponse extends StringResponse {
  PlainResponse(String body)
      : super(
          body: body,
          headers: {HttpHeaders.contentTypeHeader: plainTextUtf8},
        );

  @override
  void writeResponse(HttpResponse resp) {
    final bytes = utf8.encode(body!);
    normalizeIoHeaders(resp, bytes.length);
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
    normalizeIoHeaders(resp, length);
    await super.writeResponse(resp);
  }
}
