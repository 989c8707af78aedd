'use strict';
// node:http routes for json, db, queries, fortunes and updates, answered
// under every SCENARIO as the contract asks; the database work is db.js.

const db = require('./db');

/** Answers req if it is one of the five routes; false otherwise. */
function route(req, res) {
  if (req.method !== 'GET') return false;
  const q = req.url.indexOf('?');
  const path = q < 0 ? req.url : req.url.slice(0, q);
  if (!db.ROUTES.has(path)) return false;
  if (path === '/json') {
    send(res, 200, db.JSON_TYPE, db.HELLO);
    return true;
  }
  if (!db.available()) {
    send(res, 500, 'text/plain; charset=utf-8', 'DATABASE_URL is not set');
    return true;
  }
  const params = new URLSearchParams(q < 0 ? '' : req.url.slice(q + 1));
  let work;
  switch (path) {
    case '/db': {
      const id = db.worldId(params);
      if (id === null) {
        send(res, 400, 'text/plain; charset=utf-8', 'id must be an integer in 1..=10000');
        return true;
      }
      work = db.world(id).then((row) => [db.JSON_TYPE, JSON.stringify(row)]);
      break;
    }
    case '/queries':
      work = db.queries(db.queryCount(params)).then((rows) => [db.JSON_TYPE, JSON.stringify(rows)]);
      break;
    case '/updates':
      work = db.updates(db.queryCount(params)).then((rows) => [db.JSON_TYPE, JSON.stringify(rows)]);
      break;
    default:
      work = db.fortunesPage().then((page) => [db.HTML_TYPE, page]);
  }
  work.then(([type, body]) => send(res, 200, type, body), (err) => {
    console.error(`${path}: ${err.message}`);
    send(res, 500, 'text/plain; charset=utf-8', 'database error');
  });
  return true;
}

// end(body) with no prior writeHead lets Node compute Content-Length.
function send(res, status, type, body) {
  res.statusCode = status;
  res.setHeader('Content-Type', type);
  res.end(body);
}

module.exports = { route, open: db.open, isStackScenario: db.isStackScenario };
