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
        if c["server"] == "go-nethttp" || c["row"].is_null() {
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
