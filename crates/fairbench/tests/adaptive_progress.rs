//! The progress bar of an adaptive suite run stands across the rule's
//! looks and ends once. fairbench draws its bars only on a terminal, so
//! the run's standard error is a pseudo-terminal here, read to the end:
//! after the first look (repetitions 1–3, cases 1–6 of 8) the bar must
//! still count the cases of the fourth repetition. The report the run
//! writes (`run --report`) says how the repetitions stopped.

mod support;

use std::io::Read;
use std::os::fd::{FromRawFd, OwnedFd};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use support::root::Root;
use support::{repo, serial, text};

/// A server whose delay changes at every start (`--delays` in turn,
/// counted in `--counter`), so that its ratio to the reference swings by
/// 2× and the run goes past its first look to its maximum.
const SWINGING: &str = r#"
import os, sys
args = sys.argv[1:]
def take(flag):
    i = args.index(flag)
    v = args[i + 1]
    del args[i:i + 2]
    return v
py, delays, counter = take("--pyserver"), take("--delays").split(","), take("--counter")
n = int(open(counter).read()) if os.path.exists(counter) else 0
open(counter, "w").write(str(n + 1))
os.execvp(sys.executable, [sys.executable, py] + args + ["--delay-ms", delays[n % len(delays)]])
"#;

const SUITE: &str = r#"
name = "swing"
reference = "ref"
responses = ["normalized"]
scenarios = ["static"]
cores = [1]
duration = "1s"
repetitions = "until:3%,max:4"
[[load]]
model = "closed"
connections = 4
threads = 1
"#;

/// A pseudo-terminal 200 columns wide: (its master side, its slave side).
fn pty() -> (std::fs::File, OwnedFd) {
    let (mut master, mut slave) = (-1, -1);
    let size = libc::winsize {
        ws_row: 40,
        ws_col: 200,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: openpty writes two descriptors it opened, which are then
    // owned here and nowhere else.
    let rc = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            &size,
        )
    };
    assert_eq!(rc, 0, "openpty: {}", std::io::Error::last_os_error());
    unsafe {
        (
            std::fs::File::from_raw_fd(master),
            OwnedFd::from_raw_fd(slave),
        )
    }
}

/// `s` without its terminal escape sequences (CSI … final byte).
fn plain(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            if chars.peek() == Some(&'[') {
                chars.next();
                for d in chars.by_ref() {
                    if ('@'..='~').contains(&d) {
                        break;
                    }
                }
            }
            continue;
        }
        out.push(c);
    }
    out
}

#[test]
fn the_progress_bar_stands_across_the_looks_of_an_adaptive_run() {
    let _serial = serial();
    let tmp = tempfile::tempdir().unwrap();
    let script = tmp.path().join("swinging.py");
    std::fs::write(&script, SWINGING).unwrap();
    let py = repo().join("tests/fixtures/pyserver.py");
    let py = py.to_str().unwrap();
    let counter = |n: &str| tmp.path().join(n).to_str().unwrap().to_string();
    let (ca, cb) = (counter("ref.count"), counter("twin.count"));
    let root = Root::with_script(
        &script,
        &[
            (
                "ref",
                &["--pyserver", py, "--delays", "10", "--counter", &ca],
            ),
            (
                "twin",
                &["--pyserver", py, "--delays", "10,5,20", "--counter", &cb],
            ),
        ],
    );
    root.suite("swing", SUITE);

    let (mut master, slave) = pty();
    let child = root
        .fairbench()
        .args(["run", "--suite", "swing", "--report", "r.html"])
        .env("TERM", "xterm")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(slave))
        .spawn()
        .unwrap();
    // Read as it comes: a terminal's buffer is small, and a full one
    // would stop the run.
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&seen);
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        // Ends at EIO, once no process holds the terminal any more.
        while let Ok(n) = master.read(&mut buf) {
            if n == 0 {
                break;
            }
            sink.lock().unwrap().extend_from_slice(&buf[..n]);
        }
    });
    let out = child.wait_with_output().unwrap();
    // What the run wrote is in the terminal by now; give the reader a
    // moment to take it.
    let t = Instant::now();
    let mut last = 0;
    while t.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(200));
        let now = seen.lock().unwrap().len();
        if now == last {
            break;
        }
        last = now;
    }
    let drawn = plain(&String::from_utf8_lossy(&seen.lock().unwrap()));
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{}\n{drawn}",
        text(&out)
    );
    root.assert_no_servers_left();
    let printed = String::from_utf8_lossy(&out.stdout);
    assert!(
        printed.contains("adaptive: stopped at repetition 4 of max 4"),
        "the run must go past its first look for this test to mean anything: {printed}"
    );
    // The bar drew during the first part, and still after the look.
    assert!(drawn.contains("case 6/8"), "{drawn}");
    assert!(
        drawn.contains("case 7/8"),
        "no bar after the first look:\n{drawn}"
    );
    // The report `run --report` wrote says how the repetitions stopped.
    let html = std::fs::read_to_string(root.path().join("r.html")).unwrap();
    assert!(
        html.contains(
            "<p id=\"adaptive-stop\" class=\"warn\">Repetitions ran to their maximum of 4: "
        ),
        "{}",
        &html[..html.find("</header>").unwrap_or(0)]
    );
    // Each case's line, above the bar, once.
    for n in 1..=8 {
        assert_eq!(
            drawn.matches(&format!("[{n}/8] ")).count(),
            1,
            "case {n}:\n{drawn}"
        );
    }
}
