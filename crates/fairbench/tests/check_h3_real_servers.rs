//! `check` over HTTP/3 (issue 44): go-nethttp (quic-go's http3.Server)
//! and rust-hyper (h3 over quinn) serve h3 with the run's certificate, are
//! made ready by a QUIC handshake on their UDP port, and their answers pass
//! the contract with the same fields and body as over HTTP/1.1 and as the
//! reference's; a server whose h3 bytes differ from the
//! reference's is reported; a server that serves no h3 is refused with its
//! reason. Builds the servers (cached under the root's .fairbench/build, or
//! the work folder given).

mod support;

use std::path::Path;

use fairbench_zoo::toolchain::Prober;
use fairbench_zoo::Zoo;
use serde_json::Value;
use support::check::*;
use support::repo;

fn here(server: &str) -> bool {
    let zoo = Zoo::load(&repo()).unwrap();
    let here = Prober::new()
        .probe(&zoo.server(server).unwrap().toolchain)
        .is_present();
    if !here && std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("CI=true: {server}'s toolchain must be installed (scripts/setup-test-deps.sh)");
    }
    here
}

fn go_here() -> bool {
    here("go-nethttp")
}

fn rule_of<'a>(c: &'a Value, name: &str) -> Option<&'a Value> {
    c["rules"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["rule"] == name)
}

#[test]
fn the_h3_servers_pass_over_h3_field_for_field() {
    if !go_here() {
        eprintln!("SKIPPED: go is not installed");
        return;
    }
    let servers = if here("rust-hyper") {
        "go-nethttp,rust-hyper"
    } else {
        "go-nethttp"
    };
    let root = repo();
    let run = fairbench(
        &[
            "check",
            "--root",
            root.to_str().unwrap(),
            "--servers",
            servers,
            "--variant",
            "normalized",
            "--scenarios",
            "static,dynamic",
            "--protocols",
            "http/1.1,h3",
            "--json",
        ],
        &[],
        "real-h3",
    );
    let r = run.json();
    // The h3 rows (framing, protocol) are within the closed schema.
    support::assert_schema("check", &r);
    let cs = cases(&r, "h3");
    assert_eq!(cs.len(), 2 * servers.split(',').count(), "{}", run.stderr);
    for c in cs {
        let who = format!("{} {} over h3", c["server"], c["scenario"]);
        for x in c["rules"].as_array().unwrap() {
            assert_eq!(x["grade"], "pass", "{who}: {x}\n{}", run.stderr);
        }
        let row = &c["row"];
        assert_eq!(row["framing"], "h3-frames", "{who}");
        assert_eq!(row["protocol"], "h3", "{who}");
        assert_eq!(rule_of(c, "status").unwrap()["detail"], ":status 200");
        let same = rule_of(c, "http1-fields").unwrap_or_else(|| panic!("{who}: {c:#}"));
        assert!(
            same["detail"]
                .as_str()
                .unwrap()
                .starts_with("same status, fields and body as over HTTP/1.1"),
            "{who}: {same}"
        );
        // The QPACK section is smaller than the HEADERS frame that carries
        // it, and than the HTTP/1.1 header bytes; with no dynamic table a
        // repeat is the same size.
        let block = row["header_block"].as_u64().unwrap();
        let h1 = row["http1_header_bytes"].as_u64().unwrap();
        assert!(block > 0 && block + 2 <= row["header_bytes"].as_u64().unwrap());
        assert_eq!(row["header_block_repeat"].as_u64(), Some(block), "{who}");
        assert!(block < h1, "{who}: QPACK {block} vs HTTP/1.1 {h1} bytes");
        // Over UDP on both loopback families.
        assert_eq!(row["ipv4"], true, "{who}");
        assert_eq!(row["ipv6"], true, "{who}");
        // The same bytes as the reference's answer over h3, or the same
        // fields and body (QPACK sizes may differ by a byte: Huffman-coded
        // dates).
        if c["server"] != "go-nethttp" {
            let same = rule_of(c, "reference-bytes").unwrap_or_else(|| panic!("{who}: {c:#}"));
            let d = same["detail"].as_str().unwrap();
            assert!(
                d.ends_with("bytes, same as go-nethttp")
                    || d.starts_with("same fields and body as go-nethttp; QPACK field section"),
                "{who}: {same}"
            );
        }
    }
    run.expect_code(0);
    assert!(
        run.stderr.contains("static over h3: pass"),
        "{}",
        run.stderr
    );
}

/// A copy of the repo's go-nethttp, named `name`, its main.go edited by
/// `patch` (which must apply).
fn copy_go(root: &Path, name: &str, patch: Option<(&str, &str)>) {
    let from = repo().join("servers/go-nethttp");
    let to = root.join("servers").join(name);
    std::fs::create_dir_all(&to).unwrap();
    for e in std::fs::read_dir(&from).unwrap() {
        let p = e.unwrap().path();
        if p.is_file() {
            let mut text = std::fs::read_to_string(&p).unwrap();
            let file = p.file_name().unwrap().to_str().unwrap();
            if file == "server.toml" {
                text = text.replace("name = \"go-nethttp\"", &format!("name = \"{name}\""));
            }
            if let (Some((old, new)), "main.go") = (patch, file) {
                assert!(text.contains(old), "the patch no longer applies to main.go");
                text = text.replace(old, new);
            }
            std::fs::write(to.join(file), text).unwrap();
        }
    }
}

#[test]
fn a_server_whose_h3_bytes_differ_is_reported() {
    if !go_here() {
        eprintln!("SKIPPED: go is not installed");
        return;
    }
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(root.path().join("servers")).unwrap();
    std::os::unix::fs::symlink(repo().join("scenarios"), root.path().join("scenarios")).unwrap();
    copy_go(root.path(), "go-nethttp", None);
    // The same server, but over h3 one field more.
    copy_go(
        root.path(),
        "go-h3-odd",
        Some((
            "Handler: srv.Handler}",
            "Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Header().Set(\"X-Odd\", \"h3\"); srv.Handler.ServeHTTP(w, r) })}",
        )),
    );
    let work = tempfile::tempdir().unwrap();
    let run = fairbench(
        &[
            "check",
            "--root",
            root.path().to_str().unwrap(),
            "--work-dir",
            work.path().to_str().unwrap(),
            "--servers",
            "go-nethttp,go-h3-odd",
            "--reference",
            "go-nethttp",
            "--variant",
            "normalized",
            "--scenarios",
            "static",
            "--protocols",
            "http/1.1,h3",
            "--json",
        ],
        &[],
        "h3-odd",
    );
    let r = run.json();
    let odd = cases(&r, "h3")
        .into_iter()
        .find(|c| c["server"] == "go-h3-odd")
        .unwrap_or_else(|| panic!("{}", run.stderr));
    let bytes = rule_of(odd, "reference-bytes").unwrap_or_else(|| panic!("{odd:#}"));
    assert_eq!(bytes["grade"], "fail", "{bytes}");
    assert!(
        bytes["detail"].as_str().unwrap().contains("extra x-odd"),
        "{bytes}"
    );
    let fields = rule_of(odd, "http1-fields").unwrap();
    assert_eq!(fields["grade"], "warn", "{fields}");
    assert!(
        fields["detail"]
            .as_str()
            .unwrap()
            .contains("only over HTTP/3: x-odd"),
        "{fields}"
    );
    // Over HTTP/1.1 the copy is the reference's twin.
    let h1 = cases(&r, "http/1.1")
        .into_iter()
        .find(|c| c["server"] == "go-h3-odd")
        .unwrap();
    assert_eq!(h1["grade"], "pass", "{h1:#}");
    run.expect_code(1);
}

#[test]
fn h3_asked_of_servers_that_do_not_serve_it_gives_their_reason() {
    let root = repo();
    let run = fairbench(
        &[
            "check",
            "--root",
            root.to_str().unwrap(),
            "--servers",
            "nginx",
            "--protocols",
            "h3",
        ],
        &[],
        "h3-refused",
    );
    run.expect_code(2);
    let lines: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| !l.trim().is_empty())
        .collect();
    assert_eq!(lines.len(), 1, "{}", run.stderr);
    assert!(
        lines[0].contains("--protocols h3: no selected server serves h3 (nginx: Debian's nginx 1.22.1 is built without ngx_http_v3_module"),
        "{}",
        lines[0]
    );
    if !go_here() {
        return;
    }
    // Mixed with one that does: the other is skipped with its reason.
    let run = check_skips_the_jdk(&root, "h3", "HTTP/3 over QUIC (h3)");
    run.expect_code(0);
}
