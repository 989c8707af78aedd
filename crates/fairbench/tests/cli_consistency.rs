//! One command line: `latest` and unknown runs alike everywhere, `--format`
//! with `--json` as its alias, the read-only database, `--db` from the
//! current directory, examples in every `--help`, the git revision in
//! `--version`, shell completions and the man page, and `run`'s load
//! profile and `--variant` on the command line.

mod support;

use std::path::{Path, PathBuf};
use std::process::Output;

use clap::CommandFactory;
use support::root::Root;
use support::{command, run_in, stderr, stdout, text};

use fairbench::build_revision as revision;

fn fixture_db(dir: &Path) -> PathBuf {
    let p = dir.join("sub").join("r.db");
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    fairbench::report::fixture::standard_db(&p);
    p
}

fn code(o: &Output) -> i32 {
    o.status.code().unwrap_or(-1)
}

#[test]
fn latest_and_an_unknown_run_mean_the_same_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    fixture_db(dir.path());
    let d = dir.path();
    for args in [
        &["show", "latest", "--db", "sub/r.db"][..],
        &[
            "report", "latest", "--db", "sub/r.db", "--format", "md", "-o", "-",
        ],
        &["compare", "1", "latest", "--db", "sub/r.db"],
    ] {
        let o = run_in(d, args);
        assert_eq!(code(&o), 0, "{args:?}: {}", text(&o));
    }
    let mut messages = Vec::new();
    for args in [
        &["show", "99", "--db", "sub/r.db"][..],
        &["report", "99", "--db", "sub/r.db", "--format", "json"],
        &["compare", "99", "latest", "--db", "sub/r.db"],
        &["compare", "1", "99", "--db", "sub/r.db"],
    ] {
        let o = run_in(d, args);
        assert_eq!(code(&o), 1, "{args:?}: {}", text(&o));
        messages.push(stderr(&o).trim().to_string());
    }
    assert_eq!(
        messages[0],
        "fairbench: no run 99 in sub/r.db (`fairbench runs` lists them)"
    );
    assert!(messages.iter().all(|m| m == &messages[0]), "{messages:?}");
}

#[test]
fn format_json_and_its_json_alias_print_the_same() {
    let dir = tempfile::tempdir().unwrap();
    fixture_db(dir.path());
    let d = dir.path();
    let pairs: &[(&[&str], &[&str])] = &[
        (
            &["show", "1", "--db", "sub/r.db", "--format", "json"],
            &["show", "1", "--db", "sub/r.db", "--json"],
        ),
        (
            &["runs", "--db", "sub/r.db", "--format", "json"],
            &["runs", "--db", "sub/r.db", "--json"],
        ),
        (
            &[
                "report", "1", "--db", "sub/r.db", "--format", "json", "-o", "-",
            ],
            &["report", "1", "--db", "sub/r.db", "--json", "-o", "-"],
        ),
        (
            &["compare", "1", "2", "--db", "sub/r.db", "--format", "json"],
            &["compare", "1", "2", "--db", "sub/r.db", "--json"],
        ),
    ];
    for (a, b) in pairs {
        let (oa, ob) = (run_in(d, a), run_in(d, b));
        assert_eq!(code(&oa), 0, "{a:?}: {}", text(&oa));
        let ja: serde_json::Value = serde_json::from_str(&stdout(&oa)).expect("json");
        let jb: serde_json::Value = serde_json::from_str(&stdout(&ob)).expect("json");
        assert_eq!(ja, jb, "{a:?} vs {b:?}");
    }
    // Text stays text, and the two spellings cannot disagree.
    let o = run_in(d, &["show", "1", "--db", "sub/r.db", "--format", "text"]);
    assert!(serde_json::from_str::<serde_json::Value>(&stdout(&o)).is_err());
    let o = run_in(
        d,
        &[
            "show", "1", "--db", "sub/r.db", "--json", "--format", "text",
        ],
    );
    assert_eq!(code(&o), 2, "{}", text(&o));
    let root = support::check::fixture_root();
    let root = root.to_str().unwrap();
    let o = run_in(d, &["servers", "--root", root, "--format", "json"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let j: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert!(
        j["servers"].as_array().is_some_and(|s| !s.is_empty()),
        "{j}"
    );
}

/// Each file's name, length and hash.
fn snapshot(dir: &Path) -> Vec<(String, usize, u64)> {
    use std::hash::{Hash, Hasher};
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| {
            let bytes = std::fs::read(e.path()).unwrap();
            let mut h = std::collections::hash_map::DefaultHasher::new();
            bytes.hash(&mut h);
            (
                e.file_name().to_string_lossy().into_owned(),
                bytes.len(),
                h.finish(),
            )
        })
        .collect();
    v.sort();
    v
}

fn chmod(p: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// The reading commands, against `db` relative to `dir`.
fn readers(db: &str) -> Vec<Vec<String>> {
    let v = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    vec![
        v(&["show", "latest", "--db", db, "--format", "json"]),
        v(&["runs", "--db", db]),
        v(&["report", "1", "--db", db, "--format", "csv", "-o", "-"]),
        v(&["compare", "1", "latest", "--db", db, "--format", "md"]),
    ]
}

#[test]
fn reading_commands_never_write_and_work_on_a_read_only_database() {
    let dir = tempfile::tempdir().unwrap();
    let db = fixture_db(dir.path());
    let sub = db.parent().unwrap();
    chmod(&db, 0o444);
    chmod(sub, 0o555);
    let before = snapshot(sub);
    for args in readers("sub/r.db") {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = run_in(dir.path(), &args);
        assert_eq!(code(&o), 0, "{args:?}: {}", text(&o));
    }
    // Not migrated, not switched to WAL, no side files left or made.
    assert_eq!(snapshot(sub), before);
    // As root the modes above bind nothing: read as an unprivileged user
    // too, who can neither write the file nor make a WAL index beside it.
    if unsafe { libc::geteuid() } == 0 && Path::new("/usr/bin/setpriv").exists() {
        chmod(dir.path(), 0o755);
        let bin = support::bin();
        for args in readers(db.to_str().unwrap()) {
            let o = std::process::Command::new("/usr/bin/setpriv")
                .args(["--reuid=65534", "--regid=65534", "--clear-groups", bin])
                .args(&args)
                .current_dir("/")
                .output()
                .unwrap();
            let t = text(&o);
            if t.contains("Permission denied") && t.contains(bin) {
                eprintln!("the binary is not readable by nobody here; skipped");
                break;
            }
            assert_eq!(code(&o), 0, "as nobody {args:?}: {t}");
        }
        assert_eq!(snapshot(sub), before);
    }
    chmod(sub, 0o755);
}

#[test]
fn an_old_schema_is_read_through_a_copy_and_a_newer_one_refused() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("old.db");
    {
        let c = rusqlite::Connection::open(&p).unwrap();
        c.execute_batch("CREATE TABLE unrelated (x INTEGER); PRAGMA user_version = 0;")
            .unwrap();
    }
    chmod(&p, 0o444);
    let before = std::fs::read(&p).unwrap();
    let o = run_in(dir.path(), &["runs", "--db", "old.db"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert!(stdout(&o).contains("no runs in old.db"), "{}", text(&o));
    let o = run_in(dir.path(), &["show", "--db", "old.db"]);
    assert_eq!(code(&o), 1);
    assert!(
        stderr(&o).contains("old.db holds no runs yet"),
        "{}",
        text(&o)
    );
    assert_eq!(std::fs::read(&p).unwrap(), before, "migrated in place");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);

    let n = dir.path().join("new.db");
    rusqlite::Connection::open(&n)
        .unwrap()
        .execute_batch("PRAGMA user_version = 999;")
        .unwrap();
    let o = run_in(dir.path(), &["show", "--db", "new.db"]);
    assert_eq!(code(&o), 1);
    let e = stderr(&o);
    assert!(e.contains("newer than this fairbench"), "{e}");
    assert_eq!(e.trim().lines().count(), 1, "{e}");
}

#[test]
fn every_help_has_examples() {
    let cmd = fairbench::cli::Cli::command();
    let mut names = vec![String::new()];
    names.extend(
        cmd.get_subcommands()
            .filter(|s| !s.is_hide_set())
            .map(|s| s.get_name().to_string()),
    );
    assert!(names.len() >= 10, "{names:?}");
    for name in names {
        let mut args: Vec<&str> = Vec::new();
        if !name.is_empty() {
            args.push(&name);
        }
        args.push("--help");
        let o = command().args(&args).output().unwrap();
        assert_eq!(code(&o), 0);
        let out = stdout(&o);
        let ex = out
            .split("Examples:")
            .nth(1)
            .unwrap_or_else(|| panic!("{args:?}: no examples"));
        assert!(ex.contains(&format!("fairbench {name}")), "{args:?}: {ex}");
    }
}

#[test]
fn version_names_the_git_revision() {
    let o = command().arg("--version").output().unwrap();
    let v = stdout(&o);
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let rev = revision::revision(manifest);
    assert!(
        v.starts_with(&format!("fairbench {} (git ", env!("CARGO_PKG_VERSION"))),
        "{v}"
    );
    assert!(v.contains(&format!("(git {rev})")), "{v} vs {rev}");

    // A tarball: no repository at all.
    let tar = tempfile::tempdir().unwrap();
    std::fs::write(tar.path().join("Cargo.toml"), "[package]\n").unwrap();
    assert_eq!(revision::revision(tar.path()), "unknown");
    // A clean clone: its HEAD, abbreviated.
    let git = |args: &[&str]| {
        let o = std::process::Command::new("git")
            .args([
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "-c",
                "init.defaultBranch=main",
            ])
            .args(args)
            .current_dir(tar.path())
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).trim().to_string()
    };
    if std::process::Command::new("git")
        .arg("--version")
        .output()
        .is_err()
    {
        return;
    }
    git(&["init", "-q"]);
    // Unpacked inside some other repository, not holding this crate.
    std::fs::create_dir(tar.path().join("inner")).unwrap();
    std::fs::write(tar.path().join("inner/Cargo.toml"), "[package]\n").unwrap();
    git(&["add", "Cargo.toml"]);
    git(&["commit", "-qm", "x"]);
    let head = git(&["rev-parse", "--short", "HEAD"]);
    assert!(!head.is_empty());
    assert_eq!(revision::revision(tar.path()), head);
    assert_eq!(revision::revision(&tar.path().join("inner")), "unknown");
    assert!(revision::watched(tar.path())
        .iter()
        .any(|p| p.ends_with("HEAD")));
}

#[test]
fn completions_and_the_man_page() {
    let o = command().args(["completions", "bash"]).output().unwrap();
    assert_eq!(code(&o), 0, "{}", text(&o));
    let bash = stdout(&o);
    assert!(
        bash.contains("load") && bash.contains("--connections"),
        "{bash}"
    );
    assert!(bash.contains("complete -F"), "a bash completion script");
    for (shell, needle) in [("zsh", "--connections"), ("fish", "-l connections")] {
        let o = command().args(["completions", shell]).output().unwrap();
        assert_eq!(code(&o), 0);
        assert!(stdout(&o).contains(needle), "{shell}");
    }
    let o = command().args(["completions", "tcsh"]).output().unwrap();
    assert_eq!(code(&o), 2);

    let o = command().arg("man").output().unwrap();
    assert_eq!(code(&o), 0, "{}", text(&o));
    let page = stdout(&o);
    assert!(page.contains("\n.TH fairbench 1"), "{page}");
    assert_eq!(page.matches("\n.SH NAME\n").count(), 1, "one NAME section");
    assert!(
        page.contains(".SH \"FAIRBENCH LOAD\""),
        "subcommands have sections"
    );
    assert!(page.contains("\\-\\-connections"), "options are in");
    assert!(page.contains(".SS EXAMPLES"), "examples are in");
    // Valid roff: groff formats it without a warning.
    if Path::new("/usr/bin/groff").exists() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("fairbench.1");
        std::fs::write(&f, &page).unwrap();
        let o = std::process::Command::new("/usr/bin/groff")
            .args(["-man", "-Tutf8", "-ww", "-z"])
            .arg(&f)
            .output()
            .unwrap();
        assert_eq!(code(&o), 0, "{}", text(&o));
        assert!(stderr(&o).trim().is_empty(), "groff: {}", stderr(&o));
    }
}

const SUITE: &str = r#"
name = "one"
servers = ["*"]
scenarios = ["static"]
cores = [1]
warmup = "1s"
duration = "2s"
repetitions = 1
[[load]]
model = "closed"
connections = 7
threads = 1
[[load]]
model = "rate"
rate = 100
connections = 7
"#;

#[test]
fn run_takes_the_load_profile_and_the_variant_on_the_command_line() {
    let root = Root::new(&[("srv-a", &[])]);
    root.suite("one", SUITE);
    let dry = |extra: &[&str]| {
        let mut args = vec!["run", "--suite", "one", "--dry-run"];
        args.extend_from_slice(extra);
        let o = root.run(&args);
        (code(&o), stdout(&o), stderr(&o))
    };
    let (c, out, err) = dry(&[]);
    assert_eq!(c, 0, "{err}");
    assert_eq!(out.matches("closed c=7").count(), 2, "{out}");
    assert_eq!(out.matches("rate 100/s").count(), 2, "{out}");

    let (c, out, err) = dry(&[
        "--variant",
        "normalized",
        "--connections",
        "1k",
        "--rate",
        "10k",
        "--threads",
        "2",
        "--warmup",
        "3s",
        "--timeout",
        "500ms",
    ]);
    assert_eq!(c, 0, "{err}");
    let cases: Vec<&str> = out.lines().filter(|l| l.contains("warm-up")).collect();
    assert_eq!(cases.len(), 1, "one profile, one variant: {out}");
    assert!(cases[0].contains("rate 10000/s c=1000 t=2"), "{out}");
    assert!(
        cases[0].contains("normalized") && cases[0].contains("(3s warm-up"),
        "{out}"
    );

    // `fairbench run --pipeline 4`: unset parts come from the suite's first profile.
    let (c, out, err) = dry(&["--pipeline", "4", "--variant", "native/default"]);
    assert_eq!(c, 0, "{err}");
    let cases: Vec<&str> = out.lines().filter(|l| l.contains("warm-up")).collect();
    assert_eq!(cases.len(), 1, "{out}");
    assert!(
        cases[0].contains("closed c=7") && cases[0].contains("p=4"),
        "{out}"
    );
    assert!(cases[0].contains("default"), "{out}");

    for (args, needle) in [
        (&["--rate", "10", "--pipeline", "2"][..], "--pipeline"),
        (&["--connections", "1q"], "--connections"),
        (&["--rate", "0"], "--rate"),
        (&["--timeout", "0"], "--timeout"),
        (&["--warmup", "soon"], "--warmup"),
        (&["--threads", "0"], "--threads"),
        (&["--variant", "jit/fast"], "--variant"),
    ] {
        let (c, _, err) = dry(args);
        assert_eq!(c, 2, "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
    }
    // The mode part selects modes as the suite's `modes` does.
    let (_, out, err) = dry(&["--variant", "jit"]);
    assert!(err.contains("no mode matches \"jit\""), "{err}");
    assert!(!out.contains("warm-up"), "{out}");
}

#[test]
fn a_reader_that_went_away_ends_fairbench_as_sigpipe_would_without_a_trace() {
    use std::os::unix::process::ExitStatusExt;
    let dir = tempfile::tempdir().unwrap();
    fixture_db(dir.path());
    for args in [
        &["show", "latest", "--db", "sub/r.db", "--json"][..],
        &[
            "report", "latest", "--db", "sub/r.db", "--format", "csv", "-o", "-",
        ],
        &["man"],
    ] {
        // The pipe's reader is gone before fairbench writes a byte: its
        // first print fails with EPIPE, whatever the timing.
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let o = command()
            .args(args)
            .current_dir(dir.path())
            .env("RUST_BACKTRACE", "1")
            .stdout(writer)
            .stderr(std::process::Stdio::piped())
            .output()
            .unwrap();
        let err = stderr(&o);
        assert_eq!(
            o.status.signal(),
            Some(libc::SIGPIPE),
            "{args:?}: {:?} {err}",
            o.status
        );
        assert!(
            !err.contains("panicked") && !err.contains("backtrace"),
            "{args:?}: {err}"
        );
    }
}
