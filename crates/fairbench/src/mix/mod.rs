//! Many requests in one run: a targets file or a templated URL, prepared
//! before the run into the engine's [`RequestMix`].
//!
//! Weights become how often each target appears in the pool, spread evenly
//! through it (smooth weighted round robin), so any stretch of the run sends
//! the targets in their proportions. Without templates the pool is one
//! cycle of the weights; with them it holds `pool` requests (each drawn
//! once, before the run), which the load threads then send in turn.

pub mod file;
pub mod template;

use fairbench_engine::{MixRequest, RequestMix};

use crate::seeded::SplitMix64;
use file::{Body, TargetDef};

/// Prepared requests when templates are used, unless told otherwise.
pub const DEFAULT_POOL: usize = 10_000;

/// Renders `defs` into a mix. `extra` headers (the `-H` flags) go on every
/// request. `pool`: how many requests to prepare when any target has
/// templates.
pub fn prepare(
    mut defs: Vec<TargetDef>,
    extra: &[(String, String)],
    pool: usize,
    seed: u64,
) -> Result<RequestMix, String> {
    let mut names: Vec<String> = Vec::new();
    let index: Vec<u16> = defs
        .iter()
        .map(|d| {
            let i = names.iter().position(|n| *n == d.name).unwrap_or_else(|| {
                names.push(d.name.clone());
                names.len() - 1
            });
            i as u16
        })
        .collect();
    if names.len() > fairbench_engine::mix::MAX_TARGETS {
        return Err(format!(
            "at most {} target names in one run, got {}",
            fairbench_engine::mix::MAX_TARGETS,
            names.len()
        ));
    }
    let head = |d: &TargetDef| d.method == "HEAD";
    if defs.iter().any(head) {
        if let Some(d) = defs.iter().find(|d| !head(d)) {
            return Err(format!(
                "{}: method: HEAD (of another target) cannot be mixed with {} in one run: a HEAD answer has no body, and the parser must know before each answer",
                d.at, d.method
            ));
        }
    }
    let total: u64 = defs.iter().map(|d| d.weight).sum();
    let templated = defs.iter().any(|d| !d.is_constant());
    let size = if templated { pool as u64 } else { total };
    if size > fairbench_engine::mix::MAX_MIX as u64 {
        return Err(format!(
            "the weights add up to {total}: at most {} prepared requests (use smaller weights)",
            fairbench_engine::mix::MAX_MIX
        ));
    }
    if size < defs.len() as u64 {
        return Err(format!(
            "--pool {size} is smaller than the {} targets: each needs a place",
            defs.len()
        ));
    }
    let mut rng = SplitMix64::new(seed);
    let mut credit = vec![0i64; defs.len()];
    let mut requests = Vec::with_capacity(size as usize);
    for _ in 0..size {
        // Smooth weighted round robin: every target gains its weight, the
        // one with the most credit goes and pays the total.
        for (c, d) in credit.iter_mut().zip(&defs) {
            *c += d.weight as i64;
        }
        let k = (0..defs.len())
            .max_by_key(|&i| (credit[i], -(i as i64)))
            .unwrap_or(0);
        credit[k] -= total as i64;
        let d = &mut defs[k];
        let path = d.path.render(&mut rng);
        if !path.starts_with('/') || path.bytes().any(|b| b <= b' ' || b == 0x7f) {
            return Err(format!(
                "{}: path: {path:?} is not a request path (it must start with / and hold no spaces or control bytes: percent-encode them)",
                d.at
            ));
        }
        let mut headers = Vec::with_capacity(d.headers.len() + extra.len());
        for (name, v) in &mut d.headers {
            let value = v.render(&mut rng);
            if value.contains(['\r', '\n']) {
                return Err(format!(
                    "{}: headers: {name}: a value cannot hold CR or LF",
                    d.at
                ));
            }
            headers.push((name.clone(), value));
        }
        headers.extend(extra.iter().cloned());
        let body = match &mut d.body {
            Body::Template(t) => t.render(&mut rng).into_bytes(),
            Body::Bytes(b) => b.clone(),
        };
        requests.push(MixRequest {
            target: index[k],
            method: d.method.clone(),
            path,
            headers,
            body,
        });
    }
    Ok(RequestMix { names, requests })
}

/// The mix of a `load`: from `--targets FILE`, or from templates in the
/// URL's path, `-H` values or the body; `None` for one fixed request.
/// `raw_url` is the URL as given (a URL parser would escape the braces of
/// its templates); `request` is the request the flags describe.
pub fn for_load(
    raw_url: &str,
    targets: Option<&std::path::Path>,
    request: &fairbench_engine::RequestSpec,
    pool: usize,
    seed: u64,
) -> Result<Option<RequestMix>, String> {
    let origin = url::Url::parse(raw_url).map_err(|e| format!("cannot parse {raw_url:?}: {e}"))?;
    if let Some(file) = targets {
        let defs = file::read(file, &origin)?;
        return prepare(defs, &request.headers, pool, seed)
            .map(Some)
            .map_err(|e| format!("{}: {e}", file.display()));
    }
    let body = String::from_utf8_lossy(&request.body);
    if !raw_url.contains("{{")
        && !body.contains("{{")
        && !request.headers.iter().any(|(_, v)| v.contains("{{"))
    {
        return Ok(None);
    }
    let dir = std::path::Path::new(".");
    let after = raw_url.split_once("://").map_or(raw_url, |(_, r)| r);
    let path = after.find('/').map_or("/", |i| &after[i..]);
    let path = path.split('#').next().unwrap_or(path);
    let def = TargetDef {
        name: format!("{} {path}", request.method),
        method: request.method.clone(),
        path: template::Template::parse(path, dir).map_err(|e| format!("URL: {e}"))?,
        headers: request
            .headers
            .iter()
            .map(|(k, v)| {
                template::Template::parse(v, dir)
                    .map(|t| (k.clone(), t))
                    .map_err(|e| format!("--header {k}: {e}"))
            })
            .collect::<Result<_, _>>()?,
        body: if body.contains("{{") {
            file::Body::Template(
                template::Template::parse(&body, dir).map_err(|e| format!("--body: {e}"))?,
            )
        } else {
            file::Body::Bytes(request.body.clone())
        },
        weight: 1,
        at: "URL".into(),
    };
    prepare(vec![def], &[], pool, seed).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;
    use template::Template;

    fn def(name: &str, path: &str, weight: u64) -> TargetDef {
        TargetDef {
            name: name.into(),
            method: "GET".into(),
            path: Template::parse(path, Path::new(".")).unwrap(),
            headers: vec![],
            body: Body::Bytes(vec![]),
            weight,
            at: "t.toml:1".into(),
        }
    }

    #[test]
    fn weights_without_templates_make_one_even_cycle() {
        let m = prepare(vec![def("a", "/a", 3), def("b", "/b", 1)], &[], 10_000, 1).unwrap();
        let order: Vec<u16> = m.requests.iter().map(|r| r.target).collect();
        assert_eq!(order.len(), 4);
        assert_eq!(order.iter().filter(|&&t| t == 0).count(), 3);
        assert_eq!(m.names, ["a", "b"]);
    }

    #[test]
    fn templates_fill_the_pool_in_proportion() {
        let m = prepare(
            vec![def("a", "/a/{{seq}}", 1), def("b", "/b/{{uniform 1 9}}", 3)],
            &[("X-T".into(), "1".into())],
            1000,
            1,
        )
        .unwrap();
        assert_eq!(m.requests.len(), 1000);
        let a: Vec<&MixRequest> = m.requests.iter().filter(|r| r.target == 0).collect();
        assert_eq!(a.len(), 250);
        assert_eq!(a[0].path, "/a/0");
        assert_eq!(a[249].path, "/a/249");
        assert!(m
            .requests
            .iter()
            .all(|r| r.headers == [("X-T".to_string(), "1".to_string())]));
    }

    #[test]
    fn the_same_name_is_one_target() {
        let m = prepare(vec![def("x", "/1", 1), def("x", "/2", 1)], &[], 10, 1).unwrap();
        assert_eq!(m.names, ["x"]);
    }
}
