'use strict';
// node:http, no dependencies. Multi-core the Node way: node:cluster with CORES
// worker processes sharing the port (the primary accepts and hands
// connections round-robin to the workers, Node's default on Linux).

const cluster = require('node:cluster');
const fs = require('node:fs');
const http = require('node:http');
const http2 = require('node:http2');
const path = require('node:path');
const zlib = require('node:zlib');
const stack = require('./stack');

const port = Number(process.env.PORT);
// UNIX_SOCKET: a path to listen on instead of PORT (fairbench's
// address_family = "unix"); absent, PORT as always.
const socket = process.env.UNIX_SOCKET || '';
const scenario = process.env.SCENARIO;
const normalized = process.env.RESPONSE === 'normalized';
// `study`: the pure-node file server a comment on the 2012 post asked for, as
// node's documentation wrote one then (docs/servers/study-code.md); static
// and dynamic as `default`, since no publication ran node:http on them.
const study = process.env.RESPONSE === 'study';
const cores = Math.max(1, Number.parseInt(process.env.CORES || '1', 10) || 1);
// A suite's WORKERS (the study's one process on all CPUs) wins over CORES:
// that many processes serve (1: the primary alone, no cluster).
const workers = Math.max(1, Number.parseInt(process.env.WORKERS || '', 10) || cores);
const TEXT = 'text/plain; charset=utf-8';
// http/1.1: node:http. h2c and h2: node:http2 with its compatibility API
// (the same handlers); h2c with prior knowledge, h2 over TLS by ALPN with the
// run's certificate (TLS_CERT, TLS_KEY).
const protocol = process.env.PROTOCOL || 'http/1.1';
if (!['http/1.1', 'h2c', 'h2'].includes(protocol)) fail(`unknown PROTOCOL ${protocol}: expected http/1.1, h2c or h2`);
if (study && protocol !== 'http/1.1') fail(`the study's code (RESPONSE=study) serves HTTP/1.1 only, as published; PROTOCOL=${protocol}`);

if (study && socket) fail(`the study's code (RESPONSE=study) listens on PORT only, as published; UNIX_SOCKET=${socket}`);
if (!socket && (!Number.isInteger(port) || port <= 0)) fail(`PORT must be a port number, got ${process.env.PORT}`);
// A socket file left by a killed server would make listen fail (EADDRINUSE);
// the primary (or the one process) removes it before anyone listens.
if (socket && cluster.isPrimary) require('node:fs').rmSync(socket, { force: true });

if (workers > 1 && cluster.isPrimary) {
  for (let i = 0; i < workers; i++) cluster.fork();
  cluster.on('exit', (worker, code, signal) => {
    // fairbench stops a server by signalling its whole process group: a
    // worker ended by SIGTERM/SIGINT is that shutdown, not a crash.
    if (signal === 'SIGTERM' || signal === 'SIGINT') process.exit(0);
    // Any other death leaves fewer processes serving than asked; a benchmark
    // of the remainder would be silently wrong, so stop loudly instead.
    fail(`worker ${worker.process.pid} exited (${signal || `code ${code}`})`);
  });
  for (const sig of ['SIGTERM', 'SIGINT']) {
    process.on(sig, () => {
      cluster.removeAllListeners('exit');
      for (const w of Object.values(cluster.workers)) w.kill();
      process.exit(0);
    });
  }
} else {
  serve();
}

function serve() {
  const handler = handlerFor(scenario);
  const server = createServer((req, res) => {
    // removeHeader('Connection') is Node's documented way to send no
    // Connection/Keep-Alive header: the socket still persists for HTTP/1.1,
    // it is only the advertisement that is dropped.
    if (normalized) res.removeHeader('Connection');
    if (stack.route(req, res)) return;
    handler(req, res);
  });
  // No host: Node then binds the IPv6 any address dual-stack (IPv4-mapped),
  // falling back to 0.0.0.0 where IPv6 is missing.
  // Listen only once the database pool (if any) is open: a server that
  // answers before it can reach its database would fail its first requests.
  stack.open(workers).then((conns) => server.listen(socket || port, () => {
    console.log(`node-http ${process.pid}: ${scenario}/${process.env.RESPONSE} over ${protocol} on ${socket || `:${port}`} (${workers} process${workers > 1 ? 'es' : ''})${conns ? `, pg pool of ${conns}` : ''}`);
  }), (err) => fail(`database: ${err.message}`));
  server.on('error', (err) => fail(err.message));
}

function createServer(listener) {
  switch (protocol) {
    case 'h2c':
      return http2.createServer(listener);
    case 'h2':
      return http2.createSecureServer({
        cert: fs.readFileSync(process.env.TLS_CERT || fail('TLS_CERT is not set')),
        key: fs.readFileSync(process.env.TLS_KEY || fail('TLS_KEY is not set')),
      }, listener);
    default:
      return http.createServer(listener);
  }
}

function handlerFor(name) {
  switch (name) {
    case 'static': {
      const body = Buffer.from('Hello World!\n');
      return (req, res) => {
        if (req.method !== 'GET' || req.url !== '/') return notFound(res);
        // end(body) with no prior writeHead lets Node compute Content-Length;
        // writeHead(200, {...}) first (the nodejs.org example) would chunk.
        res.setHeader('Content-Type', TEXT);
        res.end(body);
      };
    }
    case 'dynamic':
      return (req, res) => {
        if (req.method !== 'GET' || req.url !== '/') return notFound(res);
        const iso = new Date().toISOString(); // 2026-11-21T23:12:00.123Z
        // Go formats to the second; the normalized body matches it (33 bytes).
        const time = normalized ? `${iso.slice(0, 19)}Z` : iso;
        res.setHeader('Content-Type', TEXT);
        res.end(`The time is ${time}\n`);
      };
    case 'file': {
      // node:http has no static-file facility: stat for Content-Length (else
      // the piped stream would be chunked), then stream from disk per request.
      const file = path.join(process.env.FILES_DIR || fail('FILES_DIR is not set'), 'hello-16k.txt');
      if (study) {
        // writeHead before the body, no length: node:http sends it chunked.
        return (req, res) => {
          if (req.method !== 'GET' || req.url !== '/hello-16k.txt') return notFound(res);
          res.writeHead(200, { 'Content-Type': 'text/plain' });
          fs.createReadStream(file).on('error', (e) => res.destroy(e)).pipe(res);
        };
      }
      return (req, res) => {
        if (req.method !== 'GET' || req.url !== '/hello-16k.txt') return notFound(res);
        fs.stat(file, (err, st) => {
          if (err) return serverError(res, err);
          res.setHeader('Content-Type', TEXT);
          res.setHeader('Content-Length', st.size);
          fs.createReadStream(file).on('error', (e) => res.destroy(e)).pipe(res);
        });
      };
    }
    case 'gzip': {
      // Read once; compressed anew for every request that accepts gzip, by
      // node:zlib at its default level, off the event loop.
      const text = fs.readFileSync(path.join(process.env.FILES_DIR || fail('FILES_DIR is not set'), 'gzip-text.txt'));
      return (req, res) => {
        if (req.method !== 'GET' || req.url !== '/gzip') return notFound(res);
        res.setHeader('Content-Type', TEXT);
        res.setHeader('Vary', 'Accept-Encoding');
        if (!String(req.headers['accept-encoding'] || '').includes('gzip')) return res.end(text);
        zlib.gzip(text, (err, body) => {
          if (err) return serverError(res, err);
          res.setHeader('Content-Encoding', 'gzip');
          res.end(body);
        });
      };
    }
    default:
      // json, db, queries, ...: stack.js answers them, under every scenario.
      if (stack.isStackScenario(name)) return (req, res) => notFound(res);
      return fail(`unknown SCENARIO ${name}`);
  }
}

function notFound(res) {
  res.statusCode = 404;
  res.end();
}

function serverError(res, err) {
  console.error(err.message);
  res.statusCode = 500;
  res.end();
}

function fail(message) {
  console.error(`node-http: ${message}`);
  process.exit(1);
}
