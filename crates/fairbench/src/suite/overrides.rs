//! A suite changed for one run by `fairbench run`'s flags (`--servers`,
//! `--rate`, `--interleave-seed`, ...): the changes are made to the suite's
//! TOML, so that the stored suite is exactly what ran and what `--resume`
//! re-plans; and the seed a suite interleaving cases gets when it has none.

use std::time::Duration;

use super::file::{Repetitions, Suite};
use super::order::{fresh_seed, Interleave};
use crate::args::VariantSel;
use crate::usage_error::usage;

/// The flags that change the suite; `None` keeps the suite's own.
#[derive(Debug, Default, Clone, Copy)]
pub struct Overrides<'a> {
    pub servers: Option<&'a str>,
    pub scenarios: Option<&'a str>,
    pub cores: Option<&'a str>,
    pub duration: Option<&'a str>,
    pub repetitions: Option<Repetitions>,
    pub variant: Option<&'a VariantSel>,
    pub connections: Option<usize>,
    pub rate: Option<f64>,
    pub threads: Option<usize>,
    pub pipeline: Option<usize>,
    pub warmup: Option<crate::args::Warmup>,
    pub timeout: Option<Duration>,
    pub interleave: Option<Interleave>,
    pub interleave_seed: Option<u64>,
}

/// The suite `text` (named `shown` in messages) with `overrides` applied and
/// a seed recorded: the suite to run and the text to store.
pub fn read(text: &str, overrides: &Overrides, shown: &str) -> anyhow::Result<(Suite, String)> {
    let text = apply(text, overrides)?;
    record_seed(Suite::parse(&text, shown)?, text, shown)
}

/// Applies command-line overrides to the suite's TOML so that the stored
/// suite is exactly what ran (and what `--resume` re-plans).
fn apply(text: &str, a: &Overrides) -> anyhow::Result<String> {
    if a.servers.is_none()
        && a.scenarios.is_none()
        && a.cores.is_none()
        && a.duration.is_none()
        && a.repetitions.is_none()
        && a.interleave.is_none()
        && a.interleave_seed.is_none()
        && a.variant.is_none()
        && !load_flags(a)
        && a.warmup.is_none()
        && a.timeout.is_none()
    {
        return Ok(text.to_string());
    }
    let mut doc: toml::Table = text.parse().map_err(|e| usage(format!("--suite: {e}")))?;
    let list = |s: &str| -> toml::Value {
        toml::Value::Array(
            s.split(',')
                .map(str::trim)
                .filter(|x| !x.is_empty())
                .map(|x| toml::Value::String(x.into()))
                .collect(),
        )
    };
    if let Some(s) = a.servers {
        doc.insert("servers".into(), list(s));
    }
    if let Some(s) = a.scenarios {
        doc.insert("scenarios".into(), list(s));
    }
    if let Some(c) = a.cores {
        let mut v = Vec::new();
        for part in c.split(',').map(str::trim).filter(|x| !x.is_empty()) {
            v.push(match crate::args::positive_count(part).map(i64::try_from) {
                Ok(Ok(n)) => toml::Value::Integer(n),
                _ if part == "all" => toml::Value::String("all".into()),
                _ => return Err(usage(format!("--cores: {part:?} is not a core count (expected numbers or \"all\", e.g. 1,all)"))),
            });
        }
        doc.insert("cores".into(), toml::Value::Array(v));
    }
    if let Some(d) = a.duration {
        crate::args::positive_duration(d).map_err(|m| usage(format!("--duration: {m}")))?;
        doc.insert("duration".into(), toml::Value::String(d.to_string()));
    }
    match a.repetitions {
        Some(Repetitions::Fixed(n)) => {
            doc.insert("repetitions".into(), toml::Value::Integer(n as i64));
        }
        Some(r) => {
            doc.insert("repetitions".into(), toml::Value::String(r.canonical()));
        }
        None => {}
    }
    if let Some(v) = a.variant {
        if let Some(m) = &v.mode {
            doc.insert("modes".into(), list(m));
        }
        if let Some(r) = v.response {
            doc.insert("responses".into(), list(r.as_str()));
        }
    }
    let dur = |d: &Duration| toml::Value::String(humantime::format_duration(*d).to_string());
    if let Some(w) = &a.warmup {
        doc.insert("warmup".into(), toml::Value::String(w.as_toml()));
    }
    if let Some(t) = &a.timeout {
        doc.insert("timeout".into(), dur(t));
    }
    if load_flags(a) {
        doc.insert(
            "load".into(),
            toml::Value::Array(vec![one_profile(&doc, a)?]),
        );
    }
    if let Some(i) = a.interleave {
        doc.insert("interleave".into(), toml::Value::String(i.as_str().into()));
    }
    if let Some(seed) = a.interleave_seed {
        let seed = i64::try_from(seed)
            .map_err(|_| usage(format!("--interleave-seed {seed}: must be below 2^63")))?;
        let mode = doc.get("interleave").and_then(toml::Value::as_str);
        if mode != Some(Interleave::Case.as_str()) {
            return Err(usage(
                "--interleave-seed: only --interleave case shuffles (this suite runs cases in matrix order)",
            ));
        }
        doc.insert("interleave_seed".into(), toml::Value::Integer(seed));
    }
    Ok(toml::to_string(&doc)?)
}

/// Any of the flags that make the one load profile.
fn load_flags(a: &Overrides) -> bool {
    a.connections.is_some() || a.rate.is_some() || a.threads.is_some() || a.pipeline.is_some()
}

/// The [[load]] the flags describe: closed loop, or constant rate with
/// `--rate`; connections, request count, keep-alive and HTTP/2 streams not
/// given on the command line are the suite's first profile's, so `--rate` alone on
/// ab2012 still opens a connection per request.
fn one_profile(doc: &toml::Table, a: &Overrides) -> anyhow::Result<toml::Value> {
    let first = doc
        .get("load")
        .and_then(toml::Value::as_array)
        .and_then(|l| l.first())
        .and_then(toml::Value::as_table);
    let mut p = toml::Table::new();
    let model = if a.rate.is_some() { "rate" } else { "closed" };
    p.insert("model".into(), model.into());
    let connections = match (a.connections, first.and_then(|f| f.get("connections"))) {
        (Some(c), _) => toml::Value::Integer(c as i64),
        (None, Some(c)) => c.clone(),
        (None, None) => toml::Value::Integer(50),
    };
    p.insert("connections".into(), connections);
    if let Some(f) = first {
        for k in ["requests", "keepalive", "streams"] {
            if let Some(v) = f.get(k) {
                p.insert(k.into(), v.clone());
            }
        }
    }
    if let Some(r) = a.rate {
        p.insert("rate".into(), toml::Value::Float(r));
    }
    if let Some(t) = a.threads {
        p.insert("threads".into(), toml::Value::Integer(t as i64));
    }
    if let Some(n) = a.pipeline {
        if a.rate.is_some() {
            return Err(usage(
                "--pipeline: only closed-loop profiles pipeline (drop --rate or --pipeline)",
            ));
        }
        p.insert("pipeline".into(), toml::Value::Integer(n as i64));
    }
    Ok(toml::Value::Table(p))
}

/// A suite interleaving cases without a seed gets one now, written into the
/// suite text the run stores, so the order can be told and repeated.
fn record_seed(suite: Suite, text: String, shown: &str) -> anyhow::Result<(Suite, String)> {
    if suite.interleave != Interleave::Case || suite.interleave_seed.is_some() {
        return Ok((suite, text));
    }
    let mut doc: toml::Table = text.parse().map_err(|e| usage(format!("--suite: {e}")))?;
    doc.insert(
        "interleave_seed".into(),
        toml::Value::Integer(fresh_seed() as i64),
    );
    let text = toml::to_string(&doc)?;
    Ok((Suite::parse(&text, shown)?, text))
}
