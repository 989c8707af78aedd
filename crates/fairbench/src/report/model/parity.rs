//! The server and byte-parity rows of a report: who was measured, what
//! each answered, and its bytes against the reference's.

use serde::Serialize;
use serde_json::Value;

use super::value_text;
use crate::store::CaseRow;

#[derive(Debug, Clone, Serialize)]
pub struct ServerInfo {
    pub name: String,
    pub language: String,
    pub framework: String,
    pub palette_index: usize,
    pub colour: &'static str,
    /// The run's `toolchains_json` entry for this server (toolchain, version,
    /// framework_version, …), if any.
    pub toolchain: Option<Value>,
}

#[derive(Debug, Clone, Serialize)]
pub struct RuleGrade {
    pub rule: String,
    pub grade: String,
    pub detail: String,
}

/// The check's verdict on one server variant and scenario.
#[derive(Debug, Clone, Serialize)]
pub struct ParityRow {
    pub server: String,
    pub mode: String,
    pub response: String,
    pub scenario: String,
    /// What the check spoke: "http/1.1", "h2c" or "h2".
    pub protocol: String,
    pub header_bytes: Option<i64>,
    /// HTTP/2: the HPACK header block of the check's answer.
    pub header_block: Option<i64>,
    pub body_bytes: Option<i64>,
    pub total_bytes: Option<i64>,
    pub fair: Option<bool>,
    /// The worst rule grade (`pass`, `warn`, `fail`) when the check said.
    pub grade: Option<String>,
    pub rules: Vec<RuleGrade>,
    pub framing: Option<String>,
    pub date: Option<String>,
    pub ipv4: Option<bool>,
    pub ipv6: Option<bool>,
    /// Total bytes minus the reference server's.
    pub vs_reference: Option<i64>,
    /// Header names in the order sent.
    pub header_names: Vec<String>,
    /// The response exactly as received by the check (lossy UTF-8), if kept.
    pub raw_response: Option<String>,
    /// Set when `parity_json` was present but not readable.
    pub note: Option<String>,
}

impl ParityRow {
    pub(super) fn of(c: &CaseRow) -> ParityRow {
        let mut row = ParityRow {
            server: c.server.clone(),
            mode: c.mode.clone(),
            response: c.response.clone(),
            scenario: c.scenario.clone(),
            protocol: if c.protocol.is_empty() {
                "http/1.1".into()
            } else {
                c.protocol.clone()
            },
            header_bytes: c.header_bytes,
            header_block: None,
            body_bytes: c.body_bytes,
            total_bytes: match (c.header_bytes, c.body_bytes) {
                (Some(h), Some(b)) => Some(h + b),
                _ => None,
            },
            fair: c.fair,
            grade: None,
            rules: Vec::new(),
            framing: None,
            date: None,
            ipv4: None,
            ipv6: None,
            vs_reference: None,
            header_names: Vec::new(),
            raw_response: None,
            note: None,
        };
        let Some(text) = c.parity_json.as_deref() else {
            return row;
        };
        let v: Value = match serde_json::from_str(text) {
            Ok(v) => v,
            Err(e) => {
                row.note = Some(format!("parity_json is not JSON: {e}"));
                return row;
            }
        };
        row.grade = v.get("grade").and_then(Value::as_str).map(str::to_string);
        if let Some(rules) = v.get("rules").and_then(Value::as_array) {
            row.rules = rules
                .iter()
                .map(|r| RuleGrade {
                    rule: r.get("rule").map(value_text).unwrap_or_default(),
                    grade: r.get("grade").map(value_text).unwrap_or_default(),
                    detail: r.get("detail").map(value_text).unwrap_or_default(),
                })
                .collect();
        }
        // The check's comparison row, or the same fields at the top level.
        let r = v.get("row").filter(|r| r.is_object()).unwrap_or(&v);
        row.framing = r.get("framing").and_then(Value::as_str).map(str::to_string);
        row.date = r.get("date").and_then(Value::as_str).map(str::to_string);
        row.ipv4 = r.get("ipv4").and_then(Value::as_bool);
        row.ipv6 = r.get("ipv6").and_then(Value::as_bool);
        row.vs_reference = r.get("vs_reference").and_then(Value::as_i64);
        row.header_block = r.get("header_block").and_then(Value::as_i64);
        if let Some(names) = r.get("header_names").and_then(Value::as_array) {
            row.header_names = names.iter().map(value_text).collect();
        }
        row.raw_response = v
            .get("raw")
            .and_then(|x| x.get("response"))
            .and_then(Value::as_str)
            .map(str::to_string);
        row
    }

    /// Rules that did not pass, as `rule: grade — detail`.
    pub fn findings(&self) -> Vec<String> {
        self.rules
            .iter()
            .filter(|r| r.grade != "pass")
            .map(|r| {
                if r.detail.is_empty() {
                    format!("{}: {}", r.rule, r.grade)
                } else {
                    format!("{}: {} — {}", r.rule, r.grade, r.detail)
                }
            })
            .collect()
    }
}

/// Each row's total bytes minus the byte reference's (the server `check`
/// compares normalized bytes with) for the same scenario and response, from
/// the stored bytes, where the stored check did not already say.
pub(super) fn fill_vs_reference(parity: &mut [ParityRow]) {
    let reference = fairbench_zoo::reference::REFERENCE_SERVER;
    let totals: Vec<(String, String, i64)> = parity
        .iter()
        .filter(|p| p.server == reference)
        .filter_map(|p| Some((p.scenario.clone(), p.response.clone(), p.total_bytes?)))
        .collect();
    for p in parity.iter_mut().filter(|p| p.vs_reference.is_none()) {
        let reference_total = totals
            .iter()
            .find(|(s, r, _)| *s == p.scenario && *r == p.response)
            .map(|t| t.2);
        if let (Some(total), Some(rt)) = (p.total_bytes, reference_total) {
            p.vs_reference = Some(total - rt);
        }
    }
}
