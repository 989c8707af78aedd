// The application channel. Conduit finds it through dart:mirrors at run time
// (conduit_runtime's MirrorContext), which is why it lives in lib/ like a
// `conduit create` project and why only JIT modes can run it.
import 'dart:io';

import 'package:conduit_core/conduit_core.dart'
    show ApplicationChannel, Controller, FileController, Response, Router;

import 'fairbench.dart';

class FairbenchChannel extends ApplicationChannel {
  late Config config;

  @override
  Future prepare() async {
    // ApplicationOptions.context is how Conduit hands values to the channel
    // of every isolate it spawns.
    config = Config.fromMap(options!.context);
  }

  @override
  Controller get entryPoint {
    final router = Router();
    if (config.normalized) {
      addNormalizedRoutes(router, config);
    } else {
      addDefaultRoutes(router, config);
    }
    return router;
  }

  @override
  void willStartReceivingRequests() {
    if (config.normalized) {
      // Called right after Conduit bound the HttpServer and set its Server
      // header to `conduit/<isolate number>`, before any request is read.
      // dart:io's defaults add Content-Type, X-Frame-Options,
      // X-Content-Type-Options and X-XSS-Protection.
      server.server.defaultResponseHeaders.clear();
      server.server.serverHeader = null;
    }
  }
}

/// What a Conduit user writes for plain text: a Response with
/// ContentType.text (the default content type is JSON, which would encode the
/// String as a JSON string). Conduit encodes the body and sets Content-Length;
/// no Date. `file` is Conduit's FileController.
void addDefaultRoutes(Router router, Config config) {
  switch (config.scenario) {
    case 'dynamic':
      router.route('/').linkFunction((request) async =>
          Response.ok(dynamicBody(secondPrecision: false))
            ..contentType = ContentType.text);
      break;
    case 'file':
      router.route('/*').link(() => FileController(config.filesDir));
      break;
    default:
      router.route('/').linkFunction((request) async =>
          Response.ok(staticBody)..contentType = ContentType.text);
  }
}

/// Go's shape: the same Responses plus a Date header. A FileController body
/// is a stream, which Conduit always sends chunked with Last-Modified, so the
/// normalized file is read into bytes, which Conduit sends with a length.
void addNormalizedRoutes(Router router, Config config) {
  final plain = ContentType.parse(plainTextUtf8);
  switch (config.scenario) {
    case 'dynamic':
      router.route('/').linkFunction((request) async =>
          Response.ok(dynamicBody(secondPrecision: true), headers: dateHeader())
            ..contentType = plain);
      break;
    case 'file':
      final file = File(config.file);
      router.route(filePath).linkFunction((request) async =>
          Response.ok(await file.readAsBytes(), headers: dateHeader())
            ..contentType = plain
            ..encodeBody = false);
      break;
    default:
      router.route('/').linkFunction((request) async =>
          Response.ok(staticBody, headers: dateHeader())..contentType = plain);
  }
}

Map<String, dynamic> dateHeader() =>
    {HttpHeaders.dateHeader: HttpDate.format(DateTime.now().toUtc())};
