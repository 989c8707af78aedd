//! How `fairbench check` shows its results: a block per case as it is
//! checked, the raw exchanges on request, and the comparison table.

use fairbench_sys::text::escape_bytes;
use fairbench_zoo::parity::{CaseReport, RawExchange};
use fairbench_zoo::rule::{Grade, Rule};

use crate::output::check_table::Table;

/// Bodies longer than this are cut in `--raw` output (the check still
/// compares all of it).
const RAW_BODY_SHOWN: usize = 2048;

fn upper(g: Grade) -> &'static str {
    match g {
        Grade::Pass => "PASS",
        Grade::Warn => "WARN",
        Grade::Fail => "FAIL",
    }
}

/// `PASS  server mode/response scenario`, then one line per warn/fail rule
/// (every rule with `all_rules`).
pub fn case_block(c: &CaseReport, all_rules: bool) -> String {
    let mut out = format!(
        "{}  {} {} {}{}",
        upper(c.grade),
        c.server,
        c.variant,
        c.scenario,
        over(c)
    );
    let passed = c.rules.iter().filter(|r| r.grade == Grade::Pass).count();
    if c.grade == Grade::Pass {
        out.push_str(&format!("  ({passed} rules pass)"));
    } else if passed > 0 && !all_rules {
        out.push_str(&format!("  ({passed} of {} rules pass)", c.rules.len()));
    }
    out.push('\n');
    let width = c
        .rules
        .iter()
        .map(|r| r.rule.name().len())
        .max()
        .unwrap_or(0);
    for r in &c.rules {
        if all_rules || r.grade != Grade::Pass {
            out.push_str(&format!(
                "      {}  {:width$}  {}\n",
                r.grade,
                r.rule.name(),
                r.detail
            ));
        }
    }
    if c.grade == Grade::Fail && c.row.is_none() {
        if let Some(p) = &c.log_path {
            out.push_str(&format!("      log: {}\n", p.display()));
        }
    }
    out
}

/// The request and response as exchanged, escaped, curl -v style.
pub fn raw_exchange(c: &CaseReport) -> String {
    match &c.raw {
        Some(x) => exchange_text(
            &format!(
                "{} {} {}{} ({})",
                c.server,
                c.variant,
                c.scenario,
                over(c),
                x.addr
            ),
            x,
        ),
        None => String::new(),
    }
}

/// One exchange under a `=== title` line: request lines prefixed `> `,
/// response lines `< ` (bodies cut after a while), control bytes escaped.
pub fn exchange_text(title: &str, x: &RawExchange) -> String {
    let mut out = format!("=== {title}\n");
    push_prefixed(&mut out, "> ", &x.request);
    push_prefixed(&mut out, "< ", &x.interim);
    let head_end = x
        .response
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|i| i + 4)
        .unwrap_or(x.response.len());
    let (head, body) = x.response.split_at(head_end);
    push_prefixed(&mut out, "< ", head);
    let shown = &body[..body.len().min(RAW_BODY_SHOWN)];
    push_prefixed(&mut out, "< ", shown);
    if body.len() > shown.len() {
        out.push_str(&format!(
            "< … {} more body bytes not shown\n",
            body.len() - shown.len()
        ));
    }
    if let Some(e) = &x.error {
        out.push_str(&format!("!! {e}\n"));
    }
    out.push_str(&format!(
        "({} bytes received)\n\n",
        x.interim.len() + x.response.len()
    ));
    out
}

fn push_prefixed(out: &mut String, prefix: &str, bytes: &[u8]) {
    if bytes.is_empty() {
        return;
    }
    let text = escape_bytes(bytes);
    for line in text.split_terminator('\n') {
        out.push_str(prefix);
        out.push_str(line);
        out.push('\n');
    }
}

/// " over h2c" for an HTTP/2 or HTTP/3 case; nothing for HTTP/1.1.
fn over(c: &CaseReport) -> String {
    if c.protocol.is_framed() {
        format!(" over {}", c.protocol)
    } else {
        String::new()
    }
}

fn yes_no(b: bool) -> String {
    if b { "yes" } else { "NO" }.to_string()
}

/// The comparison table and a one-line tally. Skipped servers were already
/// named, one line each, when they were skipped.
///
/// With HTTP/2 or HTTP/3 cases, a PROTOCOL column, and beside the header
/// bytes (their HEADERS frames) the HPACK header block (QPACK field
/// section), first and repeated on the connection, and the same server's
/// HTTP/1.1 header bytes.
pub fn summary(cases: &[CaseReport], reference: &str, skipped: usize) -> String {
    let h2 = cases.iter().any(|c| c.protocol.is_framed());
    let vs = format!("VS {reference}");
    let block = match (
        cases.iter().any(|c| c.protocol.is_h2()),
        cases
            .iter()
            .any(|c| c.protocol == fairbench_zoo::Protocol::H3),
    ) {
        (true, true) => "HPACK/QPACK B",
        (false, true) => "QPACK B",
        _ => "HPACK B",
    };
    let numeric: Vec<usize> = if h2 {
        vec![4, 5, 6, 7, 8, 9, 10]
    } else {
        vec![3, 4, 5, 6, 7]
    };
    let mut t = Table::new(&columns(h2, block, &vs)).right_align(&numeric);
    for c in in_table_order(cases) {
        t.row(case_cells(c, h2));
    }
    let mut out = String::new();
    if !t.is_empty() {
        out.push('\n');
        out.push_str(&t.render());
    }
    let count = |g| cases.iter().filter(|c| c.grade == g).count();
    out.push_str(&format!(
        "\n{} cases: {} pass, {} warn, {} fail; {} skipped\n",
        cases.len(),
        count(Grade::Pass),
        count(Grade::Warn),
        count(Grade::Fail),
        skipped
    ));
    out
}

/// The table's header: the HTTP/2 (and HTTP/3) columns only where a case
/// is one; `block` names the header block's column.
fn columns<'a>(h2: bool, block: &'a str, vs: &'a str) -> Vec<&'a str> {
    let mut columns = vec!["SERVER", "VARIANT", "SCENARIO"];
    if h2 {
        columns.push("PROTOCOL");
    }
    columns.extend(["STATUS", "HEADER B"]);
    if h2 {
        columns.extend([block, "H1 HEADER B"]);
    }
    columns.extend([
        "BODY B", "TOTAL B", vs, "FRAMING", "DATE", "IPV4", "IPV6", "GRADE", "HEADERS",
    ]);
    columns
}

/// The cases by scenario, response kind, server, mode and protocol.
fn in_table_order(cases: &[CaseReport]) -> Vec<&CaseReport> {
    let mut sorted: Vec<&CaseReport> = cases.iter().collect();
    sorted.sort_by(|a, b| {
        (&a.scenario, a.response_kind, &a.server, &a.mode, a.protocol).cmp(&(
            &b.scenario,
            b.response_kind,
            &b.server,
            &b.mode,
            b.protocol,
        ))
    });
    sorted
}

/// Whether the server answered on that loopback family; a dash where the
/// rule was not graded (a check over a unix socket reaches neither).
fn family(c: &CaseReport, rule: Rule, answered: bool) -> String {
    if c.rules.iter().any(|r| r.rule == rule) {
        yes_no(answered)
    } else {
        "-".into()
    }
}

/// One case's row; a case without a response row shows dashes and the
/// rule it failed.
fn case_cells(c: &CaseReport, h2: bool) -> Vec<String> {
    let opt = |v: Option<usize>| v.map(|v| v.to_string()).unwrap_or_else(|| "-".into());
    let mut cells = vec![c.server.clone(), c.variant.clone(), c.scenario.clone()];
    if h2 {
        cells.push(c.protocol.to_string());
    }
    if let Some(r) = &c.row {
        cells.extend([r.status.to_string(), r.header_bytes.to_string()]);
    }
    if let (true, Some(r)) = (h2, &c.row) {
        cells.push(match (r.header_block, r.header_block_repeat) {
            (Some(a), Some(b)) => format!("{a}/{b}"),
            (a, _) => opt(a),
        });
        cells.push(opt(r.http1_header_bytes));
    }
    match &c.row {
        Some(r) => cells.extend([
            r.body_bytes.to_string(),
            r.total_bytes.to_string(),
            match r.vs_reference {
                None => "-".to_string(),
                Some(0) => "=".to_string(),
                Some(d) => format!("{d:+}"),
            },
            r.framing.as_str().to_string(),
            format!("{:?}", r.date).to_lowercase(),
            family(c, Rule::Ipv4, r.ipv4),
            family(c, Rule::Ipv6, r.ipv6),
            c.grade.to_string(),
            r.header_names.join(", "),
        ]),
        None => {
            let why = c
                .rules
                .iter()
                .find(|r| r.grade == Grade::Fail)
                .map(|r| r.rule.name())
                .unwrap_or("?");
            let dashes = if h2 { 11 } else { 9 };
            cells.extend(std::iter::repeat_n("-".to_string(), dashes));
            cells.push(format!("fail ({why})"));
            cells.push(String::new());
        }
    }
    cells
}
