//! The README's "Your own service" section: its targets file is written as
//! shown and every command of its `sh` block is run as written, against
//! local counting servers put in place of its URLs; what the text promises
//! is checked in the output.

mod support;

use std::path::Path;
use std::time::Duration;

use fairbench_testkit::counting::Counting;
use support::command as fairbench;

/// The section's ```toml block and its ```sh lines.
fn section() -> (String, Vec<String>) {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md"))
            .expect("README.md");
    let s = readme
        .split("### Your own service")
        .nth(1)
        .expect("the README has the section");
    let s = s.split("\n### ").next().unwrap();
    let block = |lang: &str| {
        s.split(&format!("```{lang}\n"))
            .nth(1)
            .and_then(|b| b.split("```").next())
            .unwrap_or_else(|| panic!("no {lang} block"))
            .to_string()
    };
    let cmds = block("sh")
        .lines()
        .filter(|l| l.starts_with("fairbench "))
        .map(str::to_string)
        .collect();
    (block("toml"), cmds)
}

/// Spaces split, double quotes group (as a shell does for these lines).
fn split(cmd: &str) -> Vec<String> {
    let mut out = Vec::new();
    let (mut cur, mut quoted, mut any) = (String::new(), false, false);
    for ch in cmd.chars() {
        match ch {
            '"' => {
                quoted = !quoted;
                any = true;
            }
            ' ' if !quoted => {
                if any {
                    out.push(std::mem::take(&mut cur));
                    any = false;
                }
            }
            c => {
                cur.push(c);
                any = true;
            }
        }
    }
    if any {
        out.push(cur);
    }
    out
}

#[test]
fn every_command_of_the_section_runs_as_promised() {
    let (toml, cmds) = section();
    assert_eq!(cmds.len(), 6, "{cmds:?}");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("requests.toml"), toml).unwrap();
    let a = Counting::start(Duration::ZERO);
    let b = Counting::start(Duration::ZERO);
    for cmd in &cmds {
        let line = cmd
            .replace("127.0.0.1:8080", &format!("127.0.0.1:{}", a.port))
            .replace("127.0.0.1:8081", &format!("127.0.0.1:{}", b.port))
            // One server stall of ~60 ms would miss 50 ms and move the knee.
            .replace("p99<=50ms", "p99<=1s");
        let args = split(&line);
        let out = fairbench()
            .args(&args[1..])
            .current_dir(dir.path())
            .output()
            .expect("run fairbench");
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        assert_eq!(out.status.code(), Some(0), "{cmd}\n{stdout}\n{stderr}");
        if cmd.contains("--targets") {
            for name in ["item", "create"] {
                assert!(
                    stdout.lines().any(|l| l.trim_start().starts_with(name)),
                    "{cmd}: no row for {name}\n{stdout}"
                );
            }
            assert!(a.by_prefix("GET /items/").len() > 50, "zipf values spread");
            assert!(a.by_prefix("BODY {\"id\": ").len() > 10, "uniform bodies");
        } else if cmd.contains("{{uniform") {
            assert!(
                a.by_prefix("GET /items/").len() > 1500,
                "2000 draws of 10000 values"
            );
        } else if cmd.contains("--stages") {
            for stage in ["1s:100", "2s:100-500", "1s:500"] {
                assert!(stdout.contains(stage), "{stage}\n{stdout}");
            }
        } else if cmd.contains("--threshold") {
            assert!(
                stdout.contains("Threshold") && stdout.contains("pass"),
                "{stdout}"
            );
        } else if cmd.contains("--knee") {
            assert!(stdout.contains("knee: 800 req/s"), "{stdout}");
        } else if cmd.contains("--vs") {
            assert!(stdout.contains("3 repetitions each"), "{stdout}");
            assert!(b.count("GET /") > 0, "B was loaded");
        }
    }
}
