//! A file is split by meaning, not at a line count (issue 38): a module
//! that begins `use super::*;` is half of its parent, reading the parent's
//! private names as its own, and a reader of either cannot tell what the
//! other needs. A child module names what it takes from its parent. Test
//! modules (`#[cfg(test)]`, files named `tests.rs`) may take everything:
//! they test the parent's private parts on purpose.

use crate::{code, members, rel, sources, workspace};

/// Whether production `code` imports everything of its parent at the top
/// of the file (an inline `mod x { use super::*; }` is part of the file
/// it is written in, not half of another).
fn is_half(code: &str) -> bool {
    code.lines()
        .any(|l| l.trim_end() == "use super::*;" || l.trim_end() == "pub use super::*;")
}

#[test]
fn a_glob_import_of_the_parent_is_found_outside_tests_only() {
    assert!(is_half("//! doc\n\nuse super::*;\n\nfn f() {}\n"));
    assert!(!is_half("use super::{a, b};\nuse super::super::*;\n"));
    assert!(!is_half("// use super::*;\n"));
    assert!(!is_half("pub mod as_hex {\n    use super::*;\n}\n"));
}

#[test]
fn no_module_is_half_of_its_parent() {
    let mut halves = Vec::new();
    let mut seen = 0;
    for krate in members() {
        let src = workspace().join(format!("crates/{krate}/src"));
        for p in sources(&src) {
            if p.ends_with("tests.rs") {
                continue;
            }
            seen += 1;
            if is_half(&code(&p)) {
                halves.push(rel(&p));
            }
        }
    }
    assert!(seen > 100, "the sources were not found");
    assert!(
        halves.is_empty(),
        "`use super::*;` makes a file half of its parent: import what it uses by name:\n{}",
        halves.join("\n")
    );
}
