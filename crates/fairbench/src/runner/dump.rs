//! `fairbench load --dump`: one request and its answer as exchanged, bytes
//! escaped (HTTP/1.1) or every frame decoded (HTTP/2), instead of a load.

use fairbench_engine::{LoadConfig, RequestSpec, Target};
use fairbench_zoo::fetch;
use fairbench_zoo::parity::RawExchange;

use crate::output::check_report;
use crate::output::load::tls_error;

/// `--dump`: one request, its bytes and the answer's as exchanged.
pub fn dump(url: &str, cfg: &LoadConfig, cacert_given: bool) -> anyhow::Result<i32> {
    if cfg.protocol.is_h2() {
        return dump_h2(url, cfg, cacert_given);
    }
    let (at, spec) = first_request(cfg);
    let request = spec.serialize(&at)?;
    let t = &cfg.target;
    let mut conn = fairbench_engine::dial::dial(t, &cfg.tls, cfg.timeout)
        .map_err(|m| anyhow::anyhow!("{}", tls_error::in_words(&m, cacert_given)))?;
    let start = std::time::Instant::now();
    let result = fetch::exchange(&mut conn, &request, start, cfg.timeout, |c, d| {
        c.set_read_timeout(Some(d))
    });
    let reached = t.endpoint(conn.peer().unwrap_or(t.addr));
    let over = match conn.alpn() {
        Some(p) => format!("TLS, ALPN {p}"),
        None if t.tls => "TLS, no ALPN".to_string(),
        None => "plain".to_string(),
    };
    let (interim, response, error) = match &result {
        Ok(r) => (r.interim.clone(), r.bytes.clone(), None),
        Err(e) => (Vec::new(), e.partial().to_vec(), Some(e.to_string())),
    };
    let x = RawExchange {
        addr: reached.to_string(),
        request,
        interim,
        response,
        error,
    };
    print!(
        "{}",
        check_report::exchange_text(&format!("{url} ({reached}, {over})"), &x)
    );
    match result {
        Ok(r) if !cfg.expect_status.contains(r.status) => {
            eprintln!(
                "fairbench: status {} is not expected (--expect-status {})",
                r.status, cfg.expect_status
            );
            Ok(1)
        }
        Ok(_) => Ok(0),
        Err(_) => Ok(1),
    }
}

/// The request a dump sends: a mix's first prepared request (with its
/// path), else the load's own.
fn first_request(cfg: &LoadConfig) -> (Target, RequestSpec) {
    match cfg.mix.as_ref().and_then(|m| m.requests.first()) {
        Some(r) => {
            let mut t = cfg.target.clone();
            t.path.clone_from(&r.path);
            let spec = RequestSpec {
                method: r.method.clone(),
                headers: r.headers.clone(),
                body: r.body.clone(),
            };
            (t, spec)
        }
        None => (cfg.target.clone(), cfg.request.clone()),
    }
}

/// `--dump --http2`: one request on stream 1, every frame exchanged decoded.
fn dump_h2(url: &str, cfg: &LoadConfig, cacert_given: bool) -> anyhow::Result<i32> {
    let (t, spec) = first_request(cfg);
    let mut conn = fairbench_engine::dial::dial_as(&t, &cfg.tls, cfg.protocol, cfg.timeout)
        .map_err(|m| anyhow::anyhow!("{}", tls_error::in_words(&m, cacert_given)))?;
    let reached = t.endpoint(conn.peer().unwrap_or(t.addr));
    let over = match conn.alpn() {
        Some(p) if p == "h2" => "TLS, ALPN h2".to_string(),
        Some(p) => anyhow::bail!(
            "{} ({reached}) does not speak h2: offered h2 and http/1.1 by ALPN, it chose {p:?}",
            t.host
        ),
        None if t.tls => anyhow::bail!(
            "{} ({reached}) does not speak h2: offered h2 and http/1.1 by ALPN, it chose none",
            t.host
        ),
        None => "h2c, prior knowledge".to_string(),
    };
    let d = fairbench_engine::h2::dump::exchange(&mut conn, &spec, &t, cfg.timeout);
    println!("{url} ({reached}, {over})");
    for l in &d.lines {
        println!("{l}");
    }
    if let Some(e) = &d.error {
        eprintln!("fairbench: {e}");
        return Ok(1);
    }
    match d.status {
        Some(s) if cfg.expect_status.contains(s) => Ok(0),
        Some(s) => {
            eprintln!(
                "fairbench: status {s} is not expected (--expect-status {})",
                cfg.expect_status
            );
            Ok(1)
        }
        None => Ok(1),
    }
}
