//! The terminal summary of `fairbench load`.

use std::fmt::Write;

use fairbench_engine::{LatencySummary, LoadModel, Outcome};
use hdrhistogram::Histogram;

use crate::report::model::Spectrum;
use crate::units::{bytes, count, micros, rate, seconds};

/// What the summary shows beyond its fixed lines.
pub struct View<'a> {
    /// The whole percentile spectrum (`--latency`).
    pub spectrum: bool,
    /// The headline percentiles (`--percentiles`), e.g. 50, 90, 99, 99.9.
    pub percentiles: &'a [f64],
}

pub fn render(url: &str, o: &Outcome, view: &View<'_>) -> String {
    let mut s = String::new();
    first_line(&mut s, url, o);
    volume_lines(&mut s, o);
    latency_section(&mut s, o, view.percentiles);
    // QUIC has no TCP connect: its handshake (TLS inside) is the next line.
    if o.h3.is_none() {
        short_lines(&mut s, "Connect", &o.connect_time);
    }
    if let Some(h) = &o.handshake_time {
        // Beside a 0-RTT line, the full handshakes are named by their
        // round trips, so that neither line reads as all of them.
        let label = match &o.h3 {
            Some(h3) if h3.zero_rtt.is_some() => "1-RTT",
            Some(_) => "Handshake",
            None => "TLS handshake",
        };
        short_lines(&mut s, label, h);
    }
    status_line(&mut s, o);
    errors_line(&mut s, o);
    connection_lines(&mut s, o);
    let _ = writeln!(
        s,
        "  {:<14}{:.0} per million requests, counted {}",
        "Timeouts",
        o.timeouts_per_million(),
        timeout_counting(o.timeout_mode)
    );
    wrk_lines(&mut s, o);
    schedule_lines(&mut s, o);
    generator_line(&mut s, o);
    if view.spectrum {
        let _ = writeln!(s);
        spectrum_table(&mut s, o);
    }
    super::targets::render(&mut s, o, view.percentiles);
    let warnings = o.warnings();
    if !warnings.is_empty() {
        let _ = writeln!(s);
        for w in warnings {
            let _ = writeln!(s, "WARNING: {w}");
        }
    }
    s
}

/// What was loaded and how: the URL (and the address it resolved to), the
/// load model, connections, threads and warm-up; then a blank line.
fn first_line(s: &mut String, url: &str, o: &Outcome) {
    let model = match o.model {
        LoadModel::ConstantRate { rps } if !o.stages.is_empty() => {
            let names: Vec<&str> = o.stages.iter().map(|s| s.name.as_str()).collect();
            format!("rate stages {} (mean {} req/s)", names.join(","), rate(rps))
        }
        LoadModel::ClosedLoop => "closed loop".to_string(),
        LoadModel::ConstantRate { rps } => format!("constant rate {} req/s", rate(rps)),
    };
    let warm = if let Some(v) = o.auto_warmup.as_ref().filter(|v| v.steady) {
        format!(
            " after {} warm-up (auto: {} steady)",
            seconds(o.warmup_s),
            v.watched
        )
    } else if o.warmup_s > 0.0 {
        format!(" after {} warm-up", seconds(o.warmup_s))
    } else {
        String::new()
    };
    let at = if o.address.is_empty() {
        String::new()
    } else {
        format!(" ({})", o.address)
    };
    let _ = writeln!(
        s,
        "{url}{at}: {model}, {} on {}{}{}{warm}",
        crate::units::counted(o.connections as u64, "connection"),
        crate::units::counted(o.threads as u64, "thread"),
        match (&o.h2, &o.h3) {
            (Some(h), _) => format!(", {} × {} streams", o.protocol, h.streams),
            (_, Some(h)) => format!(", {} × {} streams", o.protocol, h.streams),
            _ if o.pipeline > 1 => format!(", pipeline {}", o.pipeline),
            _ => String::new(),
        },
        if o.keepalive {
            ""
        } else {
            ", a new connection per request"
        }
    );
    if let Some(proxy) = &o.proxy {
        let _ = writeln!(s, "via proxy {proxy}: its own time is in every latency");
    }
    if o.address.starts_with("unix:") && matches!(o.model, LoadModel::ConstantRate { .. }) {
        // Over TCP the kernel's receive stamps time the answers; here the
        // thread's wake-up is part of every latency.
        let _ = writeln!(
            s,
            "answers timed when read: the kernel does not stamp a unix socket's arrivals"
        );
    }
    let _ = writeln!(s);
}

/// How much: the requests and their ledger, throughput over 1 s
/// intervals (and wrk's per thread) and the bytes read.
fn volume_lines(s: &mut String, o: &Outcome) {
    let l = o.ledger();
    // A server behind a constant rate answers part of the window after it:
    // the rate is of what came within it.
    let within = match o.answered_after_window() {
        Some(_) => format!(
            "; {} came within the {}",
            count(o.arrived),
            seconds(o.measured_s)
        ),
        None => format!(" in {}", seconds(o.measured_s)),
    };
    let _ = writeln!(
        s,
        "  {:<14}{} answered{within}  =  {} req/s",
        "Requests",
        count(o.requests),
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
    if t.intervals > 0 {
        let _ = writeln!(
            s,
            "  {:<14}mean {}  stdev {}  max {}  (req/s over 1 s intervals)",
            "Throughput",
            rate(t.mean),
            rate(t.stdev),
            rate(t.max)
        );
    } else {
        // A run shorter than half a second has no interval to spread over.
        let _ = writeln!(
            s,
            "  {:<14}no 1 s interval to spread over (the run was shorter)",
            "Throughput"
        );
    }
    if let Some(r) = o.thread_req_sec.some() {
        let _ = writeln!(
            s,
            "  {:<14}mean {}  stdev {}  max {}  (wrk's Req/Sec: each of the {} load threads' req/s over 100 ms)",
            "Per thread",
            rate(r.mean),
            rate(r.stdev()),
            rate(r.max),
            o.threads
        );
    }
    let _ = writeln!(
        s,
        "  {:<14}{} read ({}/s)",
        "Transfer",
        bytes(o.bytes_read),
        bytes((o.bytes_read as f64 / o.measured_s.max(1e-9)) as u64)
    );
}

/// The latency of every request, and where they differ, of the answered
/// ones only, the service time and the send lateness.
fn latency_section(s: &mut String, o: &Outcome, pcts: &[f64]) {
    let corrected = o.schedule.is_some();
    let label = if corrected { "Latency*" } else { "Latency" };
    latency_lines(s, label, &o.latency, pcts);
    if !o.keepalive {
        let _ = writeln!(
            s,
            "  {:<14}each request's latency includes opening its connection{}, as ab counts it",
            "",
            if o.handshake_time.is_some() {
                " and its TLS handshake"
            } else {
                ""
            }
        );
    }
    if o.ledger().not_answered() > 0 {
        latency_lines(s, "Answered only", &o.answered_latency, pcts);
        let _ = writeln!(
            s,
            "  {:<14}latency counts every request; an unanswered one as at least the timeout",
            ""
        );
    }
    if let Some(h) = o.expected_latency() {
        latency_lines(s, "Expected only", &h, pcts);
        let _ = writeln!(
            s,
            "  {:<14}answers with an expected status; the lines above count the others too",
            ""
        );
    }
    if corrected {
        latency_lines(s, "Service time", &o.uncorrected, pcts);
        if let Some(l) = &o.lateness {
            latency_lines(s, "Send lateness", l, pcts);
        }
        let _ = writeln!(
            s,
            "  {:<14}* from the planned send time (coordinated-omission corrected); service time is from the actual send",
            ""
        );
    }
}

/// The errors by class, or none.
fn errors_line(s: &mut String, o: &Outcome) {
    let e = &o.errors;
    if e.total() == 0 {
        let _ = writeln!(s, "  {:<14}none", "Errors");
    } else {
        let _ = writeln!(
            s,
            "  {:<14}connect {}{}  tls {}  read {}  write {}  timeout {}  status {}  parse {}  unanswered {}{}",
            "Errors",
            count(e.connect),
            if e.local > 0 {
                format!(" ({} on this machine, not in latency)", count(e.local))
            } else {
                String::new()
            },
            count(e.tls),
            count(e.read),
            count(e.write),
            count(e.timeout),
            count(e.status),
            count(e.parse),
            count(e.unanswered),
            if e.interrupted > 0 {
                format!(" ({} of them interrupted)", count(e.interrupted))
            } else {
                String::new()
            }
        );
    }
}

/// How the connections went: opened, failed and closed, then HTTP/2's
/// and TLS's lines where the load used them.
fn connection_lines(s: &mut String, o: &Outcome) {
    let k = &o.sockets;
    let _ = writeln!(
        s,
        "  {:<14}{} opened, {} failed to open{}, {} closed by the server{}{}{}{}",
        "Connections",
        count(k.opened),
        count(k.connect_failed),
        if k.connect_local > 0 {
            format!(" ({} on this machine: fairbench's)", count(k.connect_local))
        } else {
            String::new()
        },
        count(k.closed_by_server),
        if k.closed_by_client > 0 {
            format!(", {} closed by fairbench", count(k.closed_by_client))
        } else {
            String::new()
        },
        if k.unsolicited_responses > 0 {
            format!(
                ", {} unsolicited responses ({} answers possibly mis-timed, not in latency)",
                count(k.unsolicited_responses),
                count(k.possibly_mistimed)
            )
        } else {
            String::new()
        },
        if k.stray_bytes > 0 {
            format!(", {} closed for stray bytes", count(k.stray_bytes))
        } else {
            String::new()
        },
        if k.retried > 0 {
            format!(", {} requests sent again", count(k.retried))
        } else {
            String::new()
        }
    );
    if let Some(h) = &o.h2 {
        s.push_str(&http2_lines(h));
    }
    if let Some(h) = &o.h3 {
        s.push_str(&super::http3::lines(h, o.requests));
    }
    if o.handshake_time.is_some() {
        let _ = writeln!(
            s,
            "  {:<14}{} handshakes ({} resumed a session), {} failed",
            "TLS",
            count(k.tls_handshakes),
            count(k.tls_resumed),
            count(k.tls_failed)
        );
    }
}

/// How a constant-rate load kept its schedule.
fn schedule_lines(s: &mut String, o: &Outcome) {
    if let Some(sch) = &o.schedule {
        let _ = writeln!(
            s,
            "  {:<14}{} sent ({} up to {:.0} µs early), {} never sent, {} found no free connection when due",
            "Schedule",
            count(sch.sent),
            count(sch.sent_early),
            sch.send_ahead_us,
            count(sch.never_sent),
            count(sch.waited_for_connection)
        );
        if sch.send_ahead_us > 0.0 {
            // The cost of the window is the server's, so it is said where
            // the figures are read (docs/load-json.md, "Sending ahead").
            let _ = writeln!(
                s,
                "  {:<14}requests due within the window go out together; the server's queueing\n  \
                 {:<14}among them is in its latency (--send-ahead 0 sends each at its time)",
                "", ""
            );
        }
    }
}

/// The load generator's own CPU: whether it could keep up.
fn generator_line(s: &mut String, o: &Outcome) {
    let per_req = o
        .cpu_us_per_request()
        .map(|us| format!(", {us:.2} µs CPU per request"))
        .unwrap_or_default();
    let _ = writeln!(
        s,
        "  {:<14}{:.2} s CPU in the window, busiest thread {:.0}% busy{}{per_req}",
        "Generator",
        o.generator.cpu_s,
        o.generator.busy_fraction * 100.0,
        if o.generator.wait_fraction >= 0.005 {
            format!(
                " ({:.0}% waiting for its CPU)",
                o.generator.wait_fraction * 100.0
            )
        } else {
            String::new()
        }
    );
}

fn latency_lines(s: &mut String, label: &str, h: &Histogram<u64>, pcts: &[f64]) {
    let l = LatencySummary::of(h);
    let _ = writeln!(
        s,
        "  {label:<14}mean {}  stdev {}  min {}  max {}",
        micros(l.mean),
        micros(l.stdev),
        micros(l.min as f64),
        micros(l.max as f64)
    );
    let cells: Vec<String> = pcts
        .iter()
        .map(|&p| {
            let v = if h.is_empty() {
                0
            } else {
                h.value_at_quantile(p / 100.0)
            };
            format!("p{} {}", trim_pct(p), micros(v as f64))
        })
        .collect();
    let _ = writeln!(s, "  {:<14}{}", "", cells.join("  "));
}

/// What wrk 4.x would have printed for this run (closed loop, counted
/// wrk's way), labelled as such: its latency after its own correction,
/// and its request count (see `fairbench_engine::wrk_latency`). Never
/// fairbench's figure.
fn wrk_lines(s: &mut String, o: &Outcome) {
    let Some(w) = o.wrk_figures() else {
        return;
    };
    let l = &w.latency;
    let _ = writeln!(
        s,
        "  {:<14}Latency avg {}  stdev {}  max {}  +/- stdev {:.2} %  {} requests",
        "As wrk prints",
        micros(l.mean_us),
        micros(l.stdev_us),
        micros(l.max_us as f64),
        l.within_stdev_pct,
        count(w.requests)
    );
    let _ = writeln!(
        s,
        "  {:<14}p50 {}  p75 {}  p90 {}  p99 {}",
        "",
        micros(l.p50_us as f64),
        micros(l.p75_us as f64),
        micros(l.p90_us as f64),
        micros(l.p99_us as f64)
    );
    let how = match l.interval_us {
        Some(i) => format!(
            "{} of {} samples synthetic (wrk's stats_correct at {})",
            count(l.samples - l.recorded),
            count(l.samples),
            micros(i as f64)
        ),
        None => "uncorrected (fewer answers than connections)".to_string(),
    };
    let _ = writeln!(
        s,
        "  {:<14}wrk 4.x's figures, not fairbench's: answers above the timeout dropped, {how}, late answers counted as requests",
        ""
    );
}

/// Connect and handshake times: one line, their count included.
fn short_lines(s: &mut String, label: &str, h: &Histogram<u64>) {
    if h.is_empty() {
        let _ = writeln!(s, "  {label:<14}none completed");
        return;
    }
    let l = LatencySummary::of(h);
    let _ = writeln!(
        s,
        "  {label:<14}{} times: mean {}  p50 {}  p99 {}  max {}",
        count(h.len()),
        micros(l.mean),
        micros(l.p50 as f64),
        micros(l.p99 as f64),
        micros(l.max as f64)
    );
}

/// `200 ×9,812  503 ×12 (not expected)`, every code the window saw.
fn status_line(s: &mut String, o: &Outcome) {
    if o.status_codes.is_empty() {
        return;
    }
    let cells: Vec<String> = o
        .status_codes
        .iter()
        .map(|(code, n)| {
            let flag = if o.expected_status(*code) {
                ""
            } else {
                " (not expected)"
            };
            format!("{code} ×{}{flag}", count(*n))
        })
        .collect();
    let _ = writeln!(s, "  {:<14}{}", "Status", cells.join("  "));
    bodies_line(s, &o.body_sizes);
}

/// `13 B each`, or the sizes most answers first: what the successes
/// carried (a server that answers some with less looks faster).
fn bodies_line(s: &mut String, b: &fairbench_engine::bodies::BodySizes) {
    if b.total() == 0 {
        return;
    }
    let sizes = if b.uniform() {
        format!("{} B each", count(b.max))
    } else {
        b.describe(count)
    };
    let _ = writeln!(s, "  {:<14}{sizes}", "Bodies");
}

/// 99.9 → "99.9", 50 → "50", 99.99968 → "99.9997".
fn trim_pct(p: f64) -> String {
    let t = format!("{p:.4}");
    t.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// The whole spectrum, HdrHistogram style: the percentiles at every quarter
/// "nine" (0, 43.8, 68.4, 82.2, 90, … 99.9999 %), as deep as the sample
/// count can tell, then the maximum; one column per histogram.
fn spectrum_table(s: &mut String, o: &Outcome) {
    let mut cols: Vec<(&str, &Histogram<u64>)> = vec![(
        if o.schedule.is_some() {
            "latency*"
        } else {
            "latency"
        },
        &o.latency,
    )];
    if o.schedule.is_some() {
        cols.push(("service", &o.uncorrected));
        if let Some(l) = &o.lateness {
            cols.push(("lateness", l));
        }
    }
    let spectra: Vec<Option<Spectrum>> = cols.iter().map(|(_, h)| Spectrum::of(h)).collect();
    let _ = write!(s, "  {:<12}", "percentile");
    for (name, _) in &cols {
        let _ = write!(s, "{name:>12}");
    }
    let _ = writeln!(s, "{:>12}", "1/(1-p)");
    let rows = spectra
        .iter()
        .flatten()
        .map(|sp| sp.points.len())
        .max()
        .unwrap_or(0);
    for i in 0..rows {
        let mut pct = None;
        let mut line = String::new();
        for sp in &spectra {
            match sp.as_ref().and_then(|sp| sp.points.get(i)) {
                Some(p) => {
                    pct = Some(p.percentile);
                    let _ = write!(line, "{:>12}", micros(p.latency_us as f64));
                }
                None => {
                    let _ = write!(line, "{:>12}", "");
                }
            }
        }
        let Some(pct) = pct else { continue };
        let inverse = 1.0 / (1.0 - pct / 100.0);
        let _ = writeln!(
            s,
            "  {:<12}{line}{:>12}",
            format!("{}%", trim_pct(pct)),
            rate(inverse)
        );
    }
    let _ = write!(s, "  {:<12}", "max");
    for (_, h) in &cols {
        let _ = write!(s, "{:>12}", micros(h.max() as f64));
    }
    let _ = writeln!(s);
    let counts: Vec<String> = cols
        .iter()
        .map(|(name, h)| format!("{name} {}", count(h.len())))
        .collect();
    let _ = writeln!(
        s,
        "  {:<12}{} (the spectrum stops where the count can no longer tell)",
        "values",
        counts.join(", ")
    );
}

/// Which counting a timeouts figure is, in words.
pub fn timeout_counting(m: fairbench_engine::TimeoutMode) -> &'static str {
    match m {
        fairbench_engine::TimeoutMode::Fairbench => {
            "fairbench's way (aborted at the timeout, connection reopened)"
        }
        fairbench_engine::TimeoutMode::Wrk => {
            "wrk's way (an answer after the timeout is a timeout, connection kept)"
        }
    }
}

/// The HTTP/2 lines: what the generator announced, what the server
/// allowed, and how streams ended without an answer, by kind.
fn http2_lines(h: &fairbench_engine::H2Report) -> String {
    let mut s = String::new();
    let sent: Vec<String> = h
        .settings_sent
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    let limit = match h.server_max_streams {
        Some(m) if (m as usize) < h.streams => {
            format!("; the server allowed {m} streams per connection (fewer than asked)")
        }
        Some(m) => format!("; the server allowed {m} streams per connection"),
        None => "; the server set no stream limit".to_string(),
    };
    let _ = writeln!(
        s,
        "  {:<14}sent SETTINGS {}, connection window {}{limit}",
        "HTTP/2",
        sent.join(" "),
        h.connection_window
    );
    let mut ends = Vec::new();
    if !h.goaways.is_empty() {
        ends.push(format!(
            "GOAWAY: {} ({} streams not processed)",
            super::ends::by_code(&h.goaways),
            count(h.unprocessed)
        ));
    }
    let errors = (h.protocol_errors > 0).then(|| {
        format!(
            "{} connections ended for a protocol error (first: {})",
            count(h.protocol_errors),
            h.protocol_error.as_deref().unwrap_or("?")
        )
    });
    super::ends::line(&mut s, &h.resets, ends, h.cancelled, errors);
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentile_labels_are_short() {
        assert_eq!(trim_pct(50.0), "50");
        assert_eq!(trim_pct(99.9), "99.9");
        assert_eq!(trim_pct(99.99968377), "99.9997");
    }
}
