//! Process plumbing lives in the sys crate (issue 38). Production code
//! elsewhere builds a `std::process::Command` but never starts it itself:
//! it hands it to `fairbench_sys::process`, whose `bounded::run` (or
//! `run_with`, `run_logged`) runs a command to its end within a time bound,
//! `spawn_child` starts a helper that lives on, and `ServerProcess` a
//! server. So every child has a bound or an owner, a process group that
//! Ctrl-C and the cleanup reach, and a stdin that is never the terminal
//! (CI has none). Test code (`tests/`, `#[cfg(test)]` modules, files named
//! `tests.rs`, the test kit) starts what it likes.

use crate::{code, members, read, rel, sources, workspace};

/// The `std::process::Command` methods that start a process.
const STARTING: [&str; 3] = [".output()", ".status()", ".spawn()"];

/// Files outside crates/sys that may start a process themselves, and why.
/// Each must say why the sys crate cannot do it.
const ALLOWED: &[(&str, &str)] = &[(
    "crates/fairbench/build/revision.rs",
    "the build script's `git rev-parse` for --version: it runs before any \
     crate of ours is built, so it cannot call them (src/build_revision.rs \
     includes it only so that its test calls the same code)",
)];

/// The lines of `code` that start a process, as `line: text`; comments do
/// not count.
fn starting_lines(code: &str) -> Vec<String> {
    code.lines()
        .enumerate()
        .filter(|(_, l)| {
            let t = l.trim_start();
            !t.starts_with("//") && STARTING.iter().any(|m| t.contains(m))
        })
        .map(|(k, l)| format!("{}: {}", k + 1, l.trim()))
        .collect()
}

/// The production sources of every member but sys (whose business this
/// is) and the test kit: `src/` without unit-test files, and the build
/// script with what it includes.
fn production_sources() -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for krate in members() {
        if krate == "sys" || krate == "testkit" {
            continue;
        }
        let root = workspace().join(format!("crates/{krate}"));
        for sub in ["src", "build"] {
            if root.join(sub).exists() {
                out.extend(
                    sources(&root.join(sub))
                        .into_iter()
                        .filter(|p| !p.ends_with("tests.rs")),
                );
            }
        }
        if root.join("build.rs").exists() {
            out.push(root.join("build.rs"));
        }
    }
    out
}

#[test]
fn the_starting_lines_are_found_and_comments_are_not() {
    let text = "let o = Command::new(\"ip\")\n    .output()?;\n\
                // not .spawn() here\nlet s = c.status().is_ok();\nlet w = c.wait_with_output();\n";
    assert_eq!(
        starting_lines(text),
        vec!["2: .output()?;", "4: let s = c.status().is_ok();"]
    );
}

#[test]
fn only_the_sys_crate_starts_processes() {
    // What the rule looks for is what sys itself does.
    let bounded = code(&workspace().join("crates/sys/src/process/bounded.rs"));
    assert!(
        !starting_lines(&bounded).is_empty(),
        "bounded.rs no longer starts commands with {STARTING:?}: update this rule"
    );
    let mut offenders = Vec::new();
    let mut seen = 0;
    for p in production_sources() {
        seen += 1;
        let r = rel(&p);
        if ALLOWED.iter().any(|(f, _)| *f == r) {
            continue;
        }
        for line in starting_lines(&code(&p)) {
            offenders.push(format!("{r}:{line}"));
        }
    }
    assert!(seen > 100, "the sources were not found");
    assert!(
        offenders.is_empty(),
        "a process started outside crates/sys (run it with fairbench_sys::process::bounded, \
         start a helper with spawn_child, a server with ServerProcess):\n{}",
        offenders.join("\n")
    );
    for (f, _) in ALLOWED {
        let p = workspace().join(f);
        assert!(
            p.exists() && !starting_lines(&read(&p)).is_empty(),
            "{f} starts no process now (or is gone): remove it from ALLOWED"
        );
    }
}
