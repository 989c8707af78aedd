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
    let rref = &rf.row;
    let who = &rref.server;
    if case.body_varies {
        let dh = row.header_bytes as i64 - rref.header_bytes as i64;
        if dh == 0 {
            return RuleResult::new(
                Rule::ReferenceBytes,
                Grade::Pass,
                format!(
                    "headers {} bytes, same as {who}'s (the body holds the database's values: the db rules grade it)",
                    row.header_bytes
                ),
            );
        }
    } else if diff == 0 {
        return RuleResult::new(
            Rule::ReferenceBytes,
            Grade::Pass,
            format!("{} bytes, same as {who}", row.total_bytes),
        );
    }
    let resp = case.response.as_ref();
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
    // HPACK leaves the encoding to the encoder (Huffman or not, which
    // fields to index): over HTTP/2 the promise is the same fields and
    // body, and the header block sizes are shown, not graded.
    // Content-Length is optional over HTTP/2 (the stream's end ends the
    // body): sending it or not is no difference in the fields promised.
    let optional = |n: &String| case.protocol.is_h2() && n.eq_ignore_ascii_case("content-length");
    let documented_header = |n: &String| {
        case.deviations
            .iter()
            .any(|d| matches!(&d.target, DeviationTarget::Header(x) if x.eq_ignore_ascii_case(n)))
    };
    // Over HTTP/2 an extra field the manifest declares is what it is over
    // HTTP/1.1, a known deviation (warn): its cost in the header block
    // depends on the encoder, so it is named, not counted in bytes.
    if case.protocol.is_h2()
        && extra_names
            .iter()
            .all(|n| optional(n) || documented_header(n))
        && missing_names.iter().all(optional)
        && row.payload_bytes == rref.payload_bytes
    {
        let block = |r: &ComparisonRow| {
            r.header_block
                .map(|b| b.to_string())
                .unwrap_or_else(|| "?".into())
        };
        let known: Vec<&str> = extra_names
            .iter()
            .filter(|n| !optional(n))
            .map(|n| n.as_str())
            .collect();
        let sizes = format!(
            "HPACK header block {} vs {} bytes (each encoder chooses its own encoding)",
            block(row),
            block(rref)
        );
        return if known.is_empty() {
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
        };
    }
    let mut parts = vec![format!(
        "{} bytes vs {who}'s {} ({diff:+}): headers {} vs {}, body {} vs {}",
        row.total_bytes,
        rref.total_bytes,
        row.header_bytes,
        rref.header_bytes,
        row.body_bytes,
        rref.body_bytes
    )];
    if !extra_names.is_empty() {
        parts.push(format!("extra {}", extra_names.join(", ")));
    }
    if !missing_names.is_empty() {
        parts.push(format!("missing {}", missing_names.join(", ")));
    }
    let detail = parts.join("; ");
    // The difference is exactly the documented extra headers: warn, not fail.
    let documented: usize = resp
        .map(|r| {
            r.headers
                .iter()
                .filter(|h| documented_header(&h.name))
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
