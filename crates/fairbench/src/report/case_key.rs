//! What matches a case across repetitions and across runs, and the labels
//! people read for its protocol and cores: below the model, the paired
//! ratios and every table, which all key their rows by it.

use serde::Serialize;

use crate::store::CaseRow;

/// What matches a case across repetitions and across runs.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct CaseKey {
    pub server: String,
    pub mode: String,
    pub response: String,
    pub scenario: String,
    pub cores: i64,
    pub load: String,
    /// The machine, in a report of runs from several (`report --with`):
    /// its CPU model and count. Empty in a report of one run.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub host: String,
    /// "http/1.1", "h2c" or "h2".
    pub protocol: String,
    /// The ladder's rung (the suite's `[[step]]`); empty without one.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub step: String,
}

impl CaseKey {
    pub fn of(c: &CaseRow) -> CaseKey {
        CaseKey {
            server: c.server.clone(),
            mode: c.mode.clone(),
            response: c.response.clone(),
            scenario: c.scenario.clone(),
            cores: c.cores,
            load: c.load_label.clone(),
            host: String::new(),
            protocol: c.protocol.clone(),
            step: c.step.clone().unwrap_or_default(),
        }
    }

    /// `server mode/response`, and ` over h2c` (or h2) for a case spoken
    /// to in HTTP/2: the name of a bar or a line; a URL case's name alone
    /// (it has no mode or response shape). HTTP/1.1, every case's protocol
    /// before HTTP/2 was measured, is the unnamed default.
    pub fn variant_label(&self) -> String {
        if !self.step.is_empty() {
            // A ladder's rung first, as in the plan's labels: tables list
            // the rungs of one server as rows of their own.
            let rest = CaseKey {
                step: String::new(),
                ..self.clone()
            };
            return format!("[{}] {}", self.step, rest.variant_label());
        }
        if self.is_url() {
            return format!("{}{}", self.server, protocol_label(&self.protocol));
        }
        format!(
            "{} {}/{}{}",
            self.server,
            self.mode,
            self.response,
            protocol_label(&self.protocol)
        )
    }

    /// `scenario · 2 cores · closed c=50 t=1`: what a set of bars shares;
    /// for a URL case, its load; a ladder's rung first, `step warm-up · …`.
    pub fn context(&self) -> String {
        if !self.step.is_empty() {
            let rest = CaseKey {
                step: String::new(),
                ..self.clone()
            };
            return format!("step {} · {}", self.step, rest.context());
        }
        let on = if self.host.is_empty() {
            String::new()
        } else {
            format!(" · on {}", self.host)
        };
        if self.is_url() {
            return format!("{}{on}", self.load);
        }
        let over = match self.protocol.as_str() {
            "" | "http/1.1" => String::new(),
            p => format!(" · {p}"),
        };
        format!(
            "{}{over} · {} · {}{on}",
            self.scenario,
            cores_label(self.cores),
            self.load
        )
    }

    /// Measured at a URL (super::url_case): no mode, no cores.
    pub fn is_url(&self) -> bool {
        self.cores == 0 && self.mode == "-"
    }

    /// The whole key on one line.
    pub fn label(&self) -> String {
        format!("{} — {}", self.variant_label(), self.context())
    }
}

/// " over h2c" / " over h2"; nothing for HTTP/1.1 (or a row without one).
pub fn protocol_label(protocol: &str) -> String {
    if protocol.is_empty() || protocol == "http/1.1" {
        String::new()
    } else {
        format!(" over {protocol}")
    }
}

pub fn cores_label(n: i64) -> String {
    if n == 1 {
        "1 core".into()
    } else {
        format!("{n} cores")
    }
}
