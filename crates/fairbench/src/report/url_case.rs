//! Cases of URLs: `load --save`, each side of a saved `load --vs` pair and
//! a suite's `[[service]]`s. fairbench did not build, start or contain
//! these servers, so a URL case has no zoo server, mode, response shape or
//! cores (stored as mode `-`, cores 0); what it has instead — the URL, the
//! method, the rate or stages, the connections — is in its `load_json`,
//! read here for `show`, `report` and `compare`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::store::CaseRow;

/// The suite name of stored loads (`load --save`, `load --vs --save`), and
/// the server, mode and scenario their one case is filed under: the URL is
/// what was measured.
pub const ADHOC_SUITE: &str = "load";

/// Said wherever a URL run's figures are shown: the column a zoo run fills
/// from the server's control group is empty, not zero.
pub const NOT_STARTED: &str = "fairbench did not start these servers: their own CPU and memory are not measured (only the load generator's)";

/// A case measured at a URL rather than on a zoo server fairbench started.
pub fn is_url(c: &CaseRow) -> bool {
    c.cores == 0 && c.mode == "-"
}

/// A run all of whose cases are URL cases.
pub fn is_url_run(cases: &[CaseRow]) -> bool {
    !cases.is_empty() && cases.iter().all(is_url)
}

/// One stage of a `--stages` profile as measured: planned against
/// achieved, by planned time (a request belongs to the stage it was
/// planned in, wherever its answer came).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StageRow {
    /// As given: "30s:1k-20k".
    pub name: String,
    /// Seconds from the start of the measurement.
    pub start_s: f64,
    pub duration_s: f64,
    pub from_rps: f64,
    pub to_rps: f64,
    /// Requests the stage planned, and how many were answered.
    pub planned: u64,
    pub requests: u64,
    pub errors: u64,
    pub p50_us: u64,
    pub p99_us: u64,
    /// The rate the stage kept, as `load --json` gave it (stored runs
    /// since stages were credited their arrivals when behind).
    #[serde(default)]
    pub rps: Option<f64>,
}

impl StageRow {
    /// The mean rate the plan asked for over the stage.
    pub fn planned_rps(&self) -> f64 {
        (self.from_rps + self.to_rps) / 2.0
    }

    /// The rate the stage kept: as stored, or, for runs stored before
    /// that, its answered requests per second of it.
    pub fn achieved_rps(&self) -> f64 {
        if let Some(r) = self.rps {
            r
        } else if self.duration_s > 0.0 {
            self.requests as f64 / self.duration_s
        } else {
            0.0
        }
    }
}

/// What a URL case measured, from its `load_json`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct UrlLoad {
    pub url: String,
    pub method: String,
    /// `closed`, `rate 500/s` or `stages 10s:100,20s:100-1k`.
    pub load: String,
    pub connections: Option<u64>,
    pub stages: Vec<StageRow>,
}

impl UrlLoad {
    /// `None` when the case was not measured at a URL.
    pub fn of(c: &CaseRow) -> Option<UrlLoad> {
        if !is_url(c) {
            return None;
        }
        let v: Value = serde_json::from_str(&c.load_json).unwrap_or(Value::Null);
        let stages: Vec<StageRow> = v
            .get("stages")
            .and_then(|s| serde_json::from_value(s.clone()).ok())
            .unwrap_or_default();
        let model = v.get("model").and_then(Value::as_str).unwrap_or_else(|| {
            // Pairs saved before the model was stored: the label says it.
            c.load_label.split_whitespace().next().unwrap_or("")
        });
        let load = if !stages.is_empty() {
            let names: Vec<&str> = stages.iter().map(|s| s.name.as_str()).collect();
            format!("stages {}", names.join(","))
        } else if model == "rate" {
            match v.get("rate").and_then(Value::as_f64) {
                Some(r) => format!("rate {}/s", crate::units::rate(r)),
                None => "rate".into(),
            }
        } else {
            model.to_string()
        };
        Some(UrlLoad {
            url: v
                .get("url")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            method: v
                .get("method")
                .and_then(Value::as_str)
                .unwrap_or("GET")
                .to_string(),
            load,
            connections: v.get("connections").and_then(Value::as_u64),
            stages,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case(load_json: &str, label: &str) -> CaseRow {
        CaseRow {
            mode: "-".into(),
            cores: 0,
            load_json: load_json.into(),
            load_label: label.into(),
            ..CaseRow::default()
        }
    }

    #[test]
    fn a_url_case_reads_its_load() {
        let c = case(
            r#"{"model":"rate","rate":500.0,"url":"http://127.0.0.1:1/x","method":"POST","connections":4}"#,
            "rate 500/s c=4 t=1",
        );
        let u = UrlLoad::of(&c).unwrap();
        assert_eq!(
            (u.url.as_str(), u.method.as_str(), u.load.as_str()),
            ("http://127.0.0.1:1/x", "POST", "rate 500/s")
        );
        assert_eq!(u.connections, Some(4));
        // An older pair without a model: from the label.
        let old = case(r#"{"url":"http://a/"}"#, "closed c=4 t=2");
        assert_eq!(UrlLoad::of(&old).unwrap().load, "closed");
        let zoo = CaseRow {
            cores: 1,
            mode: "native".into(),
            ..c
        };
        assert!(UrlLoad::of(&zoo).is_none());
        assert!(!is_url_run(&[zoo, old.clone()]));
        assert!(is_url_run(&[old]));
    }
}
