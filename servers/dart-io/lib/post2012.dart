// The 2012 static-file post's three Dart handlers (docs/study.md), written
// again on today's dart:io, since the pre-1.0 HttpServer API of 2012 is
// gone (which build and which calls the post used are not recorded here). Each serves the file scenario's
// file from FILES_DIR on one isolate, as the post's server did; they differ
// only where the post's versions differed:
//   post2012-exists   a synchronous File.existsSync() in the route matcher
//                     and again in the responder;
//   post2012-session  the file's path kept in the request's session (ab
//                     keeps no cookie: a new session, with its random id,
//                     per request, as the post describes);
//   post2012-local    the path kept in a local variable of the responder.
// What the post sent beyond the body is unknown: the answers are graded
// like `default`. Never compiled or run here (no Dart SDK).
import 'dart:io';

/// The variant fairbench asked for, if it is one of the post's.
String? get post2012Requested {
  final r = Platform.environment['RESPONSE'];
  return r != null && r.startsWith('post2012-') ? r : null;
}

Future<void> servePost2012(String variant) async {
  final env = Platform.environment;
  final root = env['FILES_DIR']!;
  final server =
      await HttpServer.bind(InternetAddress.anyIPv6, int.parse(env['PORT']!));
  switch (variant) {
    case 'post2012-exists':
      server.listen((request) {
        // The matcher: does a file answer this path?
        final matches = File('$root${request.uri.path}').existsSync();
        if (!matches) return notFound(request);
        // The responder checks again before it opens the file.
        final file = File('$root${request.uri.path}');
        if (!file.existsSync()) return notFound(request);
        send(request, file);
      });
    case 'post2012-session':
      server.listen((request) {
        // The path travels in the session between matcher and responder.
        request.session['path'] = '$root${request.uri.path}';
        final file = File(request.session['path'] as String);
        if (!file.existsSync()) return notFound(request);
        send(request, file);
      });
    case 'post2012-local':
      server.listen((request) {
        final path = '$root${request.uri.path}';
        final file = File(path);
        if (!file.existsSync()) return notFound(request);
        send(request, file);
      });
    default:
      stderr.writeln('RESPONSE=$variant: not one of the 2012 post\'s handlers');
      exit(2);
  }
}

void send(HttpRequest request, File file) {
  request.response.headers.contentType = ContentType.text;
  file.openRead().pipe(request.response);
}

void notFound(HttpRequest request) {
  request.response.statusCode = HttpStatus.notFound;
  request.response.close();
}
