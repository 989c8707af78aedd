//! HTTP/1.1 beside HTTP/2 and HTTP/3: for each server variant measured over
//! more than one protocol in the same context (scenario · cores · load), its
//! median requests per second over each, one bar per protocol. Shown only
//! when a run measured some server over several protocols (suites/h2.toml,
//! suites/h3.toml).

use super::{colour, grouped, legend, summary_tip, Figure};
use crate::report::case_key::cores_label;
use crate::report::model::Group;
use crate::report::svg::bar::{Bar, BarChart, BarRow};
use crate::report::table::{fixed, Cell, Table};

/// The protocols in the order shown, and each one's bar opacity.
/// HTTP/3's comes last: the figure's first three kept their shades.
const PROTOCOLS: [(&str, f64); 4] = [("http/1.1", 0.35), ("h2c", 0.7), ("h2", 1.0), ("h3", 0.5)];

/// "HTTP/1.1 and HTTP/2", "HTTP/1.1, HTTP/2 and HTTP/3": the protocols the
/// figure's bars are of, by family.
fn families(groups: &[&Group]) -> String {
    let has = |f: fn(&str) -> bool| groups.iter().any(|g| f(protocol(g)));
    let mut names = Vec::new();
    if has(|p| p == "http/1.1") {
        names.push("HTTP/1.1");
    }
    if has(|p| p == "h2c" || p == "h2") {
        names.push("HTTP/2");
    }
    if has(|p| p == "h3") {
        names.push("HTTP/3");
    }
    match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        Some((last, _)) => last.to_string(),
        None => String::new(),
    }
}

fn protocol(g: &Group) -> &str {
    match g.key.protocol.as_str() {
        "" => "http/1.1",
        p => p,
    }
}

/// The figure, when some variant was measured over two protocols or more.
pub(super) fn protocols(groups: &[&Group]) -> Option<Figure> {
    // Variant and context without the protocol: what the bars of a row share.
    let row_key = |g: &Group| {
        (
            format!("{} {}/{}", g.key.server, g.key.mode, g.key.response),
            format!(
                "{} · {} · {}",
                g.key.scenario,
                cores_label(g.key.cores),
                g.key.load
            ),
        )
    };
    let mut rows_by = grouped(groups.iter().copied(), row_key);
    rows_by.retain(|(_, gs)| gs.len() >= 2);
    if rows_by.is_empty() {
        return None;
    }
    let shown: Vec<&Group> = rows_by
        .iter()
        .flat_map(|(_, gs)| gs.iter().copied())
        .collect();
    let title = format!("Throughput over {}", families(&shown));
    let present: Vec<(&str, f64)> = PROTOCOLS
        .into_iter()
        .filter(|(p, _)| shown.iter().any(|g| protocol(g) == *p))
        .collect();
    let mut rows = Vec::new();
    let mut table = Table::new(
        "table-protocols".to_string(),
        &[
            ("variant", false),
            ("context", false),
            ("protocol", false),
            ("reps", true),
            ("req/s median", true),
            ("vs HTTP/1.1", true),
            ("p99 µs median", true),
            ("CPU µs/req median", true),
        ],
    );
    let mut context = String::new();
    for ((variant, ctx), mut gs) in rows_by {
        gs.sort_by_key(|g| PROTOCOLS.iter().position(|(p, _)| *p == protocol(g)));
        if ctx != context {
            rows.push(BarRow::Section(ctx.clone()));
            context = ctx.clone();
        }
        let h1 = gs
            .iter()
            .find(|g| protocol(g) == "http/1.1")
            .and_then(|g| g.rps.as_ref().map(|s| s.median));
        let row = Row {
            variant: &variant,
            ctx: &ctx,
            h1,
        };
        let bars = gs.iter().map(|g| row.bar(g)).collect();
        for g in &gs {
            table.push(row.cells(g));
        }
        rows.push(BarRow::Bars {
            label: variant,
            colour: colour(gs[0]),
            bars,
        });
    }
    let chart = BarChart {
        id: "chart-protocols".into(),
        title: title.clone(),
        subtitle: Some(
            "median of repetitions, one bar per protocol; whiskers: CI of the median".into(),
        ),
        x_label: "requests per second (req/s)".into(),
        rows,
        legend: legend(&present),
    };
    Some(Figure {
        id: "protocols".into(),
        title,
        caption: "Higher is better. Each server variant over every protocol it was measured in, the same scenario, cores and load: HTTP/1.1, h2c (HTTP/2 with prior knowledge), h2 (HTTP/2 over TLS, ALPN) and h3 (HTTP/3 over QUIC). Over HTTP/2 and HTTP/3 a connection carries the load's streams; see the load column. The servers that serve no HTTP/2 or HTTP/3 (the JDK's HttpServer, every Dart server; Node and nginx as installed here have no HTTP/3) are not in their bars: `fairbench servers` says why.".into(),
        svg: Some(chart.render()),
        table,
    })
}

/// One chart row: a variant in a context, and its median req/s over
/// HTTP/1.1 if it was measured over it.
struct Row<'a> {
    variant: &'a str,
    ctx: &'a str,
    h1: Option<f64>,
}

impl Row<'_> {
    /// The bar of the variant over `g`'s protocol.
    fn bar(&self, g: &Group) -> Bar {
        let (variant, ctx) = (self.variant, self.ctx);
        let p = protocol(g);
        let opacity = PROTOCOLS
            .iter()
            .find(|(x, _)| *x == p)
            .map_or(1.0, |(_, o)| *o);
        let (value, text, tip) = match &g.rps {
            Some(s) => (
                s.median,
                format!("{p} {}", fixed(s.median, 0)),
                format!("{variant} over {p}\n{ctx}\n{}", summary_tip(s, 1, "req/s")),
            ),
            None => (
                0.0,
                format!("{p} no data"),
                format!("{variant} over {p}\n{ctx}\nno finished repetition"),
            ),
        };
        Bar {
            value,
            whisker: g.rps.as_ref().filter(|s| s.n >= 2).map(|s| (s.low, s.high)),
            opacity,
            tip,
            text,
        }
    }

    /// The table row of the variant over `g`'s protocol.
    fn cells(&self, g: &Group) -> Vec<Cell> {
        let p = protocol(g);
        let rps = g.rps.as_ref().map(|s| s.median);
        vec![
            Cell::swatch(self.variant.to_string(), colour(g)),
            Cell::text(self.ctx.to_string()),
            Cell::text(p.to_string()),
            Cell::num(g.done as f64, 0),
            Cell::opt(rps, 1),
            match (rps, self.h1) {
                (Some(x), Some(base)) if base > 0.0 && p != "http/1.1" => {
                    Cell::text(format!("{:+.1} %", (x / base - 1.0) * 100.0))
                }
                _ => Cell::none(),
            },
            Cell::opt(g.lat_p99.as_ref().map(|s| s.median), 0),
            Cell::opt(g.cpu_us_per_request.as_ref().map(|s| s.median), 2),
        ]
    }
}
