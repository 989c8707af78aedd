//! The json, db, queries, fortunes and updates routes (scenarios/<name>.toml,
//! TechEmpower's shapes), served under every SCENARIO as the contract asks.
//!
//! tokio-postgres with a deadpool-postgres pool of DB_POOL connections, opened
//! only when DATABASE_URL is set; statements are prepared once per connection
//! (deadpool's statement cache). JSON by serde_json, the fortunes' messages
//! escaped by html-escape (hyper has no template engine).

use std::fmt::Write as _;
use std::sync::OnceLock;

use bytes::Bytes;
use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};
use http_body_util::Full;
use hyper::header::{HeaderValue, CONTENT_TYPE};
use hyper::{Method, Request, Response, StatusCode};
use serde::Serialize;
use tokio_postgres::NoTls;

const WORLD_ROWS: i32 = 10_000;
const MAX_QUERIES: usize = 500;
const SELECT_WORLD: &str = "SELECT id, randomnumber FROM world WHERE id = $1";
const SELECT_FORTUNES: &str = "SELECT id, message FROM fortune";
/// One statement for the whole batch; ids are sorted so two concurrent
/// batches lock rows in the same order and cannot deadlock.
const UPDATE_WORLDS: &str = "UPDATE world SET randomnumber = v.r FROM \
     (SELECT unnest($1::int[]) AS id, unnest($2::int[]) AS r) AS v WHERE world.id = v.id";
const ADDITIONAL_FORTUNE: &str = "Additional fortune added at request time.";
const JSON: HeaderValue = HeaderValue::from_static("application/json");
const HTML: HeaderValue = HeaderValue::from_static("text/html; charset=utf-8");

/// Set once before the first connection is accepted. A global rather than a
/// handler argument keeps the routes out of main.rs's request path.
static POOL: OnceLock<Option<Pool>> = OnceLock::new();

#[derive(Serialize, Clone, Copy)]
struct World {
    id: i32,
    #[serde(rename = "randomNumber")]
    random_number: i32,
}

#[derive(Serialize)]
struct Message {
    message: &'static str,
}

/// json, db, queries, fortunes, updates, and the variants of them that
/// fairbench names `<route>-<detail>` (queries-1).
pub fn is_stack_scenario(name: &str) -> bool {
    let route = name.split_once('-').map_or(name, |(route, _)| route);
    matches!(route, "json" | "db" | "queries" | "fortunes" | "updates")
}

/// Opens the pool when DATABASE_URL is set, with every connection made
/// before the first request so that connecting is not timed in a run.
pub async fn init() -> Result<(), String> {
    let pool = match std::env::var("DATABASE_URL") {
        Ok(url) if !url.is_empty() => Some(open(&url).await?),
        _ => None,
    };
    POOL.set(pool)
        .map_err(|_| "database pool initialised twice".to_string())
}

async fn open(url: &str) -> Result<Pool, String> {
    let size: usize = match std::env::var("DB_POOL") {
        Ok(v) => v
            .trim()
            .parse()
            .ok()
            .filter(|&n| n > 0)
            .ok_or_else(|| format!("DB_POOL must be a positive integer, got {v:?}"))?,
        Err(_) => 4,
    };
    let config: tokio_postgres::Config = url.parse().map_err(|e| format!("DATABASE_URL: {e}"))?;
    let manager = Manager::from_config(
        config,
        NoTls,
        ManagerConfig {
            recycling_method: RecyclingMethod::Fast,
        },
    );
    let pool = Pool::builder(manager)
        .max_size(size)
        .build()
        .map_err(|e| format!("database pool: {e}"))?;
    let mut held = Vec::with_capacity(size);
    for _ in 0..size {
        held.push(pool.get().await.map_err(|e| format!("database: {e}"))?);
    }
    drop(held);
    eprintln!("rust-hyper: deadpool-postgres pool of {size} connection(s)");
    Ok(pool)
}

/// The answer for one of the five routes, or None for any other request.
pub async fn serve<B>(req: &Request<B>) -> Option<Response<Full<Bytes>>> {
    let path = req.uri().path();
    if req.method() != Method::GET
        || !matches!(
            path,
            "/json" | "/db" | "/queries" | "/fortunes" | "/updates"
        )
    {
        return None;
    }
    if path == "/json" {
        let body = serde_json::to_vec(&Message {
            message: "Hello, World!",
        })
        .expect("a &str serialises");
        return Some(with_type(body, JSON));
    }
    let Some(pool) = POOL.get().and_then(Option::as_ref) else {
        return Some(plain(
            StatusCode::INTERNAL_SERVER_ERROR,
            "DATABASE_URL is not set",
        ));
    };
    let query = req.uri().query().unwrap_or("");
    let answer = match path {
        "/db" => match param(query, "id")
            .and_then(|v| v.parse::<i32>().ok())
            .filter(|id| (1..=WORLD_ROWS).contains(id))
        {
            Some(id) => one_world(pool, id).await.map(|w| json(&w)),
            None => {
                return Some(plain(
                    StatusCode::BAD_REQUEST,
                    "id must be an integer in 1..=10000",
                ))
            }
        },
        "/queries" => worlds(pool, random_ids(count(query), false))
            .await
            .map(|w| json(&w)),
        "/updates" => updates(pool, count(query)).await.map(|w| json(&w)),
        _ => fortunes(pool)
            .await
            .map(|page| with_type(page.into_bytes(), HTML)),
    };
    Some(answer.unwrap_or_else(|e| {
        eprintln!("{path}: {e}");
        plain(StatusCode::INTERNAL_SERVER_ERROR, "database error")
    }))
}

async fn one_world(pool: &Pool, id: i32) -> Result<World, String> {
    Ok(worlds(pool, vec![id]).await?[0])
}

/// One row per id, one query after another on one pooled connection: the N
/// round trips are what the queries scenario measures.
async fn worlds(pool: &Pool, ids: Vec<i32>) -> Result<Vec<World>, String> {
    let client = pool.get().await.map_err(|e| e.to_string())?;
    let stmt = client
        .prepare_cached(SELECT_WORLD)
        .await
        .map_err(|e| e.to_string())?;
    let mut rows = Vec::with_capacity(ids.len());
    for id in ids {
        let row = client
            .query_one(&stmt, &[&id])
            .await
            .map_err(|e| e.to_string())?;
        rows.push(World {
            id: row.get(0),
            random_number: row.get(1),
        });
    }
    Ok(rows)
}

async fn updates(pool: &Pool, n: usize) -> Result<Vec<World>, String> {
    // Distinct ids: a row drawn twice would get two new numbers of which only
    // one could be stored, and the answer would not match the table.
    let mut rows = worlds(pool, random_ids(n, true)).await?;
    for row in &mut rows {
        row.random_number = fastrand::i32(1..=WORLD_ROWS);
    }
    let mut sorted = rows.clone();
    sorted.sort_by_key(|w| w.id);
    let ids: Vec<i32> = sorted.iter().map(|w| w.id).collect();
    let numbers: Vec<i32> = sorted.iter().map(|w| w.random_number).collect();
    let client = pool.get().await.map_err(|e| e.to_string())?;
    let stmt = client
        .prepare_cached(UPDATE_WORLDS)
        .await
        .map_err(|e| e.to_string())?;
    client
        .execute(&stmt, &[&ids, &numbers])
        .await
        .map_err(|e| e.to_string())?;
    Ok(rows)
}

async fn fortunes(pool: &Pool) -> Result<String, String> {
    let client = pool.get().await.map_err(|e| e.to_string())?;
    let stmt = client
        .prepare_cached(SELECT_FORTUNES)
        .await
        .map_err(|e| e.to_string())?;
    let mut all: Vec<(i32, String)> = client
        .query(&stmt, &[])
        .await
        .map_err(|e| e.to_string())?
        .iter()
        .map(|row| (row.get(0), row.get(1)))
        .collect();
    drop(client);
    all.push((0, ADDITIONAL_FORTUNE.to_string()));
    all.sort_by(|a, b| a.1.cmp(&b.1));
    let mut page = String::from(
        "<!DOCTYPE html><html><head><title>Fortunes</title></head><body><table><tr><th>id</th><th>message</th></tr>",
    );
    for (id, message) in &all {
        let _ = write!(page, "<tr><td>{id}</td><td>");
        // The five HTML-reserved characters (& < > " '), the set TechEmpower's
        // fortunes exercise; encode_text would leave the quotes as they are.
        html_escape::encode_quoted_attribute_to_string(message, &mut page);
        page.push_str("</td></tr>");
    }
    page.push_str("</table></body></html>");
    Ok(page)
}

/// TechEmpower's rule: missing or not an integer is 1, clamped to 1..=500.
fn count(query: &str) -> usize {
    param(query, "queries")
        .and_then(|v| v.parse::<i64>().ok())
        .map_or(1, |n| n.clamp(1, MAX_QUERIES as i64) as usize)
}

fn random_ids(n: usize, distinct: bool) -> Vec<i32> {
    let mut ids = Vec::with_capacity(n);
    while ids.len() < n {
        let id = fastrand::i32(1..=WORLD_ROWS);
        if !distinct || !ids.contains(&id) {
            ids.push(id);
        }
    }
    ids
}

/// The value of `key` in a query string; ids and counts need no decoding.
fn param<'a>(query: &'a str, key: &str) -> Option<&'a str> {
    query
        .split('&')
        .find_map(|pair| pair.strip_prefix(key)?.strip_prefix('='))
}

fn json<T: Serialize>(value: &T) -> Response<Full<Bytes>> {
    with_type(serde_json::to_vec(value).expect("rows serialise"), JSON)
}

fn with_type(body: Vec<u8>, content_type: HeaderValue) -> Response<Full<Bytes>> {
    let mut res = Response::new(Full::new(Bytes::from(body)));
    res.headers_mut().insert(CONTENT_TYPE, content_type);
    res
}

fn plain(code: StatusCode, message: &'static str) -> Response<Full<Bytes>> {
    let mut res = Response::new(Full::new(Bytes::from_static(message.as_bytes())));
    *res.status_mut() = code;
    res.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    res
}

#[cfg(test)]
mod tests {
    use super::{count, param};

    #[test]
    fn counts_follow_techempower() {
        assert_eq!(count(""), 1);
        assert_eq!(count("queries=abc"), 1);
        assert_eq!(count("queries=0"), 1);
        assert_eq!(count("queries=-3"), 1);
        assert_eq!(count("queries=20"), 20);
        assert_eq!(count("queries=501"), 500);
        assert_eq!(count("x=1&queries=7"), 7);
        assert_eq!(param("queriesx=3", "queries"), None);
    }
}
