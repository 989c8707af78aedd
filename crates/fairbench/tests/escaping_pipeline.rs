//! Strings from servers are data, end to end: a server whose header and body
//! carry markup, quotes and control characters goes through `check`, `run`
//! and `report`; every output shows them as text and nothing can execute.

mod support;

use support::root::Root;
use support::text;

const EVIL_SUITE: &str = r#"
name = "evil"
responses = ["default", "normalized"]
scenarios = ["static"]
duration = "1s"
repetitions = 1
[[load]]
model = "closed"
connections = 2
threads = 1
"#;

fn assert_inert(what: &str, s: &str) {
    let lower = s.to_ascii_lowercase();
    assert!(!lower.contains("<script"), "{what}: a raw <script> tag");
    assert!(
        !s.contains('\x1b') && !s.contains('\x07'),
        "{what}: raw control characters"
    );
}

/// In CommonMark, `\\<` is a literal `<` and anything inside a fenced code
/// block is text: outside fences every `<` must be escaped.
fn assert_markdown_inert(md: &str) {
    assert!(
        !md.contains('\x1b') && !md.contains('\x07'),
        "Markdown: raw control characters"
    );
    let mut fence: Option<String> = None;
    let mut saw_escaped = false;
    for line in md.lines() {
        let t = line.trim_start();
        if t.starts_with("```") {
            let ticks: String = t.chars().take_while(|&c| c == '`').collect();
            match &fence {
                None => fence = Some(ticks),
                Some(f) if ticks.len() >= f.len() && t.trim_end() == ticks => fence = None,
                Some(_) => {}
            }
            continue;
        }
        if fence.is_some() {
            continue;
        }
        let b = line.as_bytes();
        for (i, &c) in b.iter().enumerate() {
            if c == b'<' {
                assert!(
                    i > 0 && b[i - 1] == b'\\',
                    "Markdown: unescaped '<' in {line:?}"
                );
                saw_escaped = true;
            }
        }
    }
    assert!(
        saw_escaped,
        "the hostile header shows up escaped in a table"
    );
}

#[test]
fn hostile_server_strings_stay_text_through_check_run_and_report() {
    let root = Root::new(&[("evil", &["--evil"])]);
    root.suite("evil", EVIL_SUITE);

    // check: the normalized variant fails (wrong body, extra header); the
    // terminal table and the JSON carry the strings escaped.
    let out = root.run(&["check", "--scenarios", "static"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(table.contains("X-Evil"), "{table}");
    assert!(
        !table.contains('\x1b') && !table.contains('\x07'),
        "raw control bytes on the terminal"
    );
    let out = root.run(&["check", "--scenarios", "static", "--json", "--raw"]);
    let j: serde_json::Value =
        serde_json::from_slice(&out.stdout).expect("check --json stays valid JSON");
    assert!(
        j.to_string()
            .contains("<script>alert('fairbench')</script>"),
        "the header survives as data"
    );

    // run: measured anyway with --allow-unfair, flagged unfair.
    let out = root.run(&["run", "--suite", "evil", "--allow-unfair", "--quiet"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    root.assert_no_servers_left();
    assert_eq!(
        root.sql::<i64>("SELECT count(*) FROM cases WHERE state = 'done' AND fair = 0"),
        2
    );
    let parity: String = root.sql("SELECT parity_json FROM cases WHERE response = 'normalized'");
    assert!(parity.contains("X-Evil"), "{parity}");

    // report: HTML, Markdown, CSV, JSON.
    let html_path = root.path().join("r.html");
    let out = root.run(&["report", "-o", html_path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let html = std::fs::read_to_string(&html_path).unwrap();
    assert_inert("HTML", &html);
    assert!(
        html.contains("&lt;script&gt;") || html.contains("&lt;script"),
        "the markup is shown as text"
    );
    assert!(html.contains("X-Evil"));

    let out = root.run(&["report", "--format", "md"]);
    let md = String::from_utf8_lossy(&out.stdout);
    assert_markdown_inert(&md);

    let out = root.run(&["report", "--format", "csv"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let mut rdr = csv::Reader::from_reader(&out.stdout[..]);
    let headers = rdr.headers().expect("CSV header").clone();
    let rows: Vec<csv::StringRecord> = rdr
        .records()
        .map(|r| r.expect("every CSV row parses"))
        .collect();
    assert_eq!(rows.len(), 2);
    assert!(rows.iter().all(|r| r.len() == headers.len()));

    let out = root.run(&["report", "--format", "json"]);
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).expect("report JSON parses");
    assert!(j.to_string().contains("X-Evil"));
}
