'use strict';
// The database side of the json, db, queries, fortunes and updates routes
// (scenarios/<name>.toml, TechEmpower's shapes): `pg`'s Pool, opened only when
// DATABASE_URL is set. The same file is in node-http and node-express.
//
// DB_POOL is the whole server's connection count: each node:cluster worker
// opens its share, ceil(DB_POOL / CORES).

// pg and escape-html are loaded by open(), so the static, dynamic and file
// scenarios run exactly the code they ran before these routes existed.
let escapeHtml = null;

const WORLD_ROWS = 10000;
const MAX_QUERIES = 500;
const ADDITIONAL_FORTUNE = 'Additional fortune added at request time.';
// Named queries: pg prepares each once per connection.
const SELECT_WORLD = { name: 'world', text: 'SELECT id, randomnumber FROM world WHERE id = $1' };
const SELECT_FORTUNES = { name: 'fortunes', text: 'SELECT id, message FROM fortune' };
// One statement for the whole batch; ids are sorted so two concurrent batches
// lock rows in the same order and cannot deadlock.
const UPDATE_WORLDS = {
  name: 'updates',
  text: 'UPDATE world SET randomnumber = v.r FROM '
    + '(SELECT unnest($1::int[]) AS id, unnest($2::int[]) AS r) AS v WHERE world.id = v.id',
};
const JSON_TYPE = 'application/json';
const HTML_TYPE = 'text/html; charset=utf-8';
const HELLO = JSON.stringify({ message: 'Hello, World!' });

let pool = null;

/** Opens this process's pool (DATABASE_URL set), with every connection made
 * before the first request so connecting is not timed in a run. */
async function open(cores) {
  const url = process.env.DATABASE_URL;
  if (!url) return;
  const total = Number.parseInt(process.env.DB_POOL || '4', 10);
  if (!Number.isInteger(total) || total < 1) throw new Error(`DB_POOL must be a positive integer, got ${process.env.DB_POOL}`);
  const max = Math.ceil(total / cores);
  const { Pool } = require('pg');
  escapeHtml = require('escape-html');
  pool = new Pool({ connectionString: url, max, idleTimeoutMillis: 0 });
  // An idle connection that breaks (the database restarted) is pg's
  // 'error' event; unhandled it would end the process mid-run.
  pool.on('error', (err) => console.error(`database: idle connection: ${err.message}`));
  const held = [];
  for (let i = 0; i < max; i++) held.push(await pool.connect());
  for (const c of held) c.release();
  return max;
}

function available() {
  return pool !== null;
}

/** The `id` query parameter if it is an integer in 1..=10000, else null. */
function worldId(params) {
  const raw = params.get('id');
  if (raw === null || !/^[0-9]+$/.test(raw)) return null;
  const id = Number(raw);
  return id >= 1 && id <= WORLD_ROWS ? id : null;
}

/** TechEmpower's rule: missing or not an integer is 1, clamped to 1..=500. */
function queryCount(params) {
  const n = Number.parseInt(params.get('queries'), 10);
  if (!Number.isInteger(n) || n < 1) return 1;
  return Math.min(n, MAX_QUERIES);
}

function randomId() {
  return 1 + Math.floor(Math.random() * WORLD_ROWS);
}

async function world(id) {
  const { rows } = await pool.query({ ...SELECT_WORLD, values: [id] });
  return { id: rows[0].id, randomNumber: rows[0].randomnumber };
}

/** One row per id, one query after another on one pooled connection: the N
 * round trips are what the queries scenario measures. */
async function worlds(ids) {
  const client = await pool.connect();
  try {
    const out = [];
    for (const id of ids) {
      const { rows } = await client.query({ ...SELECT_WORLD, values: [id] });
      out.push({ id: rows[0].id, randomNumber: rows[0].randomnumber });
    }
    return out;
  } finally {
    client.release();
  }
}

async function queries(n) {
  const ids = [];
  for (let i = 0; i < n; i++) ids.push(randomId());
  return worlds(ids);
}

async function updates(n) {
  // Distinct ids: a row drawn twice would get two new numbers of which only
  // one could be stored, and the answer would not match the table.
  const ids = new Set();
  while (ids.size < n) ids.add(randomId());
  const rows = await worlds([...ids]);
  for (const row of rows) row.randomNumber = randomId();
  const sorted = [...rows].sort((a, b) => a.id - b.id);
  await pool.query({ ...UPDATE_WORLDS, values: [sorted.map((r) => r.id), sorted.map((r) => r.randomNumber)] });
  return rows;
}

async function fortunesPage() {
  const { rows } = await pool.query(SELECT_FORTUNES);
  rows.push({ id: 0, message: ADDITIONAL_FORTUNE });
  // Code-unit order, as every other server sorts (not localeCompare).
  rows.sort((a, b) => (a.message < b.message ? -1 : a.message > b.message ? 1 : 0));
  let page = '<!DOCTYPE html><html><head><title>Fortunes</title></head><body><table><tr><th>id</th><th>message</th></tr>';
  for (const f of rows) page += `<tr><td>${f.id}</td><td>${escapeHtml(f.message)}</td></tr>`;
  return `${page}</table></body></html>`;
}

/** json, db, queries, fortunes, updates, and the variants of them that
 * fairbench names `<route>-<detail>` (queries-1). */
function isStackScenario(name) {
  return ['json', 'db', 'queries', 'fortunes', 'updates'].includes(String(name).split('-')[0]);
}

module.exports = {
  open, isStackScenario, available, worldId, queryCount, world, queries, updates, fortunesPage,
  HELLO, JSON_TYPE, HTML_TYPE, ROUTES: new Set(['/json', '/db', '/queries', '/fortunes', '/updates']),
};
