// `GET /`: the route file a dart_frog project has, routes/index.dart, and the
// onRequest function `dart_frog build` calls for it.
import 'dart:io';

import 'package:dart_frog/dart_frog.dart' show RequestContext, Response;
import 'package:fairbench_dart_frog/fairbench.dart';
import 'package:fairbench_dart_frog/served.dart';

Response onRequest(RequestContext context) {
  final config = served;
  if (config.normalized) {
    // dart:io's default Content-Type is cleared in main.dart, so the route
    // sets it, as Go's net/http does.
    return Response(body: normalizedBody(config), headers: plainHeaders);
  }
  // An ASCII String body gets a Content-Length from shelf and no
  // Content-Type, so dart:io's default Content-Type applies; shelf_io adds
  // Date and X-Powered-By.
  return Response(body: defaultBody(config));
}

const plainHeaders = {HttpHeaders.contentTypeHeader: plainTextUtf8};

String defaultBody(Config config) => config.scenario == 'dynamic'
    ? dynamicBody(secondPrecision: false)
    : staticBody;

String normalizedBody(Config config) => config.scenario == 'dynamic'
    ? dynamicBody(secondPrecision: true)
    : staticBody;
