// The json, db, queries, fortunes and updates routes (issue 26,
// TechEmpower's shapes), framework-neutral: a server's routes call [answer]
// and write what it returns in the framework's own response type.
//
// The database side is package:postgres (pinned in pubspec.yaml) with its
// Pool, opened only when DATABASE_URL is set. Every postgres symbol here was
// read in the package's 3.0.0 source (api.toml lists each with its file);
// the code has never been compiled or run (no Dart SDK here): see
// docs/servers/dart.md.
import 'dart:convert';
import 'dart:io';
import 'dart:math';

import 'package:postgres/postgres.dart'
    show Endpoint, Pool, PoolSettings, Result, Session, SslMode, Sql;

const worldRows = 10000;
const maxQueries = 500;
const jsonType = 'application/json';
const htmlType = 'text/html; charset=utf-8';
const additionalFortune = 'Additional fortune added at request time.';
const stackPaths = {'/json', '/db', '/queries', '/fortunes', '/updates'};

/// One answer: the status, Content-Type and body, as text and as bytes.
class Answer {
  Answer(this.status, this.contentType, this.text) : body = utf8.encode(text);

  final int status;
  final String contentType;
  final String text;
  final List<int> body;
}

final _random = Random();
Pool? _pool;

/// Opens this isolate's share of the pool, ceil(DB_POOL / CORES)
/// connections, when DATABASE_URL is set.
Future<void> openStack(int cores) async {
  final url = Platform.environment['DATABASE_URL'] ?? '';
  if (url.isEmpty) return;
  final total = int.parse(Platform.environment['DB_POOL'] ?? '4');
  // package:postgres 3.0.0 takes no connection URL, only an Endpoint.
  final uri = Uri.parse(url);
  final user = uri.userInfo.split(':');
  final pool = Pool.withEndpoints(
    [
      Endpoint(
        host: uri.host,
        port: uri.hasPort ? uri.port : 5432,
        database: uri.path.substring(1),
        username: Uri.decodeComponent(user[0]),
        password: user.length > 1 ? Uri.decodeComponent(user[1]) : null,
      ),
    ],
    settings: PoolSettings(
      // Unset, the pool holds a single connection.
      maxConnectionCount: (total + cores - 1) ~/ cores,
      // Unset is SslMode.require, which refuses fairbench's server (no TLS).
      sslMode: SslMode.disable,
    ),
  );
  // One query proves the database answers before the server listens.
  await pool.execute('SELECT 1');
  _pool = pool;
}

/// The answer for [path] (one of [stackPaths]) with the request's query
/// parameters.
Future<Answer> answer(String path, Map<String, String> query) async {
  if (path == '/json') {
    return Answer(200, jsonType, jsonEncode({'message': 'Hello, World!'}));
  }
  final pool = _pool;
  if (pool == null) {
    return Answer(500, 'text/plain; charset=utf-8', 'DATABASE_URL is not set');
  }
  switch (path) {
    case '/db':
      final id = int.tryParse(query['id'] ?? '');
      if (id == null || id < 1 || id > worldRows) {
        return Answer(400, 'text/plain; charset=utf-8',
            'id must be an integer in 1..=10000');
      }
      final rows = await _worlds(pool, [id]);
      return Answer(200, jsonType, jsonEncode(rows.first));
    case '/queries':
      final n = queryCount(query['queries']);
      final ids = [for (var i = 0; i < n; i++) _randomId()];
      return Answer(200, jsonType, jsonEncode(await _worlds(pool, ids)));
    case '/updates':
      return Answer(200, jsonType,
          jsonEncode(await _updates(pool, queryCount(query['queries']))));
    default:
      return Answer(200, htmlType, await _fortunes(pool));
  }
}

/// TechEmpower's rule: missing or not an integer is 1, clamped to 1..=500.
int queryCount(String? raw) {
  final n = int.tryParse(raw ?? '') ?? 1;
  return n < 1 ? 1 : (n > maxQueries ? maxQueries : n);
}

int _randomId() => _random.nextInt(worldRows) + 1;

// Untyped @names: the package sends the ints as text with no type, and the
// server takes the column's.
final _selectWorld = Sql.named('SELECT id, randomnumber FROM world WHERE id = @id');

/// One row per id, one query after another on one pooled connection.
Future<List<Map<String, int>>> _worlds(Pool pool, List<int> ids) =>
    pool.run((Session session) async {
      final rows = <Map<String, int>>[];
      for (final id in ids) {
        final Result result =
            await session.execute(_selectWorld, parameters: {'id': id});
        final List<Object?> row = result.first;
        rows.add({'id': row[0] as int, 'randomNumber': row[1] as int});
      }
      return rows;
    });

Future<List<Map<String, int>>> _updates(Pool pool, int n) async {
  // Distinct ids: a row drawn twice would get two new numbers of which only
  // one could be stored, and the answer would not match the table.
  final ids = <int>{};
  while (ids.length < n) {
    ids.add(_randomId());
  }
  final rows = await _worlds(pool, ids.toList());
  for (final row in rows) {
    row['randomNumber'] = _randomId();
  }
  final sorted = [...rows]
    ..sort((Map<String, int> a, Map<String, int> b) =>
        a['id']!.compareTo(b['id']!));
  // One transaction, rows in id order so that concurrent ones cannot
  // deadlock; one UPDATE per row (the array form needs typed parameters).
  await pool.runTx((Session session) async {
    for (final row in sorted) {
      await session.execute(
          Sql.named('UPDATE world SET randomnumber = @r WHERE id = @id'),
          parameters: {'r': row['randomNumber'], 'id': row['id']});
    }
  });
  return rows;
}

Future<String> _fortunes(Pool pool) async {
  final Result result =
      await pool.execute(Sql.named('SELECT id, message FROM fortune'));
  final fortunes = <MapEntry<int, String>>[
    for (final List<Object?> row in result)
      MapEntry(row[0] as int, row[1] as String),
    const MapEntry(0, additionalFortune),
  ]..sort((MapEntry<int, String> a, MapEntry<int, String> b) =>
      a.value.compareTo(b.value));
  // dart:convert's HtmlEscape, the standard library's escaper: & < > " ' /.
  const escape = HtmlEscape();
  final page = StringBuffer('<!DOCTYPE html><html><head><title>Fortunes</title>'
      '</head><body><table><tr><th>id</th><th>message</th></tr>');
  for (final f in fortunes) {
    page.write('<tr><td>${f.key}</td><td>${escape.convert(f.value)}</td></tr>');
  }
  page.write('</table></body></html>');
  return page.toString();
}
