//! Grading one response against its scenario contract, rule by rule, in the
//! TechEmpower manner: each rule passes, warns or fails with a reason.

use std::net::SocketAddr;
use std::time::{Duration, SystemTime};

use sha2::{Digest, Sha256};

use crate::fetch::{FetchError, Framing, RawResponse};
use crate::manifest::{Deviation, DeviationTarget, ResponseKind};
use crate::rule::{Grade, Rule, RuleResult};
use crate::scenario::{BodyExpect, Scenario};

/// The headers Go's net/http sends for these scenarios, and so the only ones
/// a `normalized` response may carry.
pub const GO_HEADERS: [&str; 3] = ["Content-Length", "Content-Type", "Date"];

/// A Date within this many seconds of our clock is fresh; servers may cache
/// the formatted Date for up to a second.
pub const DATE_FRESH_S: u64 = 3;
/// Beyond this a Date is not merely cached but wrong.
pub const DATE_STALE_S: u64 = 60;

/// What a response is graded as: the variant's response shape and the
/// deviations its manifest documents for it.
#[derive(Debug, Clone, Copy)]
pub struct GradeContext<'a> {
    pub response: ResponseKind,
    pub deviations: &'a [Deviation],
    /// When the response arrived, for the Date check.
    pub now: SystemTime,
}

impl GradeContext<'_> {
    fn normalized(&self) -> bool {
        self.response == ResponseKind::Normalized
    }

    /// Fail for normalized (it promises Go's bytes), warn for default.
    fn strict(&self) -> Grade {
        if self.normalized() {
            Grade::Fail
        } else {
            Grade::Warn
        }
    }

    fn header_deviation(&self, name: &str) -> Option<&Deviation> {
        self.deviations.iter().find(
            |d| matches!(&d.target, DeviationTarget::Header(h) if h.eq_ignore_ascii_case(name)),
        )
    }
}

/// Grades the rules that one response decides: status, body, content-type,
/// content-length, framing, date-present, date-fresh, required-headers and
/// extra-headers (and content-encoding and vary for a compressed answer:
/// its body is graded decoded). Rule deviations are applied.
pub fn grade(scenario: &Scenario, r: &RawResponse, ctx: &GradeContext) -> Vec<RuleResult> {
    let decoded = encoding::decode(scenario, r);
    let mut out = vec![status(scenario, r, ctx), body(scenario, &decoded.body)];
    out.extend(encoding::grade(scenario, r, &decoded, ctx));
    if let Some(ct) = content_type(scenario, r, ctx) {
        out.push(ct);
    }
    out.push(content_length(r));
    out.push(framing(scenario, r));
    out.extend(date(r, ctx));
    if !scenario.expect.required_headers.is_empty() {
        out.push(required_headers(scenario, r));
    }
    out.push(extra_headers(scenario, r, ctx));
    if r.protocol.is_framed() {
        out.push(connection_headers(r));
    }
    apply_deviations(out, ctx)
}

/// `dynamic-changes`: two responses `after` apart must differ.
pub fn grade_changes(
    first: &RawResponse,
    second: &RawResponse,
    after: Duration,
    ctx: &GradeContext,
) -> RuleResult {
    let r = if first.body != second.body {
        RuleResult::new(
            Rule::DynamicChanges,
            Grade::Pass,
            format!("body changed within {:.1}s", after.as_secs_f64()),
        )
    } else {
        RuleResult::new(
            Rule::DynamicChanges,
            Grade::Fail,
            format!(
                "same body twice {:.1}s apart ({}): the response is not computed per request",
                after.as_secs_f64(),
                quote(&first.body, 60)
            ),
        )
    };
    apply_deviation(r, ctx)
}

/// `ipv4` / `ipv6`: did the server answer on that loopback address?
pub fn grade_reachability(
    rule: Rule,
    addr: SocketAddr,
    result: &Result<RawResponse, FetchError>,
    ctx: &GradeContext,
) -> RuleResult {
    let r = match result {
        Ok(resp) => RuleResult::new(
            rule,
            Grade::Pass,
            format!(
                "answered on {addr} ({} {})",
                resp.status,
                fairbench_sys::text::visible(&resp.reason)
            ),
        ),
        Err(e) if e.is_connect() => {
            let why = match rule {
                Rule::Ipv6 => {
                    ": the server bound IPv4 only; bind the any-address ([::] dual-stack)"
                }
                _ => ": the server bound IPv6 only; bind [::] with IPv4-mapped addresses, or both",
            };
            RuleResult::new(rule, Grade::Fail, format!("{e}{why}"))
        }
        Err(e) => RuleResult::new(rule, Grade::Fail, format!("{addr}: {e}")),
    };
    apply_deviation(r, ctx)
}

/// A failure the manifest documents becomes a warn that cites the reason.
pub fn apply_deviation(mut r: RuleResult, ctx: &GradeContext) -> RuleResult {
    if r.grade == Grade::Fail {
        if let Some(d) = ctx
            .deviations
            .iter()
            .find(|d| d.target == DeviationTarget::Rule(r.rule))
        {
            r.grade = Grade::Warn;
            r.detail = format!("{} (known deviation: {})", r.detail, d.reason);
        }
    }
    r
}

fn apply_deviations(rs: Vec<RuleResult>, ctx: &GradeContext) -> Vec<RuleResult> {
    rs.into_iter().map(|r| apply_deviation(r, ctx)).collect()
}

fn canonical_reason(status: u16) -> Option<&'static str> {
    Some(match status {
        200 => "OK",
        201 => "Created",
        204 => "No Content",
        301 => "Moved Permanently",
        302 => "Found",
        304 => "Not Modified",
        400 => "Bad Request",
        404 => "Not Found",
        500 => "Internal Server Error",
        _ => return None,
    })
}

fn status(s: &Scenario, r: &RawResponse, ctx: &GradeContext) -> RuleResult {
    let line = fairbench_sys::text::visible(&r.status_line());
    if r.status != s.expect.status {
        return RuleResult::new(
            Rule::Status,
            Grade::Fail,
            format!("expected {}, got `{line}`", s.expect.status),
        );
    }
    // HTTP/2 and HTTP/3 have a status code and no line or reason phrase
    // to compare.
    if r.protocol.is_framed() {
        return RuleResult::new(Rule::Status, Grade::Pass, line);
    }
    if let Some(reason) = canonical_reason(r.status) {
        let want = format!("HTTP/1.1 {} {reason}", r.status);
        if r.status_line() != want {
            return RuleResult::new(
                Rule::Status,
                ctx.strict(),
                format!("status line `{line}`; Go sends `{want}`"),
            );
        }
    }
    RuleResult::new(Rule::Status, Grade::Pass, line)
}

/// Server bytes as a short escaped quote.
fn quote(b: &[u8], max: usize) -> String {
    let shown = fairbench_sys::text::escape_bytes(&b[..b.len().min(max)]).replace('\n', "");
    let more = if b.len() > max { "…" } else { "" };
    format!("\"{shown}{more}\"")
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn body(s: &Scenario, got: &[u8]) -> RuleResult {
    let n = got.len();
    match &s.expect.body {
        BodyExpect::Exact(want) if got == want.as_slice() => {
            RuleResult::new(Rule::Body, Grade::Pass, format!("{n} bytes, as expected"))
        }
        BodyExpect::Exact(want) => RuleResult::new(
            Rule::Body,
            Grade::Fail,
            format!(
                "expected {} bytes {}, got {n} bytes {}",
                want.len(),
                quote(want, 60),
                quote(got, 60)
            ),
        ),
        BodyExpect::Regex { source, re } => {
            if re.is_match(got) {
                RuleResult::new(
                    Rule::Body,
                    Grade::Pass,
                    format!("{n} bytes {}", quote(got, 60)),
                )
            } else {
                RuleResult::new(
                    Rule::Body,
                    Grade::Fail,
                    format!(
                        "{n} bytes {} do not match /{}/",
                        quote(got, 60),
                        fairbench_sys::text::visible(source)
                    ),
                )
            }
        }
        BodyExpect::File { len, sha256, path } => {
            let digest: [u8; 32] = Sha256::digest(got).into();
            if n as u64 == *len && &digest == sha256 {
                RuleResult::new(
                    Rule::Body,
                    Grade::Pass,
                    format!("{n} bytes, SHA-256 matches {}", file_name(path)),
                )
            } else {
                RuleResult::new(
                    Rule::Body,
                    Grade::Fail,
                    format!(
                        "expected {len} bytes with SHA-256 {}… ({}), got {n} bytes with SHA-256 {}…",
                        &hex(sha256)[..16],
                        file_name(path),
                        &hex(&digest)[..16]
                    ),
                )
            }
        }
    }
}

fn file_name(p: &std::path::Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The media type without parameters, lowercased.
fn media_type(v: &str) -> String {
    v.split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
}

fn content_type(s: &Scenario, r: &RawResponse, ctx: &GradeContext) -> Option<RuleResult> {
    let want = s.expect.content_type.as_deref()?;
    let all: Vec<String> = r
        .headers_named("content-type")
        .map(|h| h.value_str())
        .collect();
    let res = match all.as_slice() {
        [] => RuleResult::new(
            Rule::ContentType,
            Grade::Fail,
            format!("missing; expected `{want}`"),
        ),
        [got] if got.trim() == want => RuleResult::new(Rule::ContentType, Grade::Pass, want),
        [got] if media_type(got) == media_type(want) => RuleResult::new(
            Rule::ContentType,
            ctx.strict(),
            format!(
                "`{}`; expected `{want}` byte for byte",
                fairbench_sys::text::visible(got)
            ),
        ),
        [got] => RuleResult::new(
            Rule::ContentType,
            Grade::Fail,
            format!(
                "`{}` is a different media type than `{want}`",
                fairbench_sys::text::visible(got)
            ),
        ),
        _ => RuleResult::new(
            Rule::ContentType,
            Grade::Fail,
            format!("sent {} times", all.len()),
        ),
    };
    Some(res)
}

fn content_length(r: &RawResponse) -> RuleResult {
    match r.framing {
        // END_STREAM (HTTP/2) or the stream's FIN (HTTP/3) ends the body; a
        // Content-Length, when sent, must match it (RFC 9113 §8.1.1, RFC
        // 9114 §4.1.2; a client treats a mismatch as malformed).
        Framing::H2Frames | Framing::H3Frames => match r.header("content-length") {
            None if r.framing == Framing::H3Frames => RuleResult::new(
                Rule::ContentLength,
                Grade::Pass,
                "absent: HTTP/3 needs none (the stream's end ends the body)",
            ),
            None => RuleResult::new(
                Rule::ContentLength,
                Grade::Pass,
                "absent: HTTP/2 needs none (END_STREAM ends the body)",
            ),
            Some(h) if h.value_str().trim() == r.body.len().to_string() => RuleResult::new(
                Rule::ContentLength,
                Grade::Pass,
                format!("{} = body length", r.body.len()),
            ),
            Some(h) => RuleResult::new(
                Rule::ContentLength,
                Grade::Fail,
                format!(
                    "content-length `{}` but the DATA frames carried {} bytes",
                    fairbench_sys::text::visible(&h.value_str()),
                    r.body.len()
                ),
            ),
        },
        Framing::Chunked => RuleResult::new(
            Rule::ContentLength,
            Grade::Fail,
            "absent: the body was sent chunked",
        ),
        Framing::Close => RuleResult::new(
            Rule::ContentLength,
            Grade::Fail,
            "absent: the body ended by closing the connection",
        ),
        Framing::None => RuleResult::new(Rule::ContentLength, Grade::Pass, "no body"),
        Framing::ContentLength if r.excess > 0 => RuleResult::new(
            Rule::ContentLength,
            Grade::Fail,
            format!(
                "Content-Length {} but {} more bytes followed the body",
                r.body.len(),
                r.excess
            ),
        ),
        Framing::ContentLength => RuleResult::new(
            Rule::ContentLength,
            Grade::Pass,
            format!("{} = body length", r.body.len()),
        ),
    }
}

fn framing(s: &Scenario, r: &RawResponse) -> RuleResult {
    match r.framing {
        Framing::Chunked if s.expect.forbid_chunked => RuleResult::new(
            Rule::Framing,
            Grade::Fail,
            format!(
                "chunked transfer-encoding for a fixed body: {} bytes of chunk framing on a {}-byte body",
                r.wire_body_len() - r.body.len(),
                r.body.len()
            ),
        ),
        Framing::Close => RuleResult::new(
            Rule::Framing,
            Grade::Fail,
            "body delimited by connection close: no keep-alive",
        ),
        f => RuleResult::new(Rule::Framing, Grade::Pass, f.as_str()),
    }
}

fn date(r: &RawResponse, ctx: &GradeContext) -> Vec<RuleResult> {
    let dates: Vec<String> = r.headers_named("date").map(|h| h.value_str()).collect();
    let Some(value) = dates.first() else {
        return vec![RuleResult::new(
            Rule::DatePresent,
            Grade::Fail,
            "no Date header; Go net/http always sends one",
        )];
    };
    let shown = fairbench_sys::text::visible(value);
    let present = if dates.len() > 1 {
        RuleResult::new(
            Rule::DatePresent,
            Grade::Fail,
            format!("sent {} times", dates.len()),
        )
    } else {
        RuleResult::new(Rule::DatePresent, Grade::Pass, shown.clone())
    };
    let fresh = match httpdate::parse_http_date(value.trim()) {
        Err(_) => RuleResult::new(
            Rule::DateFresh,
            Grade::Fail,
            format!("`{shown}` is not an HTTP date"),
        ),
        Ok(t) => {
            let skew = match ctx.now.duration_since(t) {
                Ok(d) => d.as_secs_f64(),
                Err(e) => -e.duration().as_secs_f64(),
            };
            let imf = httpdate::fmt_http_date(t);
            let secs = skew.abs();
            if secs > DATE_STALE_S as f64 {
                RuleResult::new(
                    Rule::DateFresh,
                    Grade::Fail,
                    format!("`{shown}` is {}", human_secs(skew)),
                )
            } else if value.trim() != imf {
                RuleResult::new(
                    Rule::DateFresh,
                    ctx.strict(),
                    format!("`{shown}` is not in IMF-fixdate form (`{imf}`)"),
                )
            } else if secs > DATE_FRESH_S as f64 {
                RuleResult::new(
                    Rule::DateFresh,
                    Grade::Warn,
                    format!("`{shown}` is {}", human_secs(skew)),
                )
            } else {
                RuleResult::new(Rule::DateFresh, Grade::Pass, "within 3s of now")
            }
        }
    };
    vec![present, fresh]
}

/// "400 days old" / "5s in the future", for a Date `skew` seconds behind now.
fn human_secs(skew: f64) -> String {
    let s = skew.abs();
    let amount = if s < 120.0 {
        format!("{s:.0}s")
    } else if s < 2.0 * 86400.0 {
        format!("{:.0}min", s / 60.0)
    } else {
        format!("{:.0} days", s / 86400.0)
    };
    if skew >= 0.0 {
        format!("{amount} old")
    } else {
        format!("{amount} in the future")
    }
}

fn required_headers(s: &Scenario, r: &RawResponse) -> RuleResult {
    // HTTP/2 and HTTP/3 frame the body themselves: a Content-Length is
    // optional there.
    let required: Vec<&String> = s
        .expect
        .required_headers
        .iter()
        .filter(|h| !(r.protocol.is_framed() && h.eq_ignore_ascii_case("content-length")))
        .collect();
    let missing: Vec<&str> = required
        .iter()
        .filter(|h| r.header(h).is_none())
        .map(|h| h.as_str())
        .collect();
    if missing.is_empty() {
        RuleResult::new(
            Rule::RequiredHeaders,
            Grade::Pass,
            required
                .iter()
                .map(|h| h.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        )
    } else {
        RuleResult::new(
            Rule::RequiredHeaders,
            Grade::Fail,
            format!("missing: {}", missing.join(", ")),
        )
    }
}

/// The fields HTTP/2 forbids (RFC 9113 §8.2.2): they describe an HTTP/1.1
/// connection, which an HTTP/2 stream is not.
pub const CONNECTION_SPECIFIC: [&str; 5] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "upgrade",
];

fn connection_headers(r: &RawResponse) -> RuleResult {
    let found: Vec<String> = r
        .headers
        .iter()
        .filter(|h| {
            CONNECTION_SPECIFIC
                .iter()
                .any(|c| h.name.eq_ignore_ascii_case(c))
                || (h.name.eq_ignore_ascii_case("te") && h.value_str().trim() != "trailers")
        })
        .map(|h| fairbench_sys::text::visible(&h.name))
        .collect();
    if found.is_empty() {
        RuleResult::new(Rule::ConnectionHeaders, Grade::Pass, "none")
    } else {
        RuleResult::new(
            Rule::ConnectionHeaders,
            Grade::Fail,
            format!(
                "{}: connection-specific, forbidden in HTTP/2 (RFC 9113 §8.2.2)",
                found.join(", ")
            ),
        )
    }
}

/// Bytes a header line takes on the wire: `Name: value\r\n`.
pub fn header_line_len(name: &str, value: &[u8]) -> usize {
    name.len() + 2 + value.len() + 2
}

fn extra_headers(s: &Scenario, r: &RawResponse, ctx: &GradeContext) -> RuleResult {
    let mut allowed: Vec<&str> = GO_HEADERS.to_vec();
    allowed.extend(s.expect.required_headers.iter().map(String::as_str));
    if s.expect.content_encoding.is_some() {
        // What Go sends beside a body it compressed.
        allowed.extend(["Content-Encoding", "Vary"]);
    }
    if !ctx.normalized() {
        allowed.extend(s.expect.allowed_headers.iter().map(String::as_str));
    }
    let mut seen: Vec<String> = Vec::new();
    let mut extras = Vec::new();
    for h in &r.headers {
        let lower = h.name.to_ascii_lowercase();
        let repeated = seen.contains(&lower);
        seen.push(lower);
        if repeated || !allowed.iter().any(|a| a.eq_ignore_ascii_case(&h.name)) {
            extras.push(h);
        }
    }
    if extras.is_empty() {
        return RuleResult::new(Rule::ExtraHeaders, Grade::Pass, "none");
    }
    let bytes: usize = extras
        .iter()
        .map(|h| header_line_len(&h.name, &h.value))
        .sum();
    let (documented, undocumented): (Vec<&crate::fetch::Header>, Vec<&crate::fetch::Header>) =
        extras
            .iter()
            .partition(|h| ctx.header_deviation(&h.name).is_some());
    let list = |hs: &[&crate::fetch::Header]| {
        hs.iter()
            .map(|h| fairbench_sys::text::visible(&h.name))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let reasons: Vec<String> = documented
        .iter()
        .map(|h| {
            format!(
                "{}: {}",
                fairbench_sys::text::visible(&h.name),
                ctx.header_deviation(&h.name)
                    .map(|d| d.reason.as_str())
                    .unwrap_or("")
            )
        })
        .collect();
    let grade = if undocumented.is_empty() {
        Grade::Warn
    } else {
        ctx.strict()
    };
    let mut detail = String::new();
    if !undocumented.is_empty() {
        detail.push_str(&list(&undocumented));
    }
    if !documented.is_empty() {
        if !detail.is_empty() {
            detail.push_str("; ");
        }
        detail.push_str(&format!("known deviation: {}", reasons.join("; ")));
    }
    detail.push_str(&format!(" (+{bytes} bytes)"));
    RuleResult::new(Rule::ExtraHeaders, grade, detail)
}

mod encoding;
#[cfg(test)]
mod tests;
