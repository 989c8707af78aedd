//! One server, two protocols: its HTTP/2 or HTTP/3 answer compared field
//! for field with its HTTP/1.1 answer for the same variant and scenario
//! (the `http1-fields` rule), and the HTTP/1.1 header bytes set beside the
//! HTTP/2 header block (HTTP/3 field section) in the row.

use crate::contract::CONNECTION_SPECIFIC;
use crate::fetch::RawResponse;
use crate::parity::CaseReport;
use crate::rule::{worst, Grade, Rule, RuleResult};
use crate::Protocol;

/// For every HTTP/2 and HTTP/3 case whose server was also checked over
/// HTTP/1.1.
pub fn apply_http1_fields(cases: &mut [CaseReport]) {
    let http1: Vec<(String, String, String, usize, RawResponse)> = cases
        .iter()
        .filter(|c| c.protocol == Protocol::Http1)
        .filter_map(|c| {
            Some((
                c.server.clone(),
                c.variant.clone(),
                c.scenario.clone(),
                c.row.as_ref()?.header_bytes,
                c.response.clone()?,
            ))
        })
        .collect();
    for case in cases.iter_mut().filter(|c| c.protocol.is_framed()) {
        let Some((.., h1_bytes, h1)) = http1
            .iter()
            .find(|(s, v, sc, ..)| *s == case.server && *v == case.variant && *sc == case.scenario)
        else {
            continue;
        };
        let Some(h2) = case.response.as_ref() else {
            continue;
        };
        let result = compare(h1, h2);
        if let Some(row) = case.row.as_mut() {
            row.http1_header_bytes = Some(*h1_bytes);
        }
        case.rules.push(result);
        case.grade = worst(&case.rules);
        if let Some(row) = case.row.as_mut() {
            row.grade = case.grade;
        }
    }
}

/// The HTTP/2 (or HTTP/3) answer against the HTTP/1.1 one: status, body,
/// and each field by name. HTTP/1.1's connection-specific fields, a
/// Content-Length HTTP/2 did not need, and the Date's value (a clock) are
/// expected to differ; anything else is a warning that names it.
pub fn compare(h1: &RawResponse, h2: &RawResponse) -> RuleResult {
    let over = if h2.protocol == Protocol::H3 {
        "HTTP/3"
    } else {
        "HTTP/2"
    };
    let mut diffs = Vec::new();
    if h1.status != h2.status {
        diffs.push(format!("status {} vs {}", h2.status, h1.status));
    }
    if h1.body != h2.body {
        if h1.body.len() == h2.body.len() {
            // A dynamic body (the time) changes between the two fetches:
            // only its digits may differ.
            let same_shape = h2
                .body
                .iter()
                .zip(&h1.body)
                .all(|(a, b)| a == b || (a.is_ascii_digit() && b.is_ascii_digit()));
            if !same_shape {
                diffs.push(format!("body differs ({} bytes each)", h2.body.len()));
            }
        } else {
            diffs.push(format!("body {} vs {} bytes", h2.body.len(), h1.body.len()));
        }
    }
    let lower = |r: &RawResponse| -> Vec<(String, Vec<u8>)> {
        r.headers
            .iter()
            .map(|h| (h.name.to_ascii_lowercase(), h.value.clone()))
            .collect()
    };
    let (f1, f2) = (lower(h1), lower(h2));
    let has = |fs: &[(String, Vec<u8>)], n: &str| fs.iter().any(|(x, _)| x == n);
    let mut dropped = Vec::new();
    let mut only_h1 = Vec::new();
    for (name, _) in &f1 {
        if has(&f2, name) || dropped.contains(name) || only_h1.contains(name) {
            continue;
        }
        if CONNECTION_SPECIFIC.contains(&name.as_str()) || name == "content-length" {
            dropped.push(name.clone());
        } else {
            only_h1.push(name.clone());
        }
    }
    let mut only_h2: Vec<String> = f2
        .iter()
        .filter(|(n, _)| !has(&f1, n))
        .map(|(n, _)| n.clone())
        .collect();
    only_h2.dedup();
    let mut changed = Vec::new();
    for (name, v2) in &f2 {
        if name == "date" || changed.contains(name) {
            continue;
        }
        if let Some((_, v1)) = f1.iter().find(|(n, _)| n == name) {
            if v1 != v2 {
                changed.push(name.clone());
            }
        }
    }
    let vis = |v: &[String]| fairbench_sys::text::visible(&v.join(", "));
    if !only_h1.is_empty() {
        diffs.push(format!("only over HTTP/1.1: {}", vis(&only_h1)));
    }
    if !only_h2.is_empty() {
        diffs.push(format!("only over {over}: {}", vis(&only_h2)));
    }
    if !changed.is_empty() {
        diffs.push(format!("other value: {}", vis(&changed)));
    }
    let expected = if dropped.is_empty() {
        String::new()
    } else {
        format!(" ({over} needs none of HTTP/1.1's {})", vis(&dropped))
    };
    if diffs.is_empty() {
        RuleResult::new(
            Rule::Http1Fields,
            Grade::Pass,
            format!("same status, fields and body as over HTTP/1.1{expected}"),
        )
    } else {
        RuleResult::new(
            Rule::Http1Fields,
            Grade::Warn,
            format!("{}{expected}", diffs.join("; ")),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fetch::{parse, Framing, Header};

    fn h2(headers: &[(&str, &str)], body: &[u8]) -> RawResponse {
        let mut r = parse(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n").unwrap();
        r.protocol = Protocol::H2c;
        r.version = 2;
        r.framing = Framing::H2Frames;
        r.headers = headers
            .iter()
            .map(|(n, v)| Header {
                name: n.to_string(),
                value: v.as_bytes().to_vec(),
            })
            .collect();
        r.body = body.to_vec();
        r
    }

    const NODE: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\nDate: Thu, 26 Nov 2026 10:00:00 GMT\r\nConnection: keep-alive\r\nKeep-Alive: timeout=5\r\nContent-Length: 13\r\n\r\nHello World!\n";

    #[test]
    fn connection_fields_and_an_unneeded_length_may_go_anything_else_is_named() {
        let h1 = parse(NODE).unwrap();
        let same = h2(
            &[
                ("content-type", "text/plain; charset=utf-8"),
                ("date", "Thu, 26 Nov 2026 10:00:01 GMT"),
            ],
            b"Hello World!\n",
        );
        let r = compare(&h1, &same);
        assert_eq!(r.grade, Grade::Pass, "{}", r.detail);
        assert!(
            r.detail.contains(
                "(HTTP/2 needs none of HTTP/1.1's connection, keep-alive, content-length)"
            ),
            "{}",
            r.detail
        );
        let other = h2(
            &[
                ("content-type", "text/plain"),
                ("x-powered-by", "x"),
                ("content-length", "13"),
            ],
            b"Hello World?\n",
        );
        let r = compare(&h1, &other);
        assert_eq!(r.grade, Grade::Warn);
        assert_eq!(
            r.detail,
            "body differs (13 bytes each); only over HTTP/1.1: date; only over HTTP/2: x-powered-by; other value: content-type (HTTP/2 needs none of HTTP/1.1's connection, keep-alive)"
        );
    }

    #[test]
    fn a_dynamic_body_of_the_same_shape_is_the_same_body() {
        let h1 = parse(
            b"HTTP/1.1 200 OK\r\nContent-Length: 33\r\n\r\nThe time is 2026-11-26T10:00:00Z\n",
        )
        .unwrap();
        let later = h2(&[], b"The time is 2026-11-26T10:00:01Z\n");
        assert_eq!(compare(&h1, &later).grade, Grade::Pass);
        let shorter = h2(&[], b"The time is 10:00:01Z\n");
        assert!(compare(&h1, &shorter)
            .detail
            .starts_with("body 22 vs 33 bytes"));
    }
}
