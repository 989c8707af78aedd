//! Nothing the repository ships cites a path outside it (issue 39, point
//! 10): a reader of a clone has no `../shared` folder and no `/work`
//! machine, so a sentence that sends them there points nowhere. A doc names
//! a publication by its title and author instead, and code reads what it
//! needs from the repository or from a flag.

use std::path::{Path, PathBuf};

use crate::{read, rel, workspace};

/// What a citation of a place outside the repository looks like.
const OUTSIDE: [&str; 3] = ["../shared", "shared/reference", "/work/"];

/// Folders that hold what a build or a package manager made, not what the
/// repository ships (the same as .gitignore's).
const GENERATED: [&str; 5] = [
    "node_modules",
    ".dart_tool",
    "__pycache__",
    "target",
    "build",
];

/// The lines of `text` that cite a path outside the repository, as
/// `line: text`.
fn citing_lines(text: &str) -> Vec<String> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| OUTSIDE.iter().any(|p| l.contains(p)))
        .map(|(k, l)| format!("{}: {}", k + 1, l.trim()))
        .collect()
}

/// Every file under `dir`, recursively, without hidden entries and
/// generated folders.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display())) {
            let p = e.unwrap().path();
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            if name.starts_with('.') || GENERATED.contains(&name.as_str()) {
                continue;
            }
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// The text files a reader of the repository reads: the README, the docs,
/// the suites, the servers and every crate's sources.
fn shipped_text() -> Vec<PathBuf> {
    let root = workspace();
    let mut out = vec![root.join("README.md")];
    for dir in ["docs", "suites", "servers"] {
        out.extend(files(&root.join(dir)));
    }
    for krate in crate::members() {
        out.extend(files(&root.join(format!("crates/{krate}/src"))));
    }
    // Images and binaries are not read: a citation is text.
    out.retain(|p| std::fs::read(p).is_ok_and(|b| std::str::from_utf8(&b).is_ok()));
    out
}

#[test]
fn a_citation_outside_the_repository_is_found() {
    assert_eq!(
        citing_lines("ok\nsee ../shared/reference/publications.md\n"),
        ["2: see ../shared/reference/publications.md"]
    );
    assert_eq!(
        citing_lines("the notes in /work/notes/x.md"),
        ["1: the notes in /work/notes/x.md"]
    );
    assert!(citing_lines("docs/study.md, \"Sources\"; crates/fairbench/src/lib.rs").is_empty());
}

#[test]
fn nothing_shipped_cites_a_path_outside_the_repository() {
    let files = shipped_text();
    let names: Vec<String> = files.iter().map(|p| rel(p)).collect();
    for expected in [
        "README.md",
        "docs/study.md",
        "suites/study.toml",
        "crates/fairbench/src/lib.rs",
    ] {
        assert!(
            names.iter().any(|n| n == expected),
            "{expected} was not read"
        );
    }
    assert!(
        names.iter().any(|n| n.starts_with("servers/")),
        "no server file was read"
    );
    let mut found = Vec::new();
    for p in &files {
        for line in citing_lines(&read(p)) {
            found.push(format!("{}:{line}", rel(p)));
        }
    }
    assert!(
        found.is_empty(),
        "these lines cite a path outside the repository ({}): name the publication or the \
         source itself, or put what is needed in the repository:\n{}",
        OUTSIDE.join(", "),
        found.join("\n")
    );
}
