//! The unit tests of `contract`.

use super::*;
use crate::fetch::parse;
use std::path::Path;

fn scenario() -> Scenario {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("static.toml");
    std::fs::write(
        &f,
        "name = \"static\"\nmethod = \"GET\"\npath = \"/\"\n[expect]\nstatus = 200\n\
         content_type = \"text/plain; charset=utf-8\"\n\
         required_headers = [\"Date\", \"Content-Type\", \"Content-Length\"]\n\
         forbid_chunked = true\nbody = \"Hello World!\\n\"\n",
    )
    .unwrap();
    Scenario::load(&f, Path::new("scenarios/static.toml")).unwrap()
}

fn response(headers: &str, now: SystemTime) -> RawResponse {
    let date = httpdate::fmt_http_date(now);
    let text = format!(
        "HTTP/1.1 200 OK\r\n{}\r\nHello World!\n",
        headers.replace("{date}", &date)
    );
    parse(text.as_bytes()).unwrap()
}

fn grades(rs: &[RuleResult]) -> Vec<(Rule, Grade)> {
    rs.iter()
        .filter(|r| r.grade != Grade::Pass)
        .map(|r| (r.rule, r.grade))
        .collect()
}

const GO: &str =
    "Date: {date}\r\nContent-Length: 13\r\nContent-Type: text/plain; charset=utf-8\r\n";

#[test]
fn go_shape_passes_everything() {
    let now = SystemTime::now();
    for kind in ResponseKind::ALL {
        let ctx = GradeContext {
            response: kind,
            deviations: &[],
            now,
        };
        let rs = grade(&scenario(), &response(GO, now), &ctx);
        assert_eq!(grades(&rs), vec![], "{rs:?}");
    }
}

#[test]
fn spelling_differences_warn_for_default_and_fail_for_normalized() {
    let now = SystemTime::now();
    let h = GO.replace("text/plain; charset=utf-8", "text/plain;charset=UTF-8");
    let d = GradeContext {
        response: ResponseKind::Default,
        deviations: &[],
        now,
    };
    let n = GradeContext {
        response: ResponseKind::Normalized,
        ..d
    };
    assert_eq!(
        grades(&grade(&scenario(), &response(&h, now), &d)),
        vec![(Rule::ContentType, Grade::Warn)]
    );
    assert_eq!(
        grades(&grade(&scenario(), &response(&h, now), &n)),
        vec![(Rule::ContentType, Grade::Fail)]
    );
    let h = GO.replace("Date: {date}", "Date: Sunday, 06-Nov-94 08:49:37 GMT");
    let rs = grade(&scenario(), &response(&h, now), &d);
    assert_eq!(grades(&rs), vec![(Rule::DateFresh, Grade::Fail)], "{rs:?}");
}

#[test]
fn a_slightly_old_date_warns() {
    let now = SystemTime::now();
    let ctx = GradeContext {
        response: ResponseKind::Normalized,
        deviations: &[],
        now,
    };
    let r = response(GO, now - Duration::from_secs(20));
    assert_eq!(
        grades(&grade(&scenario(), &r, &ctx)),
        vec![(Rule::DateFresh, Grade::Warn)]
    );
}

#[test]
fn repeated_and_extra_headers() {
    let now = SystemTime::now();
    let h = format!("{GO}Date: {{date}}\r\nServer: x\r\n");
    let ctx = GradeContext {
        response: ResponseKind::Normalized,
        deviations: &[],
        now,
    };
    let rs = grade(&scenario(), &response(&h, now), &ctx);
    assert_eq!(
        grades(&rs),
        vec![
            (Rule::DatePresent, Grade::Fail),
            (Rule::ExtraHeaders, Grade::Fail)
        ],
        "{rs:?}"
    );
    let extra = rs.iter().find(|r| r.rule == Rule::ExtraHeaders).unwrap();
    assert_eq!(extra.detail, "Date, Server (+48 bytes)");
}

/// An HTTP/2 answer as fetch_h2 makes it: decoded fields, no framing.
fn h2_response(headers: &[(&str, String)], body: &[u8]) -> RawResponse {
    let mut r = parse(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n").unwrap();
    r.protocol = crate::Protocol::H2c;
    r.version = 2;
    r.reason = String::new();
    r.framing = Framing::H2Frames;
    r.headers = headers
        .iter()
        .map(|(n, v)| crate::fetch::Header {
            name: n.to_string(),
            value: v.as_bytes().to_vec(),
        })
        .collect();
    r.body = body.to_vec();
    r
}

#[test]
fn over_http2_no_length_is_needed_and_connection_fields_fail() {
    let now = SystemTime::now();
    let ctx = GradeContext {
        response: ResponseKind::Normalized,
        deviations: &[],
        now,
    };
    let date = ("date", httpdate::fmt_http_date(now));
    let ct = ("content-type", "text/plain; charset=utf-8".to_string());
    let r = h2_response(&[ct.clone(), date.clone()], b"Hello World!\n");
    let rs = grade(&scenario(), &r, &ctx);
    assert_eq!(grades(&rs), vec![], "{rs:?}");
    let status = rs.iter().find(|r| r.rule == Rule::Status).unwrap();
    assert_eq!(status.detail, ":status 200");
    let cl = rs.iter().find(|r| r.rule == Rule::ContentLength).unwrap();
    assert!(
        cl.detail.starts_with("absent: HTTP/2 needs none"),
        "{}",
        cl.detail
    );
    let req = rs.iter().find(|r| r.rule == Rule::RequiredHeaders).unwrap();
    assert_eq!(req.detail, "Date, Content-Type");

    let r = h2_response(
        &[
            ct.clone(),
            date.clone(),
            ("connection", "keep-alive".into()),
            ("content-length", "12".into()),
        ],
        b"Hello World!\n",
    );
    let rs = grade(&scenario(), &r, &ctx);
    assert_eq!(
        grades(&rs),
        vec![
            (Rule::ContentLength, Grade::Fail),
            (Rule::ExtraHeaders, Grade::Fail),
            (Rule::ConnectionHeaders, Grade::Fail)
        ],
        "{rs:?}"
    );
    let c = rs
        .iter()
        .find(|r| r.rule == Rule::ConnectionHeaders)
        .unwrap();
    assert!(
        c.detail.starts_with("connection: connection-specific"),
        "{}",
        c.detail
    );
    // HTTP/1.1 answers are not graded by it.
    let rs = grade(&scenario(), &response(GO, now), &ctx);
    assert!(!rs.iter().any(|r| r.rule == Rule::ConnectionHeaders));
}

#[test]
fn rule_deviation_turns_fail_into_warn() {
    let now = SystemTime::now();
    let dev = [Deviation {
        target: DeviationTarget::Rule(Rule::ContentType),
        reason: "framework".into(),
        scenario: None,
    }];
    let ctx = GradeContext {
        response: ResponseKind::Normalized,
        deviations: &dev,
        now,
    };
    let h = GO.replace("text/plain; charset=utf-8", "application/json");
    let rs = grade(&scenario(), &response(&h, now), &ctx);
    let ct = rs.iter().find(|r| r.rule == Rule::ContentType).unwrap();
    assert_eq!(ct.grade, Grade::Warn);
    assert!(
        ct.detail.ends_with("(known deviation: framework)"),
        "{}",
        ct.detail
    );
}
