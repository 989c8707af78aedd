//! The house rules of the workspace's layout (issue 25), checked on the
//! sources themselves so that a change breaking one fails here rather than
//! in a reviewer's head:
//!
//! - imports flow one way: nothing below `commands/` imports from it; the
//!   low-level crates do not depend on the ones above them;
//! - one rule per decision: the characters made visible are classified in
//!   `crates/sys/src/text.rs` only; which variant of a server runs is
//!   decided in `crates/zoo/src/runnable.rs` only;
//! - no source file grows past 700 lines (the few still over it may only
//!   shrink).
//!
//! Each check also asserts that what it looks for exists where it should,
//! so a rename cannot make it pass by finding nothing.

use std::path::{Path, PathBuf};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every `.rs` file under `dir`, recursively, sorted.
fn sources(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display())) {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The code of a file before its unit tests: what the rules are about.
fn code(p: &Path) -> String {
    let s = read(p);
    match s.find("#[cfg(test)]") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

fn rel(p: &Path) -> String {
    p.strip_prefix(workspace())
        .unwrap_or(p)
        .display()
        .to_string()
}

#[test]
fn nothing_below_commands_imports_from_it() {
    let src = workspace().join("crates/fairbench/src");
    assert!(
        read(&src.join("lib.rs")).contains("pub mod commands;"),
        "the command layer is `commands`"
    );
    let mut offenders = Vec::new();
    let mut seen = 0;
    for p in sources(&src) {
        let r = rel(&p);
        let above =
            r.contains("/src/commands/") || r.ends_with("/cli.rs") || r.ends_with("/main.rs");
        let text = read(&p);
        let imports = text.contains("crate::commands") || text.contains("fairbench::commands");
        if above {
            seen += 1;
        } else if imports {
            offenders.push(r);
        }
    }
    assert!(seen > 5, "the command modules were not found");
    assert!(offenders.is_empty(), "import from commands/: {offenders:?}");
}

#[test]
fn the_crates_depend_downwards_only() {
    // engine: nothing of ours; sys: nothing of ours; zoo: the engine (its
    // Protocol) and sys.
    let deps = |krate: &str| -> Vec<String> {
        let path = workspace().join(format!("crates/{krate}/Cargo.toml"));
        let toml: toml::Table = read(&path).parse().expect("Cargo.toml");
        let mut ours: Vec<String> = toml["dependencies"]
            .as_table()
            .expect("[dependencies]")
            .keys()
            .filter(|k| k.starts_with("fairbench"))
            .cloned()
            .collect();
        ours.sort();
        ours
    };
    assert_eq!(deps("engine"), Vec::<String>::new());
    assert_eq!(deps("sys"), Vec::<String>::new());
    assert_eq!(deps("zoo"), vec!["fairbench-engine", "fairbench-sys"]);
    assert_eq!(
        deps("fairbench"),
        vec!["fairbench-engine", "fairbench-sys", "fairbench-zoo"]
    );
}

#[test]
fn one_rule_makes_foreign_text_visible() {
    // What marks the rule: the C1 control range and the bidirectional
    // overrides, as character ranges.
    let marks = ["'\\u{7f}'..='\\u{9f}'", "'\\u{2028}'..='\\u{202e}'"];
    let home = workspace().join("crates/sys/src/text.rs");
    let home_code = code(&home);
    for m in marks {
        assert!(home_code.contains(m), "text.rs no longer classifies {m}");
    }
    let mut offenders = Vec::new();
    for krate in ["engine", "sys", "zoo", "fairbench"] {
        for p in sources(&workspace().join(format!("crates/{krate}/src"))) {
            if p.ends_with("sys/src/text.rs") {
                continue;
            }
            let c = code(&p);
            if marks.iter().any(|m| c.contains(m)) || c.contains(".is_control()") {
                offenders.push(rel(&p));
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "control characters classified outside crates/sys/src/text.rs (use fairbench_sys::text): {offenders:?}"
    );
}

#[test]
fn one_rule_decides_what_runs() {
    // The manifest's availability predicates, and a mode's `unsupported`
    // read as a condition, are the zoo's runnable rule's business.
    let home = code(&workspace().join("crates/zoo/src/runnable.rs"));
    for needle in [".implements(", ".has_response(", ".unsupported"] {
        assert!(home.contains(needle), "runnable.rs no longer uses {needle}");
    }
    let deciding = [
        ".implements(",
        ".has_response(",
        "unsupported.is_none()",
        "unsupported.is_some()",
        "= &mode.unsupported",
    ];
    let mut offenders = Vec::new();
    for p in sources(&workspace().join("crates/fairbench/src")) {
        let c = code(&p);
        if let Some(n) = deciding.iter().find(|n| c.contains(**n)) {
            offenders.push(format!("{} ({n})", rel(&p)));
        }
    }
    assert!(
        offenders.is_empty(),
        "a second runnability rule (use fairbench_zoo::runnable): {offenders:?}"
    );
}

/// Files still over the limit, with the most lines each may have: they may
/// only shrink (lower the figure when one does; remove it once under 700).
/// None is, today: keep it so.
const STILL_OVER: &[(&str, usize)] = &[];

const MAX_LINES: usize = 700;

#[test]
fn no_source_file_grows_past_700_lines() {
    let mut over = Vec::new();
    for krate in ["engine", "sys", "zoo", "fairbench"] {
        for sub in ["src", "tests", "benches"] {
            let dir = workspace().join(format!("crates/{krate}/{sub}"));
            if !dir.exists() {
                continue;
            }
            for p in sources(&dir) {
                let n = read(&p).lines().count();
                let r = rel(&p);
                let limit = STILL_OVER
                    .iter()
                    .find(|(f, _)| *f == r)
                    .map_or(MAX_LINES, |&(_, n)| n);
                if n > limit {
                    over.push(format!("{r}: {n} lines (at most {limit})"));
                }
            }
        }
    }
    assert!(over.is_empty(), "split these: {over:?}");
    for (f, _) in STILL_OVER {
        assert!(
            workspace().join(f).exists(),
            "{f} is gone: remove it from STILL_OVER"
        );
    }
}
