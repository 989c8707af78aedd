//! The parity promise over the real zoo: every runnable server's `normalized`
//! variant passes the static and dynamic contracts and puts exactly as many
//! bytes on the wire as go-nethttp. Builds every such server (cached under
//! <root>/.fairbench/build), so the first run takes minutes.

mod support;

use std::collections::BTreeSet;

use fairbench_zoo::toolchain::Prober;
use fairbench_zoo::Zoo;
use support::check::*;
use support::repo;

#[test]
fn normalized_variants_of_every_runnable_server_pass_and_match_go_nethttp() {
    let root = repo();
    let zoo = Zoo::load(&root).unwrap();
    let mut prober = Prober::new();
    let runnable: BTreeSet<String> = zoo
        .servers
        .iter()
        .filter(|s| prober.probe(&s.toolchain).is_present())
        .map(|s| s.name.clone())
        .collect();
    assert!(
        runnable.contains("go-nethttp"),
        "go-nethttp, the reference, must be runnable here: {runnable:?}"
    );

    let run = fairbench(
        &[
            "check",
            "--root",
            root.to_str().unwrap(),
            "--variant",
            "normalized",
            "--scenarios",
            "static,dynamic",
            "--json",
        ],
        &[],
        "real-servers",
    );
    let r = run.json();
    let cases = r["cases"].as_array().unwrap();
    let checked: BTreeSet<String> = cases
        .iter()
        .map(|c| c["server"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        checked, runnable,
        "every runnable server is checked\n{}",
        run.stderr
    );

    let mut problems = Vec::new();
    for c in cases {
        let who = format!("{} {} {}", c["server"], c["variant"], c["scenario"]);
        for rule in c["rules"].as_array().unwrap() {
            let documented = rule["detail"].as_str().unwrap().contains("known deviation");
            if rule["grade"] == "fail" || (rule["grade"] == "warn" && !documented) {
                problems.push(format!(
                    "{who}: {} {}: {}",
                    rule["grade"], rule["rule"], rule["detail"]
                ));
            }
        }
        // A difference made entirely of the manifest's known deviations
        // (nginx's Server and Connection headers) is a documented warn.
        let documented_bytes = c["rules"].as_array().unwrap().iter().any(|r| {
            r["rule"] == "reference-bytes"
                && r["grade"] == "warn"
                && r["detail"]
                    .as_str()
                    .unwrap()
                    .contains("all from known deviations")
        });
        if c["server"] == "go-nethttp" || c["row"].is_null() || documented_bytes {
            continue;
        }
        let go = case(
            &r,
            "go-nethttp",
            c["scenario"].as_str().unwrap(),
            "normalized",
        );
        for field in [
            "status",
            "header_bytes",
            "body_bytes",
            "total_bytes",
            "framing",
        ] {
            if c["row"][field] != go["row"][field] {
                problems.push(format!(
                    "{who}: {field} {} but go-nethttp's is {}",
                    c["row"][field], go["row"][field]
                ));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "{}\n\nstderr:\n{}",
        problems.join("\n"),
        run.stderr
    );
    run.expect_code(0);
    assert_eq!(r["ok"], true);
}

/// nginx (Debian's; scripts/setup-test-deps.sh installs it) in the zoo:
/// every variant and scenario meets its contract, started from its
/// templated nginx.conf, and the normalized bytes differ from go-nethttp's
/// only by the headers its manifest documents.
#[test]
fn nginx_passes_its_contracts() {
    let zoo = Zoo::load(&repo()).unwrap();
    let present = Prober::new()
        .probe(&zoo.server("nginx").expect("servers/nginx").toolchain)
        .is_present();
    if !present {
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!("nginx is not installed, and CI=true requires it (scripts/setup-test-deps.sh installs it)");
        }
        eprintln!("SKIPPED nginx_passes_its_contracts: nginx is not installed (apt-get install nginx-light)");
        return;
    }
    let root = repo();
    let run = fairbench(
        &[
            "check",
            "--root",
            root.to_str().unwrap(),
            "--servers",
            "nginx,go-nethttp",
            // gzip, whose chunked answer is a known deviation of its own:
            // tests/check_gzip_real_servers.rs.
            "--scenarios",
            "static,dynamic,file",
            "--json",
        ],
        &[],
        "real-nginx",
    );
    run.expect_code(0);
    let r = run.json();
    let nginx: Vec<&serde_json::Value> = r["cases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["server"] == "nginx")
        .collect();
    assert_eq!(nginx.len(), 6, "{}", run.stderr);
    for c in nginx {
        let who = format!("{} {}", c["variant"], c["scenario"]);
        assert_ne!(c["grade"], "fail", "{who}: {c:#}");
        for rule in c["rules"].as_array().unwrap() {
            let detail = rule["detail"].as_str().unwrap();
            match (
                c["variant"].as_str().unwrap(),
                rule["grade"].as_str().unwrap(),
            ) {
                (_, "pass") => {}
                // Normalized: only what server.toml documents.
                ("native/normalized", "warn") => {
                    assert!(detail.contains("known deviation"), "{who}: {rule}")
                }
                // Default: nginx as a user configures it (no charset, its
                // own headers), never more than a warn.
                ("native/default", "warn") => assert!(
                    ["content-type", "extra-headers", "reference-bytes"]
                        .contains(&rule["rule"].as_str().unwrap()),
                    "{who}: {rule}"
                ),
                _ => panic!("{who}: {rule}"),
            }
        }
        assert_eq!(c["row"]["ipv4"], true, "{who}");
        assert_eq!(c["row"]["ipv6"], true, "{who}");
    }
    // And `make quick` measures it: the quick suite's plan has its cases.
    let dir = tempfile::tempdir().unwrap();
    let out = support::command()
        .current_dir(dir.path())
        .args(["run", "--suite", "quick", "--dry-run", "--root"])
        .arg(&root)
        .output()
        .unwrap();
    let plan = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{plan}");
    for v in ["default", "normalized"] {
        for sc in ["static", "dynamic"] {
            assert!(
                plan.contains(&format!("nginx native/{v} {sc} 1c")),
                "nginx native/{v} {sc} not in the quick plan:\n{plan}"
            );
        }
    }
}
