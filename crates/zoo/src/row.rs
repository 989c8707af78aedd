//! The comparison table's row: one per checked case, with the numbers that
//! make servers comparable (bytes, headers, framing, Date, reachability).

use serde::Serialize;

use crate::fetch::{Framing, RawResponse};
use crate::manifest::ResponseKind;
use crate::rule::{worst, Grade, Rule, RuleResult};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DateState {
    Fresh,
    /// Present but stale, in the future, or not an HTTP date.
    Stale,
    Missing,
}

#[derive(Debug, Clone, Serialize)]
pub struct ComparisonRow {
    pub server: String,
    pub mode: String,
    pub response: ResponseKind,
    pub scenario: String,
    pub protocol: crate::Protocol,
    pub status: u16,
    /// In the order sent, case preserved.
    pub header_names: Vec<String>,
    /// Status line, headers and the blank line; for HTTP/2 the HEADERS and
    /// CONTINUATION frames, frame headers included.
    pub header_bytes: usize,
    /// HTTP/2: the HPACK-encoded header block of a first answer, and of the
    /// same answer again on the connection (the dynamic table warm).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub header_block: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub header_block_repeat: Option<usize>,
    /// HTTP/2: the same server's HTTP/1.1 `header_bytes` for this variant
    /// and scenario, when that was checked too.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http1_header_bytes: Option<usize>,
    /// The body as sent, chunk framing included (HTTP/2: DATA frames).
    pub body_bytes: usize,
    /// The body without chunk framing.
    pub payload_bytes: usize,
    pub total_bytes: usize,
    pub framing: Framing,
    pub date: DateState,
    pub ipv4: bool,
    pub ipv6: bool,
    /// `total_bytes` minus the reference server's for the same response
    /// kind and scenario, when the reference was checked.
    pub vs_reference: Option<i64>,
    /// The worst grade of the case.
    pub grade: Grade,
}

impl ComparisonRow {
    pub fn variant(&self) -> String {
        format!("{}/{}", self.mode, self.response)
    }

    /// Builds a row from the response the rules were graded on.
    pub fn new(
        case: (&str, &str, ResponseKind, &str),
        r: &RawResponse,
        rules: &[RuleResult],
        ipv4: bool,
        ipv6: bool,
    ) -> Self {
        let (server, mode, response, scenario) = case;
        let date = if r.header("date").is_none() {
            DateState::Missing
        } else if rules
            .iter()
            .any(|x| x.rule == Rule::DateFresh && x.grade == Grade::Pass)
        {
            DateState::Fresh
        } else {
            DateState::Stale
        };
        ComparisonRow {
            server: server.to_string(),
            mode: mode.to_string(),
            response,
            scenario: scenario.to_string(),
            protocol: r.protocol,
            status: r.status,
            header_names: r
                .headers
                .iter()
                .map(|h| fairbench_sys::text::visible(&h.name))
                .collect(),
            header_bytes: r.head_len,
            header_block: r
                .h2
                .as_ref()
                .map(|w| w.header_block)
                .or(r.h3.as_ref().map(|w| w.header_block)),
            // QPACK with no dynamic table (fairbench announces capacity 0,
            // under load too): a repeated answer is encoded as the first.
            header_block_repeat: r
                .h2
                .as_ref()
                .and_then(|w| w.header_block_repeat)
                .or(r.h3.as_ref().map(|w| w.header_block)),
            http1_header_bytes: None,
            body_bytes: r.wire_body_len(),
            payload_bytes: r.body.len(),
            total_bytes: r.bytes.len(),
            framing: r.framing,
            date,
            ipv4,
            ipv6,
            vs_reference: None,
            grade: worst(rules),
        }
    }
}
