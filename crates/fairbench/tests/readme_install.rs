//! The README's way to get `fairbench` on the PATH, run as written (into a
//! throw-away root, reusing this build's target folder), and then its
//! examples typed as a user types them: through a shell, by name.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use support::load::{Server, HELLO};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The README's install command: the `cargo install` line right after its
/// two `make` commands.
fn install_command() -> String {
    let readme = std::fs::read_to_string(repo().join("README.md")).expect("README.md");
    let after_make = readme
        .split("make test ")
        .nth(1)
        .expect("the README's two commands");
    let line = after_make
        .lines()
        .find(|l| l.starts_with("cargo install"))
        .expect("an install command after the two commands");
    // Before the next section: it comes first, not somewhere further down.
    let section_end = after_make.find("\n## ").unwrap_or(after_make.len());
    assert!(after_make.find(line).unwrap() < section_end);
    line.split('#').next().unwrap().trim().to_string()
}

/// The target folder this test's build used, so that the install reuses
/// it: `CARGO_TARGET_DIR` when it is set (the flake hunt sets it: its
/// binaries run from copies elsewhere), else the folder this binary was
/// built in (`<target>/debug/deps/`), else the checkout's. A fixed
/// `../../target` would miss the hunt's own and rebuild from nothing.
fn target_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from) {
        if d.is_absolute() {
            return d;
        }
    }
    let exe = std::env::current_exe().expect("the test binary's path");
    match exe.parent() {
        Some(deps) if deps.ends_with("debug/deps") => {
            deps.ancestors().nth(2).unwrap().to_path_buf()
        }
        _ => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target"),
    }
}

/// Runs `line` in `sh` with `bin` first on the PATH: (exit code, stdout, stderr).
fn shell(line: &str, dir: &Path, bin: &Path) -> (i32, String, String) {
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new("sh")
        .args(["-c", line])
        .current_dir(dir)
        .env("PATH", path)
        // `make test`'s runner gives test binaries RUSTC_BOOTSTRAP (for
        // libtest's --report-time); a cargo started here would build the
        // shared target folder's crates as a nightly compiler's, which the
        // doc tests that follow cannot load.
        .env_remove("RUSTC_BOOTSTRAP")
        .output()
        .expect("sh");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn the_readme_install_puts_fairbench_on_the_path_and_its_examples_work() {
    let cmd = install_command();
    assert!(cmd.contains("--path crates/fairbench"), "{cmd}");
    let root = tempfile::tempdir().unwrap();
    let bin = root.path().join("bin");
    // As written, plus where to (not ~/.cargo) and --debug so that the
    // target folder this test was built in is reused, not a release build.
    let (code, out, err) = shell(
        &format!(
            "CARGO_TARGET_DIR='{}' {cmd} --debug --root '{}'",
            target_dir().display(),
            root.path().display()
        ),
        &repo(),
        &bin,
    );
    assert_eq!(code, 0, "{cmd}: {out}{err}");
    assert!(bin.join("fairbench").is_file(), "{err}");

    // By name, from the shell, as the README's examples are typed.
    let (code, out, err) = shell("command -v fairbench", &repo(), &bin);
    assert_eq!(code, 0, "{err}");
    assert_eq!(Path::new(out.trim()), bin.join("fairbench"));
    let (code, out, err) = shell("fairbench servers", &repo(), &bin);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("go-nethttp"), "{out}");
    // `load` works anywhere, not only in the checkout.
    let srv = Server::plain(HELLO);
    let elsewhere = tempfile::tempdir().unwrap();
    let (code, out, err) = shell(
        &format!("fairbench load -n 100 -c 2 {}", srv.url()),
        elsewhere.path(),
        &bin,
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("100 planned = 100 answered"), "{out}");
}
