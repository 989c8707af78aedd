'use strict';
// express routes for json, db, queries, fortunes and updates, registered
// under every SCENARIO as the contract asks; the database work is db.js.
// `default` answers JSON with res.json (express's own: it adds
// `; charset=utf-8` and, with etag on, an ETag); `normalized` sends the bytes
// with Go's bare `application/json`.

const db = require('./db');

function register(app, normalized) {
  const sendJson = normalized
    ? (res, value) => {
      // res.type/res.set would append `; charset=utf-8` (mime-types'
      // contentType); node's own setHeader keeps the bare type.
      res.setHeader('Content-Type', db.JSON_TYPE);
      res.send(Buffer.from(JSON.stringify(value)));
    }
    : (res, value) => res.json(value);
  app.get('/json', (req, res) => sendJson(res, { message: 'Hello, World!' }));
  const withDb = (handler) => (req, res, next) => {
    if (!db.available()) return res.status(500).type('text/plain').send('DATABASE_URL is not set');
    const params = new URLSearchParams(req.originalUrl.split('?')[1] || '');
    return handler(params, res).catch((err) => {
      console.error(`${req.path}: ${err.message}`);
      res.status(500).type('text/plain').send('database error');
    }).catch(next);
  };
  app.get('/db', withDb(async (params, res) => {
    const id = db.worldId(params);
    if (id === null) return res.status(400).type('text/plain').send('id must be an integer in 1..=10000');
    return sendJson(res, await db.world(id));
  }));
  app.get('/queries', withDb(async (params, res) => sendJson(res, await db.queries(db.queryCount(params)))));
  app.get('/updates', withDb(async (params, res) => sendJson(res, await db.updates(db.queryCount(params)))));
  // res.type('html') is express's text/html; send() adds `; charset=utf-8`.
  app.get('/fortunes', withDb(async (params, res) => res.type('html').send(await db.fortunesPage())));
}

module.exports = { register, open: db.open, isStackScenario: db.isStackScenario };
