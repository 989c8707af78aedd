//! A suite's `[[service]]` takes what a `load` command line takes (method,
//! headers, body, targets file, HTTP/2, TLS and client certificates,
//! `connect_to`, expected statuses, thresholds), through the same code as
//! `load`'s flags: what the servers received, what was stored, and each
//! mistake as one line naming the service and its key.

mod support;

use std::path::Path;
use std::process::Output;
use std::time::Duration;

use fairbench_testkit::counting::Counting;
use fairbench_testkit::h2::hello::H2c;
use fairbench_testkit::pki::{mtls_pki, ClientKey};
use fairbench_testkit::serial;
use support::load::{Server, HELLO};

/// Writes a one-case suite of `services` (TOML `[[service]]` tables) with
/// a short closed loop, and runs it from `dir` into its own database.
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

fn stored_case(dir: &Path) -> serde_json::Value {
    let show = support::run_in(dir, &["show", "1", "--db", "svc.db", "--json"]);
    support::json(&show)["cases"][0].clone()
}

#[test]
fn a_service_sends_the_method_body_and_targets_load_would() {
    let _s = serial();
    let dir = tempfile::tempdir().unwrap();
    let srv = Counting::start(Duration::ZERO);
    std::fs::write(dir.path().join("body.json"), "{\"n\":1}").unwrap();
    let o = run_suite(
        dir.path(),
        &format!(
            "[[service]]\nname = \"post\"\nurl = \"{}\"\nmethod = \"POST\"\n\
             headers = [\"Content-Type: application/json\"]\nbody_file = \"body.json\"\n",
            srv.url("/items")
        ),
        &[],
    );
    let err = support::stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    // The body file was found beside the suite, not in the working folder.
    let posts = srv.count("POST /items");
    assert!(posts > 0, "{:?}", srv.by_prefix(""));
    assert_eq!(srv.count("BODY {\"n\":1}"), posts);
    assert_eq!(srv.count("GET /items"), 0);
    assert_eq!(stored_case(dir.path())["load"]["method"], "POST");

    // A targets file, relative to the suite too: both paths are asked.
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("t")).unwrap();
    std::fs::write(
        dir.path().join("t/targets.toml"),
        "[[target]]\npath = \"/a\"\n\n[[target]]\npath = \"/b\"\n",
    )
    .unwrap();
    let o = run_suite(
        dir.path(),
        &format!(
            "[[service]]\nname = \"mix\"\nurl = \"{}\"\ntargets = \"t/targets.toml\"\n\
             thresholds = [\"errors<1%\"]\n",
            srv.url("/")
        ),
        &[],
    );
    assert_eq!(o.status.code(), Some(0), "{}", support::stderr(&o));
    assert!(srv.count("GET /a") > 0 && srv.count("GET /b") > 0);
}

#[test]
fn a_service_over_h2c_is_stored_as_h2c() {
    let _s = serial();
    let dir = tempfile::tempdir().unwrap();
    let h2 = H2c::start(100);
    let o = run_suite(
        dir.path(),
        &format!(
            "[[service]]\nname = \"h2\"\nurl = \"http://127.0.0.1:{}/\"\nhttp2 = true\nstreams = 4\n",
            h2.port
        ),
        &[],
    );
    assert_eq!(o.status.code(), Some(0), "{}", support::stderr(&o));
    let case = stored_case(dir.path());
    assert_eq!(case["protocol"], "h2c", "{case}");
    // The plan says how each service will be asked before a long run.
    let dry = run_suite(
        dir.path(),
        &format!(
            "[[service]]\nname = \"h2\"\nurl = \"http://127.0.0.1:{}/\"\nhttp2 = true\n\
             method = \"POST\"\nthresholds = [\"p99<1s\"]\nversion = \"7\"\n",
            h2.port
        ),
        &["--dry-run"],
    );
    let plan = support::stdout(&dry);
    assert!(
        plan.contains("(POST, h2c, thresholds p99<1s, version 7)"),
        "{plan}"
    );
    assert!(case["requests"].as_u64().unwrap() > 0, "{case}");
}

#[test]
fn a_service_with_a_client_certificate_and_connect_to() {
    let _s = serial();
    let dir = tempfile::tempdir().unwrap();
    // The certificate names a host that does not resolve: connect_to
    // sends the connections to the server while SNI and the check keep it.
    let pki = mtls_pki("fairbench mTLS CA", &["api.invalid"]);
    let srv = Server::tls(HELLO, &pki.requiring_client());
    let port = srv
        .url()
        .rsplit(':')
        .next()
        .unwrap()
        .trim_end_matches('/')
        .to_string();
    let (cert, key) = pki.client(ClientKey::Ecdsa);
    std::fs::write(dir.path().join("ca.pem"), &pki.ca_pem).unwrap();
    std::fs::write(dir.path().join("client.pem"), cert).unwrap();
    std::fs::write(dir.path().join("client.key"), key).unwrap();
    let service = |keys: &str| {
        format!(
            "[[service]]\nname = \"tls\"\nurl = \"https://api.invalid:{port}/\"\n\
             cacert = \"ca.pem\"\nconnect_to = [\"api.invalid:{port}:127.0.0.1:{port}\"]\n{keys}"
        )
    };
    let o = run_suite(
        dir.path(),
        &service("cert = \"client.pem\"\nkey = \"client.key\"\n"),
        &[],
    );
    assert_eq!(o.status.code(), Some(0), "{}", support::stderr(&o));
    assert!(stored_case(dir.path())["requests"].as_u64().unwrap() > 0);

    // Without the certificate the server refuses: the case fails with the
    // same line `load` prints, and the run says so (exit 1).
    let dir2 = tempfile::tempdir().unwrap();
    for f in ["ca.pem", "client.pem", "client.key"] {
        std::fs::copy(dir.path().join(f), dir2.path().join(f)).unwrap();
    }
    let o = run_suite(dir2.path(), &service(""), &[]);
    let err = support::stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("FAILED") && err.contains("client certificate"),
        "{err}"
    );
}

#[test]
fn a_broken_threshold_gives_thresholds_exit_code() {
    let _s = serial();
    let dir = tempfile::tempdir().unwrap();
    let srv = Counting::start(Duration::from_millis(5));
    let o = run_suite(
        dir.path(),
        &format!(
            "[[service]]\nname = \"slow\"\nurl = \"{}\"\nthresholds = [\"p50<1us\", \"errors<50%\"]\n",
            srv.url("/")
        ),
        &[],
    );
    let err = support::stderr(&o);
    assert_eq!(o.status.code(), Some(99), "{err}");
    assert!(err.contains("p50<1us") && err.contains("FAIL"), "{err}");
}

#[test]
fn service_mistakes_are_one_line_naming_the_service_and_key() {
    let dir = tempfile::tempdir().unwrap();
    let url = "http://127.0.0.1:9/";
    let cases: [(&str, &str); 7] = [
        ("proxy_url = \"http://x\"\n", "proxy_url"),
        ("cert = \"missing.pem\"\n", "cert: cannot read"),
        (
            "method = \"POST\"\ntargets = \"t.toml\"\n",
            "method: with targets",
        ),
        ("expect_status = \"7xx\"\n", "expect_status"),
        ("thresholds = [\"p99<fast\"]\n", "thresholds:"),
        (
            "connect_to = [\"other:80:127.0.0.1:9\"]\n",
            "applies to no URL",
        ),
        ("body = \"x\"\nbody_file = \"b\"\n", "service[0].body"),
    ];
    for (keys, expected) in cases {
        let services = format!("[[service]]\nname = \"api\"\nurl = \"{url}\"\n{keys}");
        let o = run_suite(dir.path(), &services, &["--dry-run"]);
        let err = support::stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{keys}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{keys}: {err}");
        assert!(err.contains(expected), "{keys}: {err}");
        assert!(!err.contains("--"), "{keys}: a key, not a flag: {err}");
    }
}

#[test]
fn a_service_on_a_unix_socket_is_loaded_through_it() {
    let _s = serial();
    let dir = tempfile::tempdir().unwrap();
    let srv = Counting::start(Duration::ZERO);
    let relay = fairbench_testkit::unix_relay::UnixRelay::to_port(srv.port);
    let o = run_suite(
        dir.path(),
        &format!(
            "[[service]]\nname = \"sock\"\nurl = \"http://app.local/via-socket\"\nunix_socket = {:?}\n",
            relay.path()
        ),
        &[],
    );
    assert_eq!(o.status.code(), Some(0), "{}", support::stderr(&o));
    assert!(srv.count("GET /via-socket") > 0, "{:?}", srv.by_prefix(""));
    // A path that is no socket: one line naming the key, before any load.
    let o = run_suite(
        dir.path(),
        "[[service]]\nname = \"sock\"\nurl = \"http://app.local/\"\nunix_socket = \"svc.toml\"\n",
        &["--dry-run"],
    );
    let err = support::stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("unix_socket: ") && err.contains("is not a socket"),
        "{err}"
    );
}

#[test]
fn a_services_declared_version_is_stored_and_named_by_history() {
    let _s = serial();
    let dir = tempfile::tempdir().unwrap();
    let srv = Counting::start(Duration::ZERO);
    for version in ["v1.0", "v1.1"] {
        let o = run_suite(
            dir.path(),
            &format!(
                "[[service]]\nname = \"api\"\nurl = \"{}\"\nversion = \"{version}\"\n",
                srv.url("/")
            ),
            &[],
        );
        assert_eq!(o.status.code(), Some(0), "{}", support::stderr(&o));
    }
    let h = support::run_in(
        dir.path(),
        &["history", "--db", "svc.db", "--server", "api", "--json"],
    );
    let v = support::json(&h);
    let sources: Vec<&str> = v["cases"][0]["points"]
        .as_array()
        .unwrap_or_else(|| panic!("{v}"))
        .iter()
        .map(|p| p["source"].as_str().unwrap_or("none"))
        .collect();
    assert_eq!(sources, ["v1.0", "v1.1"], "{v}");
    let table = support::run_in(
        dir.path(),
        &["history", "--db", "svc.db", "--server", "api"],
    );
    assert!(
        support::stdout(&table).contains("v1.1"),
        "{}",
        support::stdout(&table)
    );
}

#[test]
fn a_service_behind_a_proxy_is_loaded_through_it() {
    let _s = serial();
    let dir = tempfile::tempdir().unwrap();
    let srv = Counting::start(Duration::ZERO);
    let proxy = fairbench_testkit::proxy::Proxy::start();
    let o = run_suite(
        dir.path(),
        &format!(
            "[[service]]\nname = \"via\"\nurl = \"{}\"\nproxy = \"{}\"\n",
            srv.url("/proxied"),
            proxy.url(None)
        ),
        &[],
    );
    assert_eq!(o.status.code(), Some(0), "{}", support::stderr(&o));
    let asked = srv.count("GET /proxied");
    assert!(
        asked > 0 && proxy.absolute() >= asked,
        "{asked} {}",
        proxy.absolute()
    );
    // A proxy and a route cannot both decide: one line naming the keys.
    let o = run_suite(
        dir.path(),
        &format!(
            "[[service]]\nname = \"via\"\nurl = \"{}\"\nproxy = \"{}\"\nresolve = [\"x:1:127.0.0.1\"]\n",
            srv.url("/"),
            proxy.url(None)
        ),
        &["--dry-run"],
    );
    let err = support::stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("proxy: not with connect_to or resolve"),
        "{err}"
    );
}
