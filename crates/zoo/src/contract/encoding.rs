//! A compressed answer (`expect.content_encoding`): the coding it says, the
//! body it decodes to, and `Vary: Accept-Encoding`. The body rule grades the
//! decoded body; the bytes on the wire stay what the row counts.

use std::borrow::Cow;
use std::io::Read;

use crate::fetch::{RawResponse, MAX_RESPONSE};
use crate::rule::{Grade, Rule, RuleResult};
use crate::scenario::Scenario;

use super::GradeContext;

/// The body as the scenario grades it: decoded when the scenario expects a
/// coding and the answer carries it, else as it arrived (its coding rule
/// then fails).
pub struct Decoded<'r> {
    pub body: Cow<'r, [u8]>,
    /// Why a body that said it was compressed did not decode.
    pub error: Option<String>,
}

/// Decodes `r`'s body when `scenario` expects a coding and `r` says it used
/// that one.
pub fn decode<'r>(scenario: &Scenario, r: &'r RawResponse) -> Decoded<'r> {
    let as_sent = Decoded {
        body: Cow::Borrowed(&r.body),
        error: None,
    };
    let Some(want) = scenario.expect.content_encoding.as_deref() else {
        return as_sent;
    };
    if coding(r).as_deref() != Some(want) {
        return as_sent;
    }
    // A gzip bomb must not make the check buffer without bound.
    let mut out = Vec::new();
    let mut d = flate2::read::GzDecoder::new(&r.body[..]).take(MAX_RESPONSE as u64 + 1);
    match d.read_to_end(&mut out) {
        Ok(_) if out.len() > MAX_RESPONSE => Decoded {
            body: Cow::Borrowed(&r.body),
            error: Some(format!("decodes to more than {MAX_RESPONSE} bytes")),
        },
        Ok(_) => Decoded {
            body: Cow::Owned(out),
            error: None,
        },
        Err(e) => Decoded {
            body: Cow::Borrowed(&r.body),
            error: Some(format!("is not a valid {want} stream ({e})")),
        },
    }
}

/// The answer's `Content-Encoding`, lowercased and trimmed; repeated
/// fields joined as a list.
fn coding(r: &RawResponse) -> Option<String> {
    let all: Vec<String> = r
        .headers_named("content-encoding")
        .map(|h| h.value_str().trim().to_ascii_lowercase())
        .collect();
    (!all.is_empty()).then(|| all.join(", "))
}

/// `content-encoding` and `vary`, for a scenario that expects a coding.
pub fn grade(
    scenario: &Scenario,
    r: &RawResponse,
    decoded: &Decoded,
    ctx: &GradeContext,
) -> Vec<RuleResult> {
    let Some(want) = scenario.expect.content_encoding.as_deref() else {
        return Vec::new();
    };
    let asked = scenario
        .headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("accept-encoding"))
        .map(|(n, v)| format!(" although the request said `{n}: {v}`"))
        .unwrap_or_default();
    let wire = r.body.len();
    let coding_rule = match (coding(r), &decoded.error) {
        (None, _) => RuleResult::new(
            Rule::ContentEncoding,
            Grade::Fail,
            format!(
                "missing; expected `{want}`: the body was sent uncompressed ({wire} bytes){asked}"
            ),
        ),
        (Some(got), _) if got != want => RuleResult::new(
            Rule::ContentEncoding,
            Grade::Fail,
            format!(
                "`{}`; expected `{want}`",
                fairbench_sys::text::visible(&got)
            ),
        ),
        (Some(_), Some(why)) => RuleResult::new(
            Rule::ContentEncoding,
            Grade::Fail,
            format!("{want}, but the {wire}-byte body {why}"),
        ),
        (Some(_), None) => RuleResult::new(
            Rule::ContentEncoding,
            Grade::Pass,
            format!(
                "{want}: {wire} bytes on the wire for {} decoded ({:.0}%)",
                decoded.body.len(),
                100.0 * wire as f64 / decoded.body.len().max(1) as f64
            ),
        ),
    };
    vec![coding_rule, vary(r, ctx)]
}

/// `Vary` names `Accept-Encoding` (or is `*`): a cache must not hand the
/// compressed answer to a client that did not ask for it. RFC 9110
/// §12.5.5 says SHOULD, so `default` only warns.
fn vary(r: &RawResponse, ctx: &GradeContext) -> RuleResult {
    let values: Vec<String> = r.headers_named("vary").map(|h| h.value_str()).collect();
    let names = values.iter().flat_map(|v| v.split(',')).map(str::trim);
    let mut names = names.filter(|n| !n.is_empty());
    if names.any(|n| n == "*" || n.eq_ignore_ascii_case("accept-encoding")) {
        return RuleResult::new(Rule::Vary, Grade::Pass, "names Accept-Encoding");
    }
    let found = if values.is_empty() {
        "no Vary header".to_string()
    } else {
        format!(
            "`Vary: {}`",
            fairbench_sys::text::visible(&values.join(", "))
        )
    };
    RuleResult::new(
        Rule::Vary,
        ctx.strict(),
        format!(
            "{found}: a compressed answer should say `Vary: Accept-Encoding` (RFC 9110 §12.5.5)"
        ),
    )
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::path::Path;
    use std::time::SystemTime;

    use super::*;
    use crate::fetch::parse;
    use crate::manifest::{Deviation, DeviationTarget, ResponseKind};

    const TEXT: &str = "a text that compresses, a text that compresses, a text\n";

    fn scenario() -> Scenario {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("text.txt"), TEXT).unwrap();
        let f = dir.path().join("gzip.toml");
        std::fs::write(
            &f,
            "name = \"gzip\"\nmethod = \"GET\"\npath = \"/gzip\"\n\
             headers = [\"Accept-Encoding: gzip\"]\n[expect]\nstatus = 200\n\
             content_type = \"text/plain; charset=utf-8\"\n\
             required_headers = [\"Date\", \"Content-Type\", \"Content-Length\", \"Content-Encoding\"]\n\
             forbid_chunked = true\ncontent_encoding = \"gzip\"\nbody_file = \"text.txt\"\n",
        )
        .unwrap();
        Scenario::load(&f, Path::new("scenarios/gzip.toml")).unwrap()
    }

    fn gz(b: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(b).unwrap();
        e.finish().unwrap()
    }

    /// An answer with Go's headers, these extra ones and `body`.
    fn answer(extra: &str, body: &[u8], now: SystemTime) -> RawResponse {
        let mut bytes = format!(
            "HTTP/1.1 200 OK\r\n{extra}Content-Length: {}\r\nContent-Type: text/plain; charset=utf-8\r\nDate: {}\r\n\r\n",
            body.len(),
            httpdate::fmt_http_date(now)
        )
        .into_bytes();
        bytes.extend_from_slice(body);
        parse(&bytes).unwrap()
    }

    fn failing(
        kind: ResponseKind,
        r: &RawResponse,
        deviations: &[Deviation],
    ) -> Vec<(Rule, Grade)> {
        let ctx = GradeContext {
            response: kind,
            deviations,
            now: SystemTime::now(),
        };
        super::super::grade(&scenario(), r, &ctx)
            .into_iter()
            .filter(|x| x.grade != Grade::Pass)
            .map(|x| (x.rule, x.grade))
            .collect()
    }

    const GZIP: &str = "Content-Encoding: gzip\r\nVary: Accept-Encoding\r\n";

    #[test]
    fn a_compressed_answer_is_graded_decoded() {
        let now = SystemTime::now();
        let r = answer(GZIP, &gz(TEXT.as_bytes()), now);
        for kind in ResponseKind::ALL {
            assert_eq!(failing(kind, &r, &[]), vec![], "{kind}");
        }
        let ctx = GradeContext {
            response: ResponseKind::Normalized,
            deviations: &[],
            now,
        };
        let rs = super::super::grade(&scenario(), &r, &ctx);
        let ce = rs.iter().find(|x| x.rule == Rule::ContentEncoding).unwrap();
        assert!(
            ce.detail.contains(&format!("for {} decoded", TEXT.len())),
            "{}",
            ce.detail
        );
    }

    #[test]
    fn a_wrong_body_fails_after_decoding() {
        let r = answer(GZIP, &gz(b"another text\n"), SystemTime::now());
        assert_eq!(
            failing(ResponseKind::Default, &r, &[]),
            vec![(Rule::Body, Grade::Fail)]
        );
    }

    #[test]
    fn compressed_bytes_without_content_encoding_fail_both() {
        let r = answer(
            "Vary: Accept-Encoding\r\n",
            &gz(TEXT.as_bytes()),
            SystemTime::now(),
        );
        assert_eq!(
            failing(ResponseKind::Normalized, &r, &[]),
            vec![
                (Rule::Body, Grade::Fail),
                (Rule::ContentEncoding, Grade::Fail),
                (Rule::RequiredHeaders, Grade::Fail)
            ]
        );
    }

    #[test]
    fn an_uncompressed_answer_fails_content_encoding_only() {
        let r = answer(
            "Vary: Accept-Encoding\r\n",
            TEXT.as_bytes(),
            SystemTime::now(),
        );
        let f = failing(ResponseKind::Default, &r, &[]);
        assert_eq!(
            f,
            vec![
                (Rule::ContentEncoding, Grade::Fail),
                (Rule::RequiredHeaders, Grade::Fail)
            ]
        );
        let ctx = GradeContext {
            response: ResponseKind::Default,
            deviations: &[],
            now: SystemTime::now(),
        };
        let rs = super::super::grade(&scenario(), &r, &ctx);
        let ce = rs.iter().find(|x| x.rule == Rule::ContentEncoding).unwrap();
        assert!(ce.detail.contains("sent uncompressed"), "{}", ce.detail);
        assert!(ce.detail.contains("Accept-Encoding: gzip"), "{}", ce.detail);
    }

    #[test]
    fn a_body_that_is_not_gzip_fails_content_encoding_and_body() {
        let r = answer(GZIP, b"not gzip at all", SystemTime::now());
        assert_eq!(
            failing(ResponseKind::Default, &r, &[]),
            vec![
                (Rule::Body, Grade::Fail),
                (Rule::ContentEncoding, Grade::Fail)
            ]
        );
        let r = answer(
            "Content-Encoding: br\r\nVary: Accept-Encoding\r\n",
            TEXT.as_bytes(),
            SystemTime::now(),
        );
        assert_eq!(
            failing(ResponseKind::Default, &r, &[]),
            vec![(Rule::ContentEncoding, Grade::Fail)]
        );
    }

    #[test]
    fn a_missing_vary_is_strict_for_normalized_and_can_be_a_known_deviation() {
        let r = answer(
            "Content-Encoding: gzip\r\n",
            &gz(TEXT.as_bytes()),
            SystemTime::now(),
        );
        assert_eq!(
            failing(ResponseKind::Default, &r, &[]),
            vec![(Rule::Vary, Grade::Warn)]
        );
        assert_eq!(
            failing(ResponseKind::Normalized, &r, &[]),
            vec![(Rule::Vary, Grade::Fail)]
        );
        let known = [Deviation {
            target: DeviationTarget::Rule(Rule::Vary),
            reason: "the framework cannot".into(),
            scenario: None,
        }];
        assert_eq!(
            failing(ResponseKind::Normalized, &r, &known),
            vec![(Rule::Vary, Grade::Warn)]
        );
        let star = answer(
            "Content-Encoding: gzip\r\nVary: *\r\n",
            &gz(TEXT.as_bytes()),
            SystemTime::now(),
        );
        assert_eq!(failing(ResponseKind::Normalized, &star, &[]), vec![]);
    }
}
