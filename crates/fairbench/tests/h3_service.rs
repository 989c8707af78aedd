//! A suite's `[[service]]` takes `http3 = true` as `load` takes `--http3`:
//! measured over QUIC against a real HTTP/3 server (quic-go's, from the
//! test kit), stored as h3, planned as h3, and its mistakes one line
//! naming the service's key.

mod support;

use std::path::Path;
use std::process::Output;

use fairbench_testkit::h2::hello::H2c;
use fairbench_testkit::h3::{start, H3Options};
use support::load::pki;
use support::serial;

/// Writes a suite of `services` with a short closed loop and runs it from
/// `dir` into its own database.
fn run_suite(dir: &Path, services: &str, extra: &[&str]) -> Output {
    let suite = dir.join("svc.toml");
    std::fs::write(
        &suite,
        format!(
            "name = \"svc\"\nduration = \"1s\"\nrepetitions = 1\n\n{services}\n\
             [[load]]\nmodel = \"closed\"\nconnections = 2\n"
        ),
    )
    .unwrap();
    let mut args = vec!["run", "--suite", suite.to_str().unwrap(), "--db", "svc.db"];
    args.extend_from_slice(extra);
    support::run_in(dir, &args)
}

#[test]
fn a_service_over_http3_is_measured_and_stored_as_h3() {
    let _s = serial();
    let srv = start(&H3Options::default());
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("ca.pem"), &srv.ca_pem).unwrap();
    let service = format!(
        "[[service]]\nname = \"quic\"\nurl = \"https://127.0.0.1:{}/\"\nhttp3 = true\n\
         streams = 2\ncacert = \"ca.pem\"\nthresholds = [\"errors=0\"]\n",
        srv.addr.port()
    );
    let dry = run_suite(dir.path(), &service, &["--dry-run"]);
    let plan = support::stdout(&dry);
    assert!(plan.contains("(GET, h3, thresholds errors=0)"), "{plan}");

    let o = run_suite(dir.path(), &service, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", support::text(&o));
    let show = support::run_in(dir.path(), &["show", "1", "--db", "svc.db", "--json"]);
    let case = &support::json(&show)["cases"][0];
    assert_eq!(case["protocol"], "h3", "{case}");
    assert!(case["requests"].as_u64().unwrap() > 0, "{case}");
    assert_eq!(case["err_read"], 0, "{case}");
    // What QUIC did is stored with the service case, as with `load --save`.
    let quic = &case["load"]["http3"];
    assert!(quic["handshakes"].as_u64().unwrap() >= 1, "{case}");
    assert_eq!(quic["streams"], 2, "{case}");
}

#[test]
fn a_service_over_h3_is_compared_with_one_over_h2() {
    let _s = serial();
    let h3 = start(&H3Options::default());
    let h2 = H2c::tls(100, &pki(&["127.0.0.1"], false));
    let dir = tempfile::tempdir().unwrap();
    let services = format!(
        "reference = \"api-h2\"\n\n\
         [[service]]\nname = \"api-h2\"\nurl = \"{}\"\nhttp2 = true\ninsecure = true\n\n\
         [[service]]\nname = \"api-h3\"\nurl = \"https://127.0.0.1:{}/\"\nhttp3 = true\ninsecure = true\n",
        h2.url(),
        h3.addr.port()
    );
    let o = run_suite(dir.path(), &services, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", support::text(&o));
    let show = support::run_in(dir.path(), &["show", "1", "--db", "svc.db"]);
    let text = support::stdout(&show);
    let row = |name: &str| {
        text.lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("{name} in {text}"))
            .to_string()
    };
    assert!(row("api-h2 over h2").ends_with("reference"), "{text}");
    // h3's ratio to h2: the protocols differ, the services are compared.
    assert!(row("api-h3 over h3").contains('×'), "{text}");
}

#[test]
fn http3_mistakes_name_the_service_key() {
    let dir = tempfile::tempdir().unwrap();
    let both = run_suite(
        dir.path(),
        "[[service]]\nname = \"x\"\nurl = \"https://127.0.0.1:1/\"\nhttp2 = true\nhttp3 = true\n",
        &["--dry-run"],
    );
    let err = support::stderr(&both);
    assert_eq!(both.status.code(), Some(2), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(
        err.contains("field service[0].http3: give http2 or http3, not both"),
        "{err}"
    );
    let plain = run_suite(
        dir.path(),
        "[[service]]\nname = \"x\"\nurl = \"http://127.0.0.1:1/\"\nhttp3 = true\n",
        &["--dry-run"],
    );
    let err = support::stderr(&plain);
    assert_eq!(plain.status.code(), Some(2), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(
        err.contains("http3: HTTP/3 runs over QUIC with TLS: it needs an https:// URL"),
        "{err}"
    );
}
