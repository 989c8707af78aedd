//! A load split over several generators: each one's own figures under the
//! merged summary, in text and in the `load --json` schema.

use crate::fleet::FleetOutcome;
use crate::output::load::json::LoadJson;
use crate::units;

/// Each generator's own figures under the merged summary.
pub fn text(f: &FleetOutcome) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "\nLoad generators ({}; merged exactly above: counts summed, histograms added):",
        f.parts.len()
    );
    for (i, p) in f.parts.iter().enumerate() {
        let o = &p.outcome;
        let l = o.latency_summary();
        let _ = writeln!(
            s,
            "  #{i} {}  {}  c={} t={}  {} requests = {} req/s  p50 {}  p99 {}  errors {}",
            p.host,
            p.config.target.url,
            o.connections,
            o.threads,
            units::count(o.requests),
            units::rate(o.rps()),
            units::micros(l.p50 as f64),
            units::micros(l.p99 as f64),
            units::count(o.errors.total())
        );
    }
    for w in &f.warnings {
        let _ = writeln!(s, "WARNING: {w}");
    }
    s
}

/// The merged result in the `load --json` schema, plus `clients` (each
/// generator's part) and `topology`.
pub fn json(
    url: &str,
    pcts: &[f64],
    topology: serde_json::Value,
    f: &FleetOutcome,
) -> anyhow::Result<serde_json::Value> {
    let mut v = serde_json::to_value(LoadJson::new(url, &f.merged, pcts))?;
    let clients: Vec<serde_json::Value> = f
        .parts
        .iter()
        .map(|p| {
            let mut c = serde_json::to_value(LoadJson::new(&p.config.target.url, &p.outcome, pcts))
                .unwrap_or_default();
            if let Some(m) = c.as_object_mut() {
                m.insert("host".into(), p.host.clone().into());
                m.insert("warnings".into(), serde_json::json!(p.warnings));
            }
            c
        })
        .collect();
    if let Some(m) = v.as_object_mut() {
        m.insert("clients".into(), clients.into());
        m.insert("topology".into(), topology);
        if let Some(w) = m.get_mut("warnings").and_then(|w| w.as_array_mut()) {
            w.extend(
                f.warnings
                    .iter()
                    .map(|x| serde_json::Value::from(x.clone())),
            );
        }
    }
    Ok(v)
}
