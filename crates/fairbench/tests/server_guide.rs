//! docs/server-manifest.md's worked example, "From an empty folder to a
//! passing check": its files are written into a fresh root exactly as the
//! guide prints them (a server that is not in the zoo, configured by a
//! templated config file), and `servers` and `check` behave as it says.

mod support;

use std::path::{Path, PathBuf};

use support::check::fairbench;
use support::repo;

/// (path under the root, contents) of every `<!-- guide-file: PATH -->`
/// block of the guide.
fn guide_files() -> Vec<(String, String)> {
    let guide = std::fs::read_to_string(repo().join("docs/server-manifest.md")).unwrap();
    let mut out = Vec::new();
    let mut rest = guide.as_str();
    while let Some(at) = rest.find("<!-- guide-file: ") {
        rest = &rest[at + "<!-- guide-file: ".len()..];
        let (path, after) = rest.split_once(" -->").unwrap();
        let body = after.split_once("```").unwrap().1;
        let body = body.split_once('\n').unwrap().1;
        let (text, after) = body.split_once("```").unwrap();
        out.push((path.to_string(), text.to_string()));
        rest = after;
    }
    out
}

/// A root with the repository's scenarios and the guide's files.
fn guide_root() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    std::fs::create_dir_all(root.join("scenarios/files")).unwrap();
    for f in [
        "static.toml",
        "dynamic.toml",
        "file.toml",
        "files/hello-16k.txt",
    ] {
        std::fs::copy(
            repo().join("scenarios").join(f),
            root.join("scenarios").join(f),
        )
        .unwrap();
    }
    let files = guide_files();
    let names: Vec<&str> = files.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(
        names,
        [
            "servers/hello-py/server.py",
            "servers/hello-py/hello.conf",
            "servers/hello-py/server.toml"
        ]
    );
    for (path, text) in files {
        let p = root.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    (dir, root)
}

fn root_arg(root: &Path) -> String {
    root.display().to_string()
}

#[test]
fn the_guides_server_passes_check_from_its_templated_config_file() {
    let (_dir, root) = guide_root();
    let r = root_arg(&root);
    let work = root.join("work");
    let w = root_arg(&work);
    let run = fairbench(
        &[
            "check",
            "--root",
            &r,
            "--work-dir",
            &w,
            "--servers",
            "hello-py",
        ],
        &[],
        "guide-pass",
    );
    run.expect_code(0);
    assert_eq!(
        run.stdout.matches("PASS  hello-py").count(),
        6,
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("6 cases: 6 pass, 0 warn, 0 fail"),
        "{}",
        run.stdout
    );
    // The port came from the template: the filled copy is in the start's
    // own folder, with no placeholder left.
    let filled: Vec<String> = std::fs::read_dir(work.join("logs"))
        .unwrap()
        .filter_map(|e| {
            let p = e.unwrap().path().join("hello.conf");
            std::fs::read_to_string(p).ok()
        })
        .collect();
    assert_eq!(filled.len(), 6, "{filled:?}");
    for f in &filled {
        assert!(!f.contains("{port}") && f.contains("port = "), "{f}");
    }
    // No reference server in this root: said in one line, not left blank.
    let note: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| {
            l.starts_with("note: the reference server go-nethttp is not part of this check")
        })
        .collect();
    assert_eq!(note.len(), 1, "{}", run.stderr);
    assert!(note[0].contains("no bytes were compared"), "{}", note[0]);
}

#[test]
fn a_server_that_lists_its_scenarios_skips_the_others_with_one_line() {
    let (_dir, root) = guide_root();
    let manifest = root.join("servers/hello-py/server.toml");
    let text = std::fs::read_to_string(&manifest).unwrap();
    std::fs::write(
        &manifest,
        text.replace(
            "[toolchain]",
            "scenarios = [\"static\", \"dynamic\"]\n\n[toolchain]",
        ),
    )
    .unwrap();
    let (r, w) = (root_arg(&root), root_arg(&root.join("work")));
    let run = fairbench(
        &[
            "check",
            "--root",
            &r,
            "--work-dir",
            &w,
            "--variant",
            "normalized",
        ],
        &[],
        "guide-scenarios",
    );
    run.expect_code(0);
    let skips: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.starts_with("skip hello-py"))
        .collect();
    assert_eq!(
        skips,
        ["skip hello-py file: not implemented (server.toml lists static, dynamic)"],
        "{}",
        run.stderr
    );
    assert!(
        run.stdout
            .contains("2 cases: 2 pass, 0 warn, 0 fail; 1 skipped"),
        "{}",
        run.stdout
    );
}

#[test]
fn a_wrongly_cased_placeholder_is_an_error_and_servers_says_why_nothing_is_listed() {
    let (_dir, root) = guide_root();
    let conf = root.join("servers/hello-py/hello.conf");
    let text = std::fs::read_to_string(&conf).unwrap();
    std::fs::write(&conf, text.replace("{port}", "{PORT}")).unwrap();
    let r = root_arg(&root);
    let run = fairbench(&["servers", "--root", &r], &[], "guide-case");
    run.expect_code(1);
    let line = run
        .stdout
        .lines()
        .find(|l| l.starts_with("not listed: hello-py: "))
        .unwrap_or_else(|| panic!("{}", run.stdout));
    assert!(
        line.contains("modes.native.templates[0]")
            && line.contains("hello.conf: unknown placeholder {PORT}")
            && line.contains("use {port}"),
        "{line}"
    );
    assert!(!run.stdout.contains("(no servers under"), "{}", run.stdout);
}

#[test]
fn a_scenario_name_that_does_not_exist_is_a_manifest_error() {
    let (_dir, root) = guide_root();
    let manifest = root.join("servers/hello-py/server.toml");
    let text = std::fs::read_to_string(&manifest).unwrap();
    std::fs::write(
        &manifest,
        text.replace("[toolchain]", "scenarios = [\"statik\"]\n\n[toolchain]")
            .replace(
                "[responses.normalized]",
                "[responses.normalized]\nknown_deviations = [{ header = \"Server\", scenario = \"files\", reason = \"r\" }]",
            ),
    )
    .unwrap();
    let r = root_arg(&root);
    let run = fairbench(&["servers", "--root", &r], &[], "guide-unknown-scenario");
    run.expect_code(1);
    for needle in [
        "field scenarios[0]: no scenario named \"statik\"; there are: dynamic, file, static",
        "field responses.normalized.known_deviations[0].scenario: no scenario named \"files\"",
    ] {
        assert!(run.stderr.contains(needle), "{needle}\n{}", run.stderr);
    }
    assert!(
        run.stdout.starts_with("not listed: hello-py: "),
        "{}",
        run.stdout
    );
}

#[test]
fn a_suite_plans_no_case_for_a_scenario_the_server_does_not_list() {
    let (_dir, root) = guide_root();
    let manifest = root.join("servers/hello-py/server.toml");
    let text = std::fs::read_to_string(&manifest).unwrap();
    std::fs::write(
        &manifest,
        text.replace("[toolchain]", "scenarios = [\"static\"]\n\n[toolchain]"),
    )
    .unwrap();
    std::fs::create_dir_all(root.join("suites")).unwrap();
    std::fs::copy(
        repo().join("suites/quick.toml"),
        root.join("suites/quick.toml"),
    )
    .unwrap();
    let r = root_arg(&root);
    let run = fairbench(
        &["run", "--root", &r, "--suite", "quick", "--dry-run"],
        &[],
        "guide-plan",
    );
    run.expect_code(0);
    assert!(
        run.stderr
            .contains("skipped hello-py dynamic: not implemented (server.toml lists static)"),
        "{}",
        run.stderr
    );
    assert!(
        run.stdout.contains("hello-py native/normalized static"),
        "{}",
        run.stdout
    );
    assert!(!run.stdout.contains("dynamic 1c"), "{}", run.stdout);
}
