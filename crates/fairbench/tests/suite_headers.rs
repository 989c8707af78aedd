//! Every shipped suite's header states its full matrix and duration in the
//! words `fairbench run --dry-run` prints them ("N cases, about H h M min"),
//! so that a header cannot promise two hours for a fourteen-hour matrix.

mod support;

use support::{command, repo, stdout, text};

/// The comment block before the first TOML line.
fn header(toml: &str) -> String {
    toml.lines()
        .take_while(|l| l.starts_with('#') || l.trim().is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn each_suite_header_states_the_dry_runs_full_matrix() {
    let root = repo();
    let mut names: Vec<String> = std::fs::read_dir(root.join("suites"))
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().to_string_lossy().into_owned();
            name.strip_suffix(".toml").map(str::to_string)
        })
        .collect();
    names.sort();
    assert!(names.len() >= 5, "{names:?}");
    for name in names {
        let o = command()
            .args(["run", "--suite", &name, "--dry-run", "--root"])
            .arg(&root)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "{name}: {}", text(&o));
        let out = stdout(&o);
        let line = out
            .lines()
            .find_map(|l| l.strip_prefix("full matrix (every toolchain present, 8 CPUs): "))
            .unwrap_or_else(|| panic!("{name}: no full-matrix line in\n{out}"));
        let toml = std::fs::read_to_string(root.join(format!("suites/{name}.toml"))).unwrap();
        let head = header(&toml);
        assert!(
            head.contains(&format!("Full matrix: {line}.")),
            "suites/{name}.toml: the header must say `Full matrix: {line}.` (what --dry-run estimates), it says:\n{head}"
        );
        // No second, stale figure beside it.
        assert_eq!(
            head.matches(", about ").count(),
            1,
            "suites/{name}.toml:\n{head}"
        );
    }
}
