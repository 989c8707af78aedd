//! The terminal summary of `fairbench load`.

use std::fmt::Write;

use fairbench_engine::{LatencySummary, LoadModel, Outcome};

use crate::units::{bytes, count, micros, rate, seconds};

pub fn render(url: &str, o: &Outcome, full_latency: bool) -> String {
    let mut s = String::new();
    let model = match o.model {
        LoadModel::ClosedLoop => "closed loop".to_string(),
        LoadModel::ConstantRate { rps } => format!("constant rate {} req/s", rate(rps)),
    };
    let warm = if o.warmup_s > 0.0 {
        format!(" after {} warm-up", seconds(o.warmup_s))
    } else {
        String::new()
    };
    let _ = writeln!(
        s,
        "{url}: {model}, {} connections on {} threads{}{warm}",
        o.connections,
        o.threads,
        if o.pipeline > 1 {
            format!(", pipeline {}", o.pipeline)
        } else {
            String::new()
        }
    );
    let _ = writeln!(s);
    let l = o.ledger();
    let _ = writeln!(
        s,
        "  {:<14}{} answered in {}  =  {} req/s",
        "Requests",
        count(o.requests),
        seconds(o.measured_s),
        rate(o.rps())
    );
    let unanswered = if l.not_answered() == 0 {
        "none unanswered".to_string()
    } else {
        format!(
            "{} unanswered: {}",
            count(l.not_answered()),
            o.not_answered_breakdown()
        )
    };
    let _ = writeln!(
        s,
        "  {:<14}{} planned = {} answered + {unanswered}",
        "Ledger",
        count(l.planned),
        count(l.answered),
    );
    let t = o.throughput();
    let _ = writeln!(
        s,
        "  {:<14}mean {}  stdev {}  max {}  (req/s over 1 s intervals)",
        "Throughput",
        rate(t.mean),
        rate(t.stdev),
        rate(t.max)
    );
    let _ = writeln!(
        s,
        "  {:<14}{} read ({}/s)",
        "Transfer",
        bytes(o.bytes_read),
        bytes((o.bytes_read as f64 / o.measured_s.max(1e-9)) as u64)
    );
    let corrected = o.schedule.is_some();
    let label = if corrected { "Latency*" } else { "Latency" };
    latency_lines(&mut s, label, &o.latency_summary());
    if l.not_answered() > 0 {
        latency_lines(&mut s, "Answered only", &o.answered_summary());
        let _ = writeln!(
            s,
            "  {:<14}latency counts every request; an unanswered one as at least the timeout",
            ""
        );
    }
    if corrected {
        latency_lines(&mut s, "Service time", &o.uncorrected_summary());
        if let Some(l) = o.lateness_summary() {
            latency_lines(&mut s, "Send lateness", &l);
        }
        let _ = writeln!(
            s,
            "  {:<14}* from the planned send time (coordinated-omission corrected); service time is from the actual send",
            ""
        );
    }
    let e = &o.errors;
    if e.total() == 0 {
        let _ = writeln!(s, "  {:<14}none", "Errors");
    } else {
        let _ = writeln!(
            s,
            "  {:<14}connect {}  read {}  write {}  timeout {}  status {}  parse {}  unanswered {}",
            "Errors",
            count(e.connect),
            count(e.read),
            count(e.write),
            count(e.timeout),
            count(e.status),
            count(e.parse),
            count(e.unanswered)
        );
    }
    let k = &o.sockets;
    let _ = writeln!(
        s,
        "  {:<14}{} opened, {} failed to open, {} closed by the server{}",
        "Connections",
        count(k.opened),
        count(k.connect_failed),
        count(k.closed_by_server),
        if k.unsolicited_responses > 0 {
            format!(", {} unsolicited responses", count(k.unsolicited_responses))
        } else {
            String::new()
        }
    );
    let _ = writeln!(
        s,
        "  {:<14}{:.0} per million requests",
        "Timeouts",
        o.timeouts_per_million()
    );
    if let Some(sch) = &o.schedule {
        let _ = writeln!(
            s,
            "  {:<14}{} sent, {} never sent, {} found no free connection when due",
            "Schedule",
            count(sch.sent),
            count(sch.never_sent),
            count(sch.waited_for_connection)
        );
    }
    let per_req = o
        .cpu_us_per_request()
        .map(|us| format!(", {us:.2} µs CPU per request"))
        .unwrap_or_default();
    let _ = writeln!(
        s,
        "  {:<14}{:.2} s CPU in the window, busiest thread {:.0}% busy{per_req}",
        "Generator",
        o.generator.cpu_s,
        o.generator.busy_fraction * 100.0
    );
    if full_latency {
        let _ = writeln!(s);
        percentile_table(&mut s, o);
    }
    let warnings = o.warnings();
    if !warnings.is_empty() {
        let _ = writeln!(s);
        for w in warnings {
            let _ = writeln!(s, "WARNING: {w}");
        }
    }
    s
}

fn latency_lines(s: &mut String, label: &str, l: &LatencySummary) {
    let _ = writeln!(
        s,
        "  {label:<14}mean {}  stdev {}  min {}  max {}",
        micros(l.mean),
        micros(l.stdev),
        micros(l.min as f64),
        micros(l.max as f64)
    );
    let _ = writeln!(
        s,
        "  {:<14}p50 {}  p90 {}  p99 {}  p99.9 {}",
        "",
        micros(l.p50 as f64),
        micros(l.p90 as f64),
        micros(l.p99 as f64),
        micros(l.p999 as f64)
    );
}

fn percentile_table(s: &mut String, o: &Outcome) {
    let cols: Vec<(&str, LatencySummary)> = match (&o.schedule, o.lateness_summary()) {
        (Some(_), Some(l)) => vec![
            ("latency*", o.latency_summary()),
            ("service", o.uncorrected_summary()),
            ("lateness", l),
        ],
        _ => vec![("latency", o.latency_summary())],
    };
    let _ = write!(s, "  {:<12}", "percentile");
    for (name, _) in &cols {
        let _ = write!(s, "{name:>12}");
    }
    let _ = writeln!(s);
    type Pick = fn(&LatencySummary) -> u64;
    let rows: [(&str, Pick); 8] = [
        ("min", |l| l.min),
        ("50%", |l| l.p50),
        ("75%", |l| l.p75),
        ("90%", |l| l.p90),
        ("99%", |l| l.p99),
        ("99.9%", |l| l.p999),
        ("99.99%", |l| l.p9999),
        ("max", |l| l.max),
    ];
    for (name, pick) in rows {
        let _ = write!(s, "  {name:<12}");
        for (_, l) in &cols {
            let _ = write!(s, "{:>12}", micros(pick(l) as f64));
        }
        let _ = writeln!(s);
    }
}
