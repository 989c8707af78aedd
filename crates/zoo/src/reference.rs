//! The byte-for-byte comparison of normalized variants with the reference
//! server: each row's size against the reference's, and the
//! `reference-bytes` rule.

use crate::contract::{apply_deviation, header_line_len, GradeContext};
use crate::manifest::{DeviationTarget, ResponseKind};
use crate::parity::CaseReport;
use crate::row::ComparisonRow;
use crate::rule::{worst, Grade, Rule, RuleResult};

/// The server every `normalized` variant must match byte for byte.
pub const REFERENCE_SERVER: &str = "go-nethttp";

/// Fills `vs_reference` of every row and grades `reference-bytes` for every
/// normalized case but the reference's own. Does nothing for a scenario whose
/// reference case has no row (not checked, or it failed to answer).
pub fn apply_reference(cases: &mut [CaseReport], reference: &str) {
    let refs: Vec<Reference> = cases
        .iter()
        .filter(|c| c.server == reference)
        .filter_map(|c| {
            Some(Reference {
                scenario: c.scenario.clone(),
                kind: c.response_kind,
                protocol: c.protocol,
                row: c.row.clone()?,
                headers: c
                    .response
                    .as_ref()
                    .map(|r| r.headers.iter().map(|h| h.name.clone()).collect())
                    .unwrap_or_default(),
            })
        })
        .collect();
    for case in cases.iter_mut() {
        let Some(rf) = refs.iter().find(|r| {
            r.scenario == case.scenario
                && r.kind == case.response_kind
                && r.protocol == case.protocol
        }) else {
            continue;
        };
        let Some(row) = case.row.as_mut() else {
            continue;
        };
        let diff = row.total_bytes as i64 - rf.row.total_bytes as i64;
        row.vs_reference = Some(diff);
        if case.server == reference || case.response_kind != ResponseKind::Normalized {
            continue;
        }
        let result = reference_rule(case, rf, diff);
        let ctx = GradeContext {
            response: case.response_kind,
            deviations: &case.deviations,
            now: std::time::SystemTime::now(),
        };
        let result = apply_deviation(result, &ctx);
        case.rules.push(result);
        case.grade = worst(&case.rules);
        if let Some(row) = case.row.as_mut() {
            row.grade = case.grade;
        }
    }
}

/// The reference server's answer for one scenario and response kind.
struct Reference {
    scenario: String,
    kind: ResponseKind,
    protocol: crate::Protocol,
    row: ComparisonRow,
    /// Header names as sent.
    headers: Vec<String>,
}

fn reference_rule(case: &CaseReport, rf: &Reference, diff: i64) -> RuleResult {
    let Some(row) = case.row.as_ref() else {
        return RuleResult::new(Rule::ReferenceBytes, Grade::Fail, "no response");
    };
    if let Some(same) = same_size(case, row, &rf.row, diff) {
        return same;
    }
    let beside = Beside::new(case, row, rf);
    beside
        .h2_same_fields()
        .unwrap_or_else(|| beside.bytes(diff))
}

/// A pass when the sizes match: the whole answer's, or only the headers'
/// when the body holds the database's values.
fn same_size(
    case: &CaseReport,
    row: &ComparisonRow,
    rref: &ComparisonRow,
    diff: i64,
) -> Option<RuleResult> {
    let who = &rref.server;
    if case.body_varies && compressed(case) {
        // Each compressor and level makes its own size, and its own
        // Content-Length digits: the headers are compared without those.
        let digits = |n: usize| n.to_string().len() as i64;
        let dh = row.header_bytes as i64 - rref.header_bytes as i64;
        let dh = dh - (digits(row.body_bytes) - digits(rref.body_bytes));
        if dh == 0 {
            return Some(RuleResult::new(
                Rule::ReferenceBytes,
                Grade::Pass,
                format!(
                    "headers {} bytes, as {who}'s but for the Content-Length digits; the compressed body {} bytes vs {who}'s {}, a difference of compressors and levels, allowed (the decoded body is graded by `body`)",
                    row.header_bytes, row.body_bytes, rref.body_bytes
                ),
            ));
        }
    } else if case.body_varies {
        let dh = row.header_bytes as i64 - rref.header_bytes as i64;
        if dh == 0 {
            return Some(RuleResult::new(
                Rule::ReferenceBytes,
                Grade::Pass,
                format!(
                    "headers {} bytes, same as {who}'s (the body holds the database's values: the db rules grade it)",
                    row.header_bytes
                ),
            ));
        }
    } else if diff == 0 {
        return Some(RuleResult::new(
            Rule::ReferenceBytes,
            Grade::Pass,
            format!("{} bytes, same as {who}", row.total_bytes),
        ));
    }
    None
}

/// Whether the case's answer is compressed: its body's size is then its
/// compressor's and level's, an allowed difference (docs/scenarios.md).
fn compressed(case: &CaseReport) -> bool {
    case.body_varies
        && case
            .response
            .as_ref()
            .is_some_and(|r| r.header("content-encoding").is_some())
}

/// A normalized case's answer beside the reference's, header by header.
struct Beside<'a> {
    case: &'a CaseReport,
    row: &'a ComparisonRow,
    rref: &'a ComparisonRow,
    /// The names of the fields it sends and the reference does not.
    extra_names: Vec<String>,
    /// The names of the reference's fields it does not send, made visible.
    missing_names: Vec<String>,
}

impl<'a> Beside<'a> {
    fn new(case: &'a CaseReport, row: &'a ComparisonRow, rf: &'a Reference) -> Self {
        let extra_names: Vec<String> = row
            .header_names
            .iter()
            .filter(|n| !rf.headers.iter().any(|r| r.eq_ignore_ascii_case(n)))
            .cloned()
            .collect();
        let missing_names: Vec<String> = rf
            .headers
            .iter()
            .filter(|r| !row.header_names.iter().any(|n| n.eq_ignore_ascii_case(r)))
            .map(|r| fairbench_sys::text::visible(r))
            .collect();
        Beside {
            case,
            row,
            rref: &rf.row,
            extra_names,
            missing_names,
        }
    }

    /// Content-Length is optional over HTTP/2 (the stream's end ends the
    /// body): sending it or not is no difference in the fields promised.
    fn optional(&self, n: &str) -> bool {
        self.case.protocol.is_framed() && n.eq_ignore_ascii_case("content-length")
    }

    fn documented_header(&self, n: &str) -> bool {
        self.case
            .deviations
            .iter()
            .any(|d| matches!(&d.target, DeviationTarget::Header(x) if x.eq_ignore_ascii_case(n)))
    }

    /// HPACK leaves the encoding to the encoder (Huffman or not, which
    /// fields to index): over HTTP/2 the promise is the same fields and
    /// body, and the header block sizes are shown, not graded. None when
    /// that promise is not kept (or over HTTP/1.1).
    fn h2_same_fields(&self) -> Option<RuleResult> {
        let (row, rref, who) = (self.row, self.rref, &self.rref.server);
        // Over HTTP/2 an extra field the manifest declares is what it is over
        // HTTP/1.1, a known deviation (warn): its cost in the header block
        // depends on the encoder, so it is named, not counted in bytes.
        let same = self.case.protocol.is_framed()
            && self
                .extra_names
                .iter()
                .all(|n| self.optional(n) || self.documented_header(n))
            && self.missing_names.iter().all(|n| self.optional(n))
            && (compressed(self.case) || row.payload_bytes == rref.payload_bytes);
        if !same {
            return None;
        }
        let block = |r: &ComparisonRow| {
            r.header_block
                .map(|b| b.to_string())
                .unwrap_or_else(|| "?".into())
        };
        let known: Vec<&str> = self
            .extra_names
            .iter()
            .filter(|n| !self.optional(n))
            .map(|n| n.as_str())
            .collect();
        let codec = if self.case.protocol == crate::Protocol::H3 {
            "QPACK field section"
        } else {
            "HPACK header block"
        };
        let mut sizes = format!(
            "{codec} {} vs {} bytes (each encoder chooses its own encoding)",
            block(row),
            block(rref)
        );
        if compressed(self.case) {
            sizes.push_str(&format!(
                "; the compressed body {} vs {} bytes, a difference of compressors and levels, allowed",
                row.payload_bytes, rref.payload_bytes
            ));
        }
        Some(if known.is_empty() {
            RuleResult::new(
                Rule::ReferenceBytes,
                Grade::Pass,
                format!("same fields and body as {who}; {sizes}"),
            )
        } else {
            RuleResult::new(
                Rule::ReferenceBytes,
                Grade::Warn,
                format!(
                    "the fields and body of {who} plus {}, all from known deviations; {sizes}",
                    known.join(", ")
                ),
            )
        })
    }

    /// The sizes that differ by `diff` bytes, and the field names that
    /// differ: a warning when the documented extra headers are exactly
    /// the difference, else a failure.
    fn bytes(&self, diff: i64) -> RuleResult {
        let (row, rref, who) = (self.row, self.rref, &self.rref.server);
        let mut parts = vec![format!(
            "{} bytes vs {who}'s {} ({diff:+}): headers {} vs {}, body {} vs {}",
            row.total_bytes,
            rref.total_bytes,
            row.header_bytes,
            rref.header_bytes,
            row.body_bytes,
            rref.body_bytes
        )];
        if !self.extra_names.is_empty() {
            parts.push(format!("extra {}", self.extra_names.join(", ")));
        }
        if !self.missing_names.is_empty() {
            parts.push(format!("missing {}", self.missing_names.join(", ")));
        }
        let detail = parts.join("; ");
        // The difference is exactly the documented extra headers: warn, not fail.
        let documented: usize = self
            .case
            .response
            .as_ref()
            .map(|r| {
                r.headers
                    .iter()
                    .filter(|h| self.documented_header(&h.name))
                    .map(|h| header_line_len(&h.name, &h.value))
                    .sum()
            })
            .unwrap_or(0);
        if documented > 0 && diff == documented as i64 {
            RuleResult::new(
                Rule::ReferenceBytes,
                Grade::Warn,
                format!("{detail}; all from known deviations"),
            )
        } else {
            RuleResult::new(Rule::ReferenceBytes, Grade::Fail, detail)
        }
    }
}
