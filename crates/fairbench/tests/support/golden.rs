//! Golden files: outputs compared byte for byte with tests/golden/, and
//! rewritten with UPDATE_GOLDEN=1 after an intended change.

use std::path::{Path, PathBuf};

pub fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

/// Compares `actual` with tests/golden/`name`; with UPDATE_GOLDEN=1 writes it
/// instead. On a difference, prints the differing lines and fails.
pub fn assert_golden(name: &str, actual: &str) {
    let path = golden_dir().join(name);
    if std::env::var_os("UPDATE_GOLDEN").is_some_and(|v| v == "1") {
        std::fs::create_dir_all(golden_dir()).unwrap();
        std::fs::write(&path, actual).unwrap();
        eprintln!("updated {}", path.display());
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "cannot read golden file {} ({e}); run with UPDATE_GOLDEN=1 to create it",
            path.display()
        )
    });
    if expected == actual {
        return;
    }
    let (e, a): (Vec<&str>, Vec<&str>) = (expected.lines().collect(), actual.lines().collect());
    let mut diff = String::new();
    let mut shown = 0;
    for i in 0..e.len().max(a.len()) {
        let (x, y) = (e.get(i), a.get(i));
        if x != y {
            if let Some(x) = x {
                diff.push_str(&format!("{:>5} - {x}\n", i + 1));
            }
            if let Some(y) = y {
                diff.push_str(&format!("{:>5} + {y}\n", i + 1));
            }
            shown += 1;
            if shown >= 40 {
                diff.push_str("  … (more differences)\n");
                break;
            }
        }
    }
    panic!(
        "{} differs from the output ({} vs {} lines; - golden, + actual):\n{diff}\nIf the change is intended: UPDATE_GOLDEN=1 cargo test -p fairbench --test report_golden --test compare_cli",
        path.display(),
        e.len(),
        a.len()
    );
}
