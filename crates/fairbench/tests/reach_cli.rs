//! Reaching a service by another road than its URL's name: `--connect-to`
//! and `--resolve` (curl's forms). The URL's host still names the Host
//! header, SNI and the certificate; the connections go where the rule
//! says. The names here resolve nowhere (`.test` is reserved), so a load
//! that works proves the rule was used.

mod support;

use support::load::{json, pki, run, write_ca, Server, HELLO};

const NAME: &str = "api.fairbench.test";

fn hosts_asked(srv: &Server) -> Vec<String> {
    srv.requests
        .lock()
        .unwrap()
        .iter()
        .filter_map(|r| {
            String::from_utf8_lossy(r)
                .lines()
                .find_map(|l| l.strip_prefix("Host: ").map(str::to_string))
        })
        .collect()
}

#[test]
fn connect_to_and_resolve_reach_a_tls_server_by_its_certificates_name() {
    let pki = pki(&[NAME], false);
    let srv = Server::tls(HELLO, &pki);
    let dir = tempfile::tempdir().unwrap();
    let ca = write_ca(&dir, &pki.ca_pem);
    let url = format!("https://{NAME}:{}/", srv.port);
    let connect = format!("{NAME}:{}:127.0.0.1:{}", srv.port, srv.port);
    let resolve = format!("{NAME}:{}:127.0.0.1", srv.port);
    for rule in [["--connect-to", &connect], ["--resolve", &resolve]] {
        let (code, out, err) = run(&[
            "load", &url, "--cacert", &ca, "-c", "1", "-t", "1", "-n", "20", "--json", rule[0],
            rule[1],
        ]);
        assert_eq!(code, 0, "{rule:?}: {err}");
        let v = json(&out);
        assert_eq!(v["requests"], 20, "{rule:?}: {v}");
        assert_eq!(
            v["errors"]["tls"], 0,
            "{rule:?}: the certificate's name was checked"
        );
    }
    // Every request named the URL's host, whichever address it went to.
    let hosts = hosts_asked(&srv);
    assert!(hosts.len() >= 40, "{hosts:?}");
    let expected = format!("{NAME}:{}", srv.port);
    assert!(hosts.iter().all(|h| *h == expected), "{hosts:?}");
    // Without a rule the name resolves nowhere: one line, a usage error.
    let (code, _, err) = run(&["load", &url, "--cacert", &ca, "-n", "5"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("cannot resolve"), "{err}");
}

#[test]
fn connect_to_a_server_whose_certificate_names_another_host_fails_the_handshake() {
    // The rule changes where, never whom: the certificate must still be
    // for the URL's host.
    let pki = pki(&["other.fairbench.test"], false);
    let srv = Server::tls(HELLO, &pki);
    let dir = tempfile::tempdir().unwrap();
    let ca = write_ca(&dir, &pki.ca_pem);
    let url = format!("https://{NAME}:{}/", srv.port);
    let rule = format!("{NAME}:{}:127.0.0.1:{}", srv.port, srv.port);
    let (code, out, err) = run(&[
        "load",
        &url,
        "--cacert",
        &ca,
        "-c",
        "1",
        "-n",
        "5",
        "--connect-to",
        &rule,
    ]);
    assert_ne!(code, 0, "{out}");
    assert!(err.contains(NAME) || out.contains(NAME), "{out}{err}");
}

#[test]
fn a_rule_that_routes_nothing_or_is_malformed_is_one_line_naming_it() {
    let srv = Server::plain(HELLO);
    let url = format!("http://{NAME}:{}/", srv.port);
    let cases: [(&[&str], &str); 4] = [
        (
            &["--connect-to", "elsewhere.test:1:127.0.0.1:2"],
            "applies to no URL",
        ),
        (
            &["--resolve", &format!("{NAME}:1:127.0.0.1")],
            "applies to no URL",
        ),
        (&["--connect-to", "a:b"], "expected HOST1:PORT1:HOST2:PORT2"),
        (&["--resolve", "a:80:x"], "is not an IP address"),
    ];
    for (extra, needle) in cases {
        let mut args = vec!["load", url.as_str(), "-n", "5"];
        args.extend(extra);
        let (code, _, err) = run(&args);
        assert_eq!(code, 2, "{extra:?}: {err}");
        assert!(
            err.contains(needle) && err.trim().lines().count() == 1,
            "{extra:?}: {err}"
        );
    }
    // Plain http, any host and the same port: the name resolves nowhere,
    // the rule sends the load to loopback.
    let (code, out, err) = run(&[
        "load",
        &url,
        "-c",
        "1",
        "-n",
        "10",
        "--json",
        "--connect-to",
        "::127.0.0.1:",
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(json(&out)["requests"], 10);
}
