//! The README's "Coming from wrk, wrk2, ab, hey or oha" table: every fairbench
//! command in it is run as written, against local test servers put in place
//! of its URLs, and what its row promises is checked in the output.

mod support;

use std::path::Path;

use support::command as fairbench;
use support::load::{pki, Server, HELLO};

const PLAIN: &str = "http://127.0.0.1:8080/";
const TLS: &str = "https://127.0.0.1:8443/";

/// (the tool's command, fairbench's command) of every row of the table.
fn rows() -> Vec<(String, String)> {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md"))
            .expect("README.md");
    let section = readme
        .split("### Coming from wrk, wrk2, ab, hey or oha")
        .nth(1)
        .expect("the README has the section");
    section
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .filter_map(|l| {
            let cells: Vec<&str> = l.split(" | ").collect();
            let code = |c: &str| {
                let c = c.trim().trim_start_matches('|').trim();
                c.strip_prefix('`')?.strip_suffix('`').map(str::to_string)
            };
            Some((code(cells.first()?)?, code(cells.get(1)?)?))
        })
        .collect()
}

/// Splits a command line as a shell would for these commands: spaces, and
/// double quotes around an argument.
fn split(cmd: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut any = false;
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

fn flag_value<'a>(args: &'a [String], flag: &str) -> Option<&'a str> {
    let i = args.iter().position(|a| a == flag)?;
    args.get(i + 1).map(String::as_str)
}

/// 10000 → "10,000", as the summary writes counts.
fn grouped(n: &str) -> String {
    let mut out = String::new();
    for (i, ch) in n.chars().enumerate() {
        if i > 0 && (n.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

#[test]
fn every_row_of_the_readme_table_runs() {
    let rows = rows();
    assert!(rows.len() >= 10, "table rows found: {rows:?}");
    let tools: Vec<&str> = rows
        .iter()
        .map(|(t, _)| t.split(' ').next().unwrap())
        .collect();
    for tool in ["wrk", "wrk2", "ab", "hey", "oha", "curl"] {
        assert!(tools.contains(&tool), "no {tool} row: {tools:?}");
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("body.json"), br#"{"hello":"world"}"#).unwrap();
    let tls_pki = pki(&["127.0.0.1"], false);

    for (theirs, ours) in &rows {
        // Servers of its own: what they received is this row's, and a canned
        // server stops accepting after 60 s, less than the whole table takes.
        let plain = Server::plain(HELLO);
        let tls = Server::tls(HELLO, &tls_pki);
        let what = format!("{theirs}  →  {ours}");
        let args = split(ours);
        assert_eq!(&args[..2], ["fairbench", "load"], "{what}");
        let args: Vec<String> = args[1..]
            .iter()
            .map(|a| a.replace(PLAIN, &plain.url()).replace(TLS, &tls.url()))
            .collect();
        assert!(
            args.iter().any(|a| a == &plain.url() || a == &tls.url()),
            "{what}: no URL to swap"
        );
        let out = fairbench()
            .args(&args)
            .current_dir(dir.path())
            .output()
            .expect("run fairbench");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{what}\n{stdout}{stderr}");
        let has = |f: &str| args.iter().any(|a| a == f);

        if has("--dump") {
            assert!(stdout.contains("> GET / HTTP/1.1"), "{what}\n{stdout}");
            assert!(stdout.contains("< HTTP/1.1 200 OK"), "{what}\n{stdout}");
            continue;
        }
        if has("--json") {
            let j: serde_json::Value = serde_json::from_str(&stdout).expect("JSON");
            let l = &j["ledger"];
            assert_eq!(l["planned"], l["answered"], "{what}: {l}");
            if let Some(n) = flag_value(&args, "-n") {
                assert_eq!(l["planned"].to_string(), n, "{what}");
            }
            assert_eq!(j["keepalive"], !has("--no-keepalive"), "{what}");
            continue;
        }
        assert!(stdout.contains("none unanswered"), "{what}\n{stdout}");
        assert!(stdout.contains("Status        200 ×"), "{what}\n{stdout}");
        if let Some(n) = flag_value(&args, "-n") {
            let line = format!("{} planned = {} answered", grouped(n), grouped(n));
            assert!(stdout.contains(&line), "{what}: no {line:?}\n{stdout}");
        }
        if has("--no-keepalive") {
            assert!(
                stdout.contains("a new connection per request"),
                "{what}\n{stdout}"
            );
        }
        if has("--latency") {
            for row in ["  90% ", "  99% ", "  max "] {
                assert!(stdout.contains(row), "{what}: no {row:?} row\n{stdout}");
            }
        }
        if has("-R") {
            assert!(
                stdout.contains("constant rate 2,000 req/s"),
                "{what}\n{stdout}"
            );
            assert!(stdout.contains("Service time") && stdout.contains("Send lateness"));
        }
        if has("--insecure") {
            assert!(stdout.contains("TLS handshake"), "{what}\n{stdout}");
        }
        if has("--expect-status") {
            assert!(stdout.contains("Errors        none"), "{what}\n{stdout}");
        }
        if has("--body-file") {
            let seen = plain.requests.lock().unwrap();
            let sent = String::from_utf8_lossy(seen.first().expect("a request arrived"));
            assert!(sent.starts_with("POST / HTTP/1.1\r\n"), "{what}: {sent}");
            assert!(
                sent.contains("Content-Type: application/json\r\n"),
                "{sent}"
            );
            assert!(sent.ends_with("\r\n\r\n{\"hello\":\"world\"}"), "{sent}");
        }
    }
}
