'use strict';
// express, multi-core through node:cluster (express has no multi-core mode of
// its own): CORES worker processes share the port, the primary hands
// connections round-robin to them (Node's default on Linux).

const cluster = require('node:cluster');
const express = require('express');
const fs = require('node:fs');
const path = require('node:path');
const zlib = require('node:zlib');
const stack = require('./stack');

const port = Number(process.env.PORT);
const scenario = process.env.SCENARIO;
const normalized = process.env.RESPONSE === 'normalized';
const cores = Math.max(1, Number.parseInt(process.env.CORES || '1', 10) || 1);

if (!Number.isInteger(port) || port <= 0) fail(`PORT must be a port number, got ${process.env.PORT}`);

if (cores > 1 && cluster.isPrimary) {
  for (let i = 0; i < cores; i++) cluster.fork();
  cluster.on('exit', (worker, code, signal) => {
    // fairbench stops a server by signalling its whole process group: a
    // worker ended by SIGTERM/SIGINT is that shutdown, not a crash.
    if (signal === 'SIGTERM' || signal === 'SIGINT') process.exit(0);
    // Any other death leaves fewer than CORES processes serving; a benchmark
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
  const app = express();
  if (normalized) {
    app.disable('x-powered-by');
    app.set('etag', false);
    // Node's documented way to send no Connection/Keep-Alive header; the
    // HTTP/1.1 connection still persists.
    app.use((req, res, next) => {
      res.removeHeader('Connection');
      next();
    });
  }

  switch (scenario) {
    case 'static':
      // res.type('text/plain') is what express users write for text; express
      // appends `; charset=utf-8` itself.
      app.get('/', (req, res) => {
        res.type('text/plain').send('Hello World!\n');
      });
      break;
    case 'dynamic':
      app.get('/', (req, res) => {
        const iso = new Date().toISOString(); // 2026-11-21T23:12:00.123Z
        // Go formats to the second; the normalized body matches it (33 bytes).
        const time = normalized ? `${iso.slice(0, 19)}Z` : iso;
        res.type('text/plain').send(`The time is ${time}\n`);
      });
      break;
    case 'file': {
      const dir = process.env.FILES_DIR || fail('FILES_DIR is not set');
      // The framework's own static-file facility (serve-static/send); the
      // normalized variant switches off each validator it would add.
      const options = normalized
        ? { etag: false, lastModified: false, acceptRanges: false, cacheControl: false }
        : {};
      app.use(express.static(dir, options));
      break;
    }
    case 'gzip': {
      // node:zlib as in node-http (the `compression` middleware is not
      // installed, and it would stream the body chunked): read once,
      // compressed anew for every request that accepts gzip.
      const dir = process.env.FILES_DIR || fail('FILES_DIR is not set');
      const text = fs.readFileSync(path.join(dir, 'gzip-text.txt'));
      app.get('/gzip', (req, res, next) => {
        res.type('text/plain').vary('Accept-Encoding');
        if (!req.acceptsEncodings('gzip')) return res.send(text);
        zlib.gzip(text, (err, body) => {
          if (err) return next(err);
          res.set('Content-Encoding', 'gzip').send(body);
        });
      });
      break;
    }
    default:
      // json, db, queries, ...: registered below, under every scenario.
      if (!stack.isStackScenario(scenario)) fail(`unknown SCENARIO ${scenario}`);
  }
  // json, db, queries, fortunes, updates: under every scenario (stack.js).
  stack.register(app, normalized);

  // No host: Node binds the IPv6 any address dual-stack (IPv4-mapped),
  // falling back to 0.0.0.0 where IPv6 is missing.
  // Listen only once the database pool (if any) is open: a server that
  // answers before it can reach its database would fail its first requests.
  stack.open(cores).then((conns) => {
    const server = app.listen(port, (err) => {
      if (err) fail(err.message);
      console.log(`node-express ${process.pid}: ${scenario}/${process.env.RESPONSE} on :${port} (${cores} process${cores > 1 ? 'es' : ''})${conns ? `, pg pool of ${conns}` : ''}`);
    });
    server.on('error', (err) => fail(err.message));
  }, (err) => fail(`database: ${err.message}`));
}

function fail(message) {
  console.error(`node-express: ${message}`);
  process.exit(1);
}
