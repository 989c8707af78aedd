//! Every note a case carries reaches the terminal, not only the report:
//! `run`'s live lines and its table, and `show`, mark the case with ⚠ and
//! list the note under the table, as the report's "Problems and notes" does.

mod support;

use support::root::Root;
use support::{serial, text};

#[test]
fn a_case_with_a_warning_is_marked_and_listed_in_run_and_show() {
    let _serial = serial();
    let root = Root::new(&[("shares", &[])]);
    // The server on every CPU there is: the load has to share them, and the
    // case carries that warning on any machine.
    let cpus = std::thread::available_parallelism().unwrap().get();
    root.suite(
        "shared",
        &format!(
            r#"name = "shared"
responses = ["normalized"]
scenarios = ["static"]
cores = [{cpus}]
warmup = "0s"
duration = "1s"
repetitions = 1
[[load]]
model = "closed"
connections = 2
threads = 1
"#
        ),
    );
    let out = root.run(&["run", "--suite", "shared"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    root.assert_no_servers_left();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    // The live line of the case, and the warning under it.
    let live = stderr
        .lines()
        .find(|l| l.starts_with("[1/1]") && l.contains("req/s"))
        .unwrap_or_else(|| panic!("no case line in {stderr}"));
    assert!(live.ends_with('⚠'), "{live}");
    assert!(
        stderr
            .lines()
            .any(|l| l.trim_start().starts_with("⚠ server and load shared CPUs")),
        "{stderr}"
    );
    // The table at the end of the run, and `show`, alike.
    let show = root.run(&["show"]);
    assert_eq!(show.status.code(), Some(0), "{}", text(&show));
    let shown = String::from_utf8_lossy(&show.stdout);
    for table in [&*stdout, &*shown] {
        let row = table
            .lines()
            .find(|l| l.starts_with("shares "))
            .unwrap_or_else(|| panic!("no row in {table}"));
        assert!(row.ends_with("⚠ 1"), "{row}");
        assert!(
            table.contains("⚠ problems and notes")
                && table
                    .lines()
                    .any(|l| l.starts_with("  ⚠ 1 shares native/normalized static")
                        && l.contains("server and load shared CPUs")),
            "{table}"
        );
    }
}

#[test]
fn a_case_measured_with_allow_unfair_is_marked_as_failing_its_contract() {
    let _serial = serial();
    let root = Root::new(&[("unfair", &["--evil"])]);
    root.one_case_suite("unfair", 2, "1s");
    let out = root.run(&["run", "--suite", "unfair", "--allow-unfair"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    root.assert_no_servers_left();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let live = stderr
        .lines()
        .find(|l| l.starts_with("[1/1]") && l.contains("req/s"))
        .unwrap_or_else(|| panic!("no case line in {stderr}"));
    assert!(live.ends_with('⚠'), "{live}");
    assert!(
        stderr
            .lines()
            .any(|l| l.trim_start() == "⚠ failed its contract in the check"),
        "{stderr}"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("  ⚠ 1 unfair ")
                && l.ends_with(": failed its contract in the check")),
        "{stdout}"
    );
}
