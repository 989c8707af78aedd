//! The registry as OpenMetrics 1.0 text, or as Prometheus' older text
//! format 0.0.4 for a scraper that asks only for `text/plain`.
//!
//! The two differ where it matters to a parser: OpenMetrics names a
//! counter's family without its `_total` suffix in `# TYPE` and ends with
//! `# EOF`; 0.0.4 names the sample itself and has no end marker. Every
//! family's samples come together after its metadata, as both require.
//! Durations are in seconds and sizes in bytes (the base units both
//! formats ask for). The histogram's buckets are cumulative: bucket `le=x`
//! counts every answer at most `x` seconds, and `le="+Inf"` equals
//! `_count`.

use std::fmt::Write;

use super::registry::{Labels, Registry, Series, BUCKETS_US, ERROR_CLASSES};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    OpenMetrics,
    Prometheus,
}

impl Format {
    /// OpenMetrics unless the Accept header asks for plain text and not
    /// for OpenMetrics (Prometheus itself asks for both, OpenMetrics first).
    pub fn from_accept(accept: &str) -> Format {
        let a = accept.to_ascii_lowercase();
        if a.contains("text/plain") && !a.contains("application/openmetrics-text") {
            Format::Prometheus
        } else {
            Format::OpenMetrics
        }
    }

    pub fn content_type(self) -> &'static str {
        match self {
            Format::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
            Format::Prometheus => "text/plain; version=0.0.4; charset=utf-8",
        }
    }
}

/// A family: its name (without `_total`), type, help and how each series
/// gives its samples.
struct Family {
    name: &'static str,
    kind: &'static str,
    help: &'static str,
    samples: fn(&Series, &mut Samples),
}

/// A label a sample adds to its series' (`le`, `quantile`, `class`).
type Extra = Option<(&'static str, String)>;

/// The samples of one series of one family, before they are written:
/// suffix of the name, extra label, value.
struct Samples {
    rows: Vec<(&'static str, Extra, f64)>,
}

impl Samples {
    fn push(&mut self, suffix: &'static str, extra: Extra, v: f64) {
        self.rows.push((suffix, extra, v));
    }
}

const FAMILIES: [Family; 11] = [
    Family {
        name: "fairbench_requests",
        kind: "counter",
        help: "Answered requests of the measured window (warm-up excluded).",
        samples: |s, o| o.push("_total", None, s.requests as f64),
    },
    Family {
        name: "fairbench_errors",
        kind: "counter",
        help: "Requests that failed, every class, counted as each interval ends.",
        samples: |s, o| o.push("_total", None, s.errors as f64),
    },
    Family {
        name: "fairbench_errors_by_class",
        kind: "counter",
        help: "Failed requests by class, added when each case ends (the engine classifies them in its final ledger).",
        samples: |s, o| {
            for (c, n) in ERROR_CLASSES.iter().zip(s.errors_by_class) {
                o.push("_total", Some(("class", c.to_string())), n as f64);
            }
        },
    },
    Family {
        name: "fairbench_response_bytes",
        kind: "counter",
        help: "Bytes of the answers read in the measured window.",
        samples: |s, o| o.push("_total", None, s.bytes as f64),
    },
    Family {
        name: "fairbench_latency_seconds",
        kind: "histogram",
        help: "Latency of the answers of the measured window (from each request's planned time at a constant rate).",
        samples: latency,
    },
    Family {
        name: "fairbench_rate_planned_requests_per_second",
        kind: "gauge",
        help: "The constant rate the case plans (absent in a closed loop).",
        samples: |s, o| {
            if let Some(r) = s.rate_planned {
                o.push("", None, r);
            }
        },
    },
    Family {
        name: "fairbench_rate_achieved_requests_per_second",
        kind: "gauge",
        help: "Answers per second in the last measured interval.",
        samples: |s, o| o.push("", None, s.rate_achieved),
    },
    Family {
        name: "fairbench_send_lateness_seconds",
        kind: "summary",
        help: "How late the generator sent requests after their planned time, at a constant rate; set when each case ends.",
        samples: lateness,
    },
    Family {
        name: "fairbench_generator_busy_ratio",
        kind: "gauge",
        help: "The busiest load thread's share of the window not spent waiting for events; set when each case ends.",
        samples: |s, o| {
            if let Some(b) = s.busy_fraction {
                o.push("", None, b);
            }
        },
    },
    Family {
        name: "fairbench_server_cpu_seconds",
        kind: "counter",
        help: "CPU seconds the server used in the measured intervals (its control group, else its process tree); servers fairbench started only.",
        samples: |s, o| {
            if let Some(c) = s.server_cpu_s {
                o.push("_total", None, c);
            }
        },
    },
    Family {
        name: "fairbench_server_memory_bytes",
        kind: "gauge",
        help: "Resident memory of the server's process tree at the last interval; servers fairbench started only.",
        samples: |s, o| {
            if let Some(m) = s.server_memory_bytes {
                o.push("", None, m as f64);
            }
        },
    },
];

fn latency(s: &Series, o: &mut Samples) {
    let mut cumulative = 0;
    for (i, n) in s.buckets.iter().enumerate() {
        cumulative += n;
        let le = match BUCKETS_US.get(i) {
            Some(us) => number(*us as f64 / 1e6),
            None => "+Inf".to_string(),
        };
        o.push("_bucket", Some(("le", le)), cumulative as f64);
    }
    o.push("_count", None, cumulative as f64);
    o.push("_sum", None, s.latency_sum_s);
}

fn lateness(s: &Series, o: &mut Samples) {
    let Some([p50, p99, max]) = s.lateness else {
        return;
    };
    for (q, us) in [("0.5", p50), ("0.99", p99), ("1", max)] {
        o.push("", Some(("quantile", q.to_string())), us as f64 / 1e6);
    }
    o.push("_count", None, s.lateness_count as f64);
    o.push("_sum", None, s.lateness_sum_s);
}

/// The whole exposition.
pub fn render(r: &Registry, f: Format) -> String {
    let mut out = String::new();
    for fam in &FAMILIES {
        let mut rows = Vec::new();
        for s in &r.series {
            let mut samples = Samples { rows: Vec::new() };
            (fam.samples)(s, &mut samples);
            rows.extend(samples.rows.into_iter().map(|r| (&s.labels, r)));
        }
        if rows.is_empty() {
            continue;
        }
        let typed = match (f, fam.kind) {
            (Format::Prometheus, "counter") => format!("{}_total", fam.name),
            _ => fam.name.to_string(),
        };
        let _ = writeln!(out, "# TYPE {typed} {}", fam.kind);
        let _ = writeln!(out, "# HELP {typed} {}", fam.help);
        for (labels, (suffix, extra, v)) in rows {
            let _ = writeln!(
                out,
                "{}{suffix}{} {}",
                fam.name,
                label_set(labels, extra.as_ref()),
                number(v)
            );
        }
    }
    if f == Format::OpenMetrics {
        out.push_str("# EOF\n");
    }
    out
}

fn label_set(labels: &Labels, extra: Option<&(&'static str, String)>) -> String {
    let all: Vec<String> = labels
        .iter()
        .map(|(k, v)| (*k, v.as_str()))
        .chain(extra.map(|(k, v)| (*k, v.as_str())))
        .map(|(k, v)| format!("{k}=\"{}\"", escape(v)))
        .collect();
    if all.is_empty() {
        String::new()
    } else {
        format!("{{{}}}", all.join(","))
    }
}

/// Label values escape backslash, double quote and line feed, the only
/// three characters both formats escape.
fn escape(v: &str) -> String {
    let mut s = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '\\' => s.push_str("\\\\"),
            '"' => s.push_str("\\\""),
            '\n' => s.push_str("\\n"),
            c => s.push(c),
        }
    }
    s
}

/// Integers without a fraction, so that counters read back exactly; other
/// values as Rust's shortest round-trip form.
fn number(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openmetrics_names_counter_families_without_total_and_ends_with_eof() {
        let mut r = Registry::default();
        r.begin(vec![("url", "http://a/\"x\"\n".into())], Some(10.0));
        let om = render(&r, Format::OpenMetrics);
        assert!(om.contains("# TYPE fairbench_requests counter\n"), "{om}");
        assert!(
            om.contains(r#"fairbench_requests_total{url="http://a/\"x\"\n"} 0"#),
            "{om}"
        );
        assert!(
            om.contains(r#"fairbench_latency_seconds_bucket{url="http://a/\"x\"\n",le="+Inf"} 0"#)
        );
        assert!(om.ends_with("# EOF\n"));
        let prom = render(&r, Format::Prometheus);
        assert!(prom.contains("# TYPE fairbench_requests_total counter\n"));
        assert!(!prom.contains("# EOF"));
    }

    #[test]
    fn an_empty_registry_is_just_the_end_marker() {
        assert_eq!(render(&Registry::default(), Format::OpenMetrics), "# EOF\n");
    }

    #[test]
    fn accept_headers_choose_the_format() {
        let prometheus = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
        assert_eq!(Format::from_accept(prometheus), Format::OpenMetrics);
        assert_eq!(Format::from_accept("text/plain"), Format::Prometheus);
        assert_eq!(Format::from_accept("*/*"), Format::OpenMetrics);
    }
}
