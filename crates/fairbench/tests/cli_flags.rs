//! Every flag `--help` shows is exercised: walking fairbench's own command
//! tree, each long flag of each visible subcommand must parse with a valid
//! value (a flag whose type and parser disagree panics here, as `load
//! --cpus` once did), and must appear in some other test of this crate.
//! A new flag fails both until it has a sample value and a test.

mod support;

use std::collections::BTreeSet;

use clap::CommandFactory;
use fairbench::cli::Cli;

/// A valid value for each flag that takes one, by long name.
fn sample(flag: &str) -> Option<&'static str> {
    Some(match flag {
        "connections" | "clients" | "cores" | "repetitions" | "pipeline" | "threads"
        | "streams" => "2",
        "duration" | "warmup" | "timeout" | "ready-timeout" | "fetch-timeout" | "stop-grace"
        | "build-timeout" => "1.5s",
        "rate" => "100",
        "send-ahead" => "50us",
        "metrics-listen" => "127.0.0.1:0",
        "metrics-linger" => "2s",
        "requests" => "1000",
        "cacert" => "/tmp/ca.pem",
        "cert" => "/tmp/client.pem",
        "key" => "/tmp/client.key",
        "expect-status" => "200,204,3xx",
        "percentiles" => "50,99.9",
        "method" => "GET",
        "header" => "X-A: 1",
        "body" => "x",
        "body-file" | "hdr-log" | "export-json" | "export-csv" | "export-markdown"
        | "ssh-config" | "report" | "output" => "/tmp/x",
        "cpus" => "0,2-3",
        "topology" => "local",
        "calibrate" => "wrk",
        "link-rate" => "1gbit",
        "link-delay" => "2ms",
        "client-host" | "server-host" => "me@there",
        "server-address" => "10.0.0.2",
        "root" | "work-dir" | "hdr" => ".",
        "db" | "db-b" => "results.db",
        "servers" => "go-*",
        "scenarios" => "static",
        "protocols" => "http/1.1,h2c",
        "address-family" => "unix",
        "variant" => "normalized",
        "mode" => "native",
        "reference" => "go-nethttp",
        "interleave" => "case",
        "interleave-seed" => "7",
        "suite" => "quick",
        "resume" => "1",
        "format" => "json",
        "fail-on-regression" => "5",
        "server" => "go-nethttp",
        "scenario" => "static",
        "load" => "closed c=50 t=1",
        "metric" => "p99",
        "min-change" => "5",
        "order" => "revision",
        "repo" => ".",
        "within" => "latest",
        "window" => "30s",
        "repetition" => "1",
        "svg" => "/tmp/x.svg",
        "targets" => "/tmp/targets.toml",
        "pool" => "100",
        "seed" => "3",
        "threshold" => "p99<20ms",
        "stages" => "1s:10,2s:10-50",
        "vs" => "http://127.0.0.1:8081/",
        "vs-protocol" => "h3",
        "knee" => "p99<=20ms",
        "start-rate" | "max-rate" => "100",
        "timeout-mode" => "wrk",
        "io" => "epoll",
        "with" => "results.db:1",
        "connect-to" => "example.test:443:127.0.0.1:8443",
        "resolve" => "example.test:443:127.0.0.1",
        "unix-socket" => "/run/app.sock",
        "proxy" => "http://127.0.0.1:3128",
        _ => return None,
    })
}

/// The positionals a subcommand needs before its flags.
fn positionals(sub: &str) -> &'static [&'static str] {
    match sub {
        "load" => &["http://127.0.0.1:8080/"],
        "compare" => &["1", "latest"],
        _ => &[],
    }
}

/// (subcommand, long flag, takes a value, short flag) for every visible flag.
fn flags() -> Vec<(String, String, bool, Option<char>)> {
    let cmd = Cli::command();
    let mut out = Vec::new();
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        for a in sub.get_arguments().filter(|a| !a.is_hide_set()) {
            if let Some(long) = a.get_long() {
                if long == "help" || long == "version" {
                    continue;
                }
                out.push((
                    sub.get_name().to_string(),
                    long.to_string(),
                    a.get_action().takes_values(),
                    a.get_short(),
                ));
            }
        }
    }
    out
}

#[test]
fn the_tree_is_walked() {
    let f = flags();
    assert!(f.len() > 50, "{} flags", f.len());
    assert!(f.iter().any(|(s, l, ..)| s == "load" && l == "cpus"));
    // The agent is fairbench's own helper, not in --help.
    assert!(!f.iter().any(|(s, ..)| s == "agent"));
}

#[test]
fn every_flag_parses_with_a_valid_value() {
    let mut missing = Vec::new();
    for (sub, long, takes, _) in flags() {
        let mut argv = vec!["fairbench".to_string(), sub.clone()];
        argv.extend(positionals(&sub).iter().map(|s| s.to_string()));
        argv.push(format!("--{long}"));
        if takes {
            match sample(&long) {
                Some(v) => argv.push(v.to_string()),
                None => {
                    missing.push(format!("{sub} --{long}"));
                    continue;
                }
            }
        }
        // A parser whose output type disagrees with the field panics in
        // here rather than returning an error.
        let parsed = std::panic::catch_unwind(|| Cli::try_parse_from_args(&argv));
        match parsed {
            Ok(Ok(())) => {}
            Ok(Err(e)) => panic!("{argv:?} does not parse: {e}"),
            Err(_) => panic!("{argv:?} panicked while parsing"),
        }
    }
    assert!(
        missing.is_empty(),
        "flags without a sample value in this test: {missing:?}"
    );
}

/// How far from a flag its subcommand may be named (a multi-line argv, or
/// a table of arguments added to one).
const WINDOW: usize = 600;

#[test]
fn every_flag_appears_in_some_test() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let mut text = String::new();
    for e in walk(&dir) {
        if e.file_name().is_some_and(|n| n == "cli_flags.rs") {
            continue;
        }
        text.push_str(&std::fs::read_to_string(&e).unwrap_or_default());
    }
    // An invocation names its subcommand near its flags.
    let mut untested = BTreeSet::new();
    for (sub, long, _, short) in flags() {
        let sub_q = format!("\"{sub}\"");
        let mut needles = vec![
            format!("\"--{long}\""),
            format!("--{long} "),
            format!("--{long}="),
        ];
        if let Some(c) = short {
            needles.push(format!("\"-{c}\""));
        }
        let used = needles.iter().any(|needle| {
            text.match_indices(needle.as_str()).any(|(i, _)| {
                let near = around(&text, i, WINDOW);
                // Also through a helper named for the subcommand.
                near.contains(&sub_q)
                    || near.contains(&format!("{sub} "))
                    || near.contains(&format!("{sub}_args("))
            })
        });
        if !used {
            untested.insert(format!("{sub} --{long}"));
        }
    }
    assert!(
        untested.is_empty(),
        "flags --help shows that no test uses: {untested:?}"
    );
}

/// Up to `w` characters either side of byte `i` of `s`.
fn around(s: &str, i: usize, w: usize) -> &str {
    let from = s[..i].char_indices().rev().nth(w).map_or(0, |(j, _)| j);
    let to = s[i..].char_indices().nth(w).map_or(s.len(), |(j, _)| i + j);
    &s[from..to]
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
    out
}

/// Parsing only: what clap hands to the commands.
trait ParseOnly {
    fn try_parse_from_args(argv: &[String]) -> Result<(), clap::Error>;
}

impl ParseOnly for Cli {
    fn try_parse_from_args(argv: &[String]) -> Result<(), clap::Error> {
        use clap::Parser;
        Cli::try_parse_from(argv).map(drop)
    }
}

/// The words of a shell line: blanks split, single quotes group.
fn words(line: &str) -> Vec<String> {
    let (mut out, mut cur, mut quoted, mut any) = (Vec::new(), String::new(), false, false);
    for c in line.chars() {
        match c {
            '\'' => (quoted, any) = (!quoted, true),
            c if c.is_whitespace() && !quoted => {
                if any {
                    out.push(std::mem::take(&mut cur));
                }
                any = false;
            }
            c => (cur, any) = (cur + &c.to_string(), true),
        }
    }
    if any {
        out.push(cur);
    }
    out
}

#[test]
fn every_example_of_load_help_parses() {
    let mut cmd = Cli::command();
    let help = cmd
        .find_subcommand_mut("load")
        .unwrap()
        .render_long_help()
        .to_string();
    let examples: Vec<&str> = help
        .split("Examples:")
        .nth(1)
        .expect("load --help has examples")
        .lines()
        .filter(|l| l.trim_start().starts_with("fairbench load"))
        .collect();
    assert!(examples.len() >= 8, "{examples:?}");
    for line in examples {
        // The command, without the comment after two spaces or more.
        let command = line.trim().split("  ").next().unwrap();
        let argv: Vec<String> = words(command)
            .into_iter()
            .map(|w| match w.as_str() {
                "URL" | "URL_B" => "http://127.0.0.1:8080/".to_string(),
                _ => w,
            })
            .collect();
        if let Err(e) = <Cli as clap::Parser>::try_parse_from(&argv) {
            panic!("{command}: {e}");
        }
    }
}
