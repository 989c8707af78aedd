//! From the model to figures: each chart with the table of every number it
//! draws, grouped in the report's sections. HTML shows both; Markdown shows
//! the tables; so the formats cannot disagree.

use std::collections::BTreeSet;

use super::model::{cores_label, Group, Report, SweepInfo, NINES_STEP};
use super::palette;
use super::ratio_figures::{self, Metric};
use super::stats::Summary;
use super::svg::bar::{Bar, BarChart, BarRow, LegendItem};
use super::svg::line::{Axis, AxisKind, LineChart, Mark, Point, Series};
use super::svg::{byte_unit, latency_unit};
use super::table::{fixed, percent, Cell, Table};

pub struct Section {
    pub id: &'static str,
    pub title: &'static str,
    pub intro: String,
    pub figures: Vec<Figure>,
}

pub struct Figure {
    pub id: String,
    pub title: String,
    pub caption: String,
    /// None for a table without a chart.
    pub svg: Option<String>,
    pub table: Table,
}

/// Every section of the report that has something to show.
pub fn sections(r: &Report) -> Vec<Section> {
    let main: Vec<&Group> = r.groups.iter().filter(|g| !g.is_sweep_step()).collect();
    let single: Vec<&Group> = main.iter().copied().filter(|g| g.key.cores == 1).collect();
    let multi: Vec<&Group> = main.iter().copied().filter(|g| g.key.cores > 1).collect();
    let mut out = Vec::new();

    let mut figs = Vec::new();
    if !single.is_empty() {
        figs.push(throughput(
            &single,
            "throughput-single",
            "Throughput, single core",
        ));
    }
    if !multi.is_empty() {
        figs.push(throughput(
            &multi,
            "throughput-multi",
            "Throughput, multi-core",
        ));
    }
    figs.extend(ratio_figures::figure(r, Metric::Rps));
    push(&mut out, "throughput", "Throughput", "Requests per second: for each case, the median over its repetitions of the mean rate of the measurement. Whiskers show the confidence interval of that median (its level, which depends on the number of repetitions, is in the table); with a single repetition they show ± one standard deviation of the 1-second rates instead.", figs);

    let mut figs = Vec::new();
    if !single.is_empty() {
        figs.push(latency(
            &single,
            "latency-single",
            "Mean and p99 latency, single core",
        ));
    }
    if !multi.is_empty() {
        figs.push(latency(
            &multi,
            "latency-multi",
            "Mean and p99 latency, multi-core",
        ));
    }
    figs.extend(ratio_figures::figure(r, Metric::P99));
    push(&mut out, "latency", "Latency", "Mean (light) and 99th-percentile (solid) latency, medians over repetitions; whiskers on p99 as for throughput. Closed-loop latency runs from the send; constant-rate latency from when the request was due, so a stalled server shows.", figs);

    if !main.is_empty() {
        let figs = vec![requests(&main), timeouts(&main)];
        push(&mut out, "volume", "Requests and timeouts", "Completed requests per measurement (as the study's \"total requests\"), and requests that timed out per million attempted.", figs);
    }

    let figs = spectra(&main);
    push(&mut out, "spectrum", "Latency spectrum", "Latency by percentile, HdrHistogram style: every repetition's histogram merged, read at quarter \"nines\" (x = −log10(1 − q): 90 %, 99 %, 99.9 % … equally spaced). Curves stop where the sample count can no longer tell.", figs);

    let figs = scaling(&main);
    push(&mut out, "scaling", "Core scaling", "Median requests per second against the cores the server was given, one line per server variant (closed-loop cases run at several core counts).", figs);

    let figs = warmups(&main);
    push(&mut out, "warmup", "Warm-up", "Requests per second second by second, warm-up included, of each case's first finished repetition. A JIT climbs; an AOT binary should start flat.", figs);

    let mut figs = Vec::new();
    if main.iter().any(|g| g.cpu_us_per_request.is_some()) {
        figs.push(cpu_per_request(&main));
    }
    if main.iter().any(|g| g.rss_peak.is_some()) {
        figs.push(rss_peak(&main));
    }
    figs.extend(ratio_figures::figure(r, Metric::CpuPerRequest));
    push(&mut out, "resources", "Server CPU and memory", "CPU time of the whole server process tree per completed request (steadier than req/s on a noisy machine), and the peak resident memory of the tree.", figs);

    let figs = sweeps(r);
    push(&mut out, "sweeps", "Rate sweeps", "Constant-rate steps of increasing offered rate: p50 (dashed) and p99 (solid) latency against the offered rate, the objective as a horizontal line and the knee (the highest rate meeting it) as a vertical line.", figs);
    out
}

fn push(
    out: &mut Vec<Section>,
    id: &'static str,
    title: &'static str,
    intro: &str,
    figures: Vec<Figure>,
) {
    if !figures.is_empty() {
        out.push(Section {
            id,
            title,
            intro: intro.to_string(),
            figures,
        });
    }
}

/// Groups in order, split into runs sharing a context (scenario · cores · load).
fn by_context<'a>(groups: &[&'a Group]) -> Vec<(String, Vec<&'a Group>)> {
    let mut out: Vec<(String, Vec<&Group>)> = Vec::new();
    for g in groups {
        let c = g.key.context();
        match out.iter_mut().find(|(k, _)| *k == c) {
            Some((_, v)) => v.push(g),
            None => out.push((c, vec![g])),
        }
    }
    out
}

fn colour(g: &Group) -> &'static str {
    palette::colour(g.palette_index)
}

/// The bar label: the variant, flagged when a reader must look twice.
fn bar_label(g: &Group) -> String {
    if g.flags().is_empty() {
        g.label.clone()
    } else {
        format!("⚠ {}", g.label)
    }
}

/// The first columns of every per-case table.
const KEY_COLUMNS: [(&str, bool); 5] = [
    ("variant", false),
    ("scenario", false),
    ("cores", true),
    ("load", false),
    ("reps", true),
];

fn key_cells(g: &Group) -> Vec<Cell> {
    vec![
        Cell::swatch(g.label.clone(), colour(g)),
        Cell::text(g.key.scenario.clone()),
        Cell::num(g.key.cores as f64, 0),
        Cell::text(g.key.load.clone()),
        Cell::num(g.done as f64, 0),
    ]
}

fn columns(extra: &[(&'static str, bool)]) -> Vec<(&'static str, bool)> {
    KEY_COLUMNS.iter().chain(extra.iter()).copied().collect()
}

fn med(s: &Option<Summary>) -> Option<f64> {
    s.as_ref().map(|s| s.median)
}

/// "median 123.4 over 3 repetitions; 75 % CI 120.0 … 125.0; values 120.0, 123.4, 125.0"
fn summary_tip(s: &Summary, decimals: usize, unit: &str) -> String {
    let vals: Vec<String> = s.values.iter().map(|v| fixed(*v, decimals)).collect();
    let mut t = format!(
        "median {} {unit} over {} repetition{}",
        fixed(s.median, decimals),
        s.n,
        if s.n == 1 { "" } else { "s" }
    );
    if s.n >= 2 {
        t.push_str(&format!(
            "\n{} CI of the median: {} … {} {unit}",
            percent(s.confidence),
            fixed(s.low, decimals),
            fixed(s.high, decimals)
        ));
    }
    t.push_str(&format!("\nrepetitions: {}", vals.join(", ")));
    t
}

fn tip_head(g: &Group) -> String {
    let mut t = format!("{}\n{}", g.label, g.key.context());
    for f in g.flags() {
        t.push_str(&format!("\n⚠ {f}"));
    }
    t
}

fn throughput(groups: &[&Group], id: &str, title: &str) -> Figure {
    let mut rows = Vec::new();
    let mut table = Table::new(
        format!("table-{id}"),
        &columns(&[
            ("req/s median", true),
            ("CI low", true),
            ("CI high", true),
            ("CI level", false),
            ("1-s stdev", true),
            ("notes", false),
        ]),
    );
    for (ctx, gs) in by_context(groups) {
        rows.push(BarRow::Section(ctx));
        for g in gs {
            let bar = match &g.rps {
                Some(s) => {
                    let whisker = if s.n >= 2 {
                        Some((s.low, s.high))
                    } else {
                        g.rps_stdev_1s
                            .map(|sd| ((s.median - sd).max(0.0), s.median + sd))
                    };
                    let mut tip = format!("{}\n{}", tip_head(g), summary_tip(s, 1, "req/s"));
                    if let Some(sd) = g.rps_stdev_1s {
                        tip.push_str(&format!(
                            "\nstdev of the 1-second rates: {} req/s",
                            fixed(sd, 1)
                        ));
                    }
                    Bar {
                        value: s.median,
                        whisker,
                        opacity: 1.0,
                        tip,
                        text: fixed(s.median, 0),
                    }
                }
                None => no_data(g),
            };
            rows.push(BarRow::Bars {
                label: bar_label(g),
                colour: colour(g),
                bars: vec![bar],
            });
            let mut cells = key_cells(g);
            match &g.rps {
                Some(s) if s.n >= 2 => cells.extend([
                    Cell::num(s.median, 1),
                    Cell::num(s.low, 1),
                    Cell::num(s.high, 1),
                    Cell::text(percent(s.confidence)),
                ]),
                Some(s) => cells.extend([
                    Cell::num(s.median, 1),
                    Cell::none(),
                    Cell::none(),
                    Cell::text("n = 1"),
                ]),
                None => cells.extend([Cell::none(), Cell::none(), Cell::none(), Cell::none()]),
            }
            cells.push(Cell::opt(g.rps_stdev_1s, 1));
            cells.push(Cell::text(g.flags().join("; ")));
            table.push(cells);
        }
    }
    let chart = BarChart {
        id: format!("chart-{id}"),
        title: title.to_string(),
        subtitle: Some("median of repetitions; whiskers: CI of the median (1 repetition: ± stdev of 1-s rates)".into()),
        x_label: "requests per second (req/s)".into(),
        rows,
        legend: Vec::new(),
    };
    Figure {
        id: id.to_string(),
        title: title.to_string(),
        caption: "Higher is better. ⚠ marks a case with a note (contract failed, generator saturated, shared CPUs or failed repetitions): see the table.".into(),
        svg: Some(chart.render()),
        table,
    }
}

fn no_data(g: &Group) -> Bar {
    Bar {
        value: 0.0,
        whisker: None,
        opacity: 1.0,
        tip: format!("{}\nno finished repetition", tip_head(g)),
        text: "no data".into(),
    }
}

fn latency(groups: &[&Group], id: &str, title: &str) -> Figure {
    let max = groups
        .iter()
        .filter_map(|g| g.lat_p99.as_ref().map(|s| s.high.max(s.median)))
        .fold(0.0f64, f64::max);
    let (div, unit) = latency_unit(max);
    let mut rows = Vec::new();
    let mut table = Table::new(
        format!("table-{id}"),
        &columns(&[
            ("mean µs", true),
            ("p50 µs", true),
            ("p90 µs", true),
            ("p99 µs", true),
            ("p99 CI low", true),
            ("p99 CI high", true),
            ("p99.9 µs", true),
            ("max µs", true),
        ]),
    );
    for (ctx, gs) in by_context(groups) {
        rows.push(BarRow::Section(ctx));
        for g in gs {
            let mut bars = Vec::new();
            match (&g.lat_mean, &g.lat_p99) {
                (Some(mean), Some(p99)) => {
                    bars.push(Bar {
                        value: mean.median / div,
                        whisker: None,
                        opacity: 0.45,
                        tip: format!(
                            "{}\nmean latency: {}",
                            tip_head(g),
                            summary_tip(mean, 1, "µs")
                        ),
                        text: format!("mean {}", crate::units::micros(mean.median)),
                    });
                    bars.push(Bar {
                        value: p99.median / div,
                        whisker: (p99.n >= 2).then(|| (p99.low / div, p99.high / div)),
                        opacity: 1.0,
                        tip: format!(
                            "{}\np99 latency: {}",
                            tip_head(g),
                            summary_tip(p99, 1, "µs")
                        ),
                        text: format!("p99 {}", crate::units::micros(p99.median)),
                    });
                }
                _ => bars.push(no_data(g)),
            }
            rows.push(BarRow::Bars {
                label: bar_label(g),
                colour: colour(g),
                bars,
            });
            let mut cells = key_cells(g);
            cells.extend([
                Cell::opt(med(&g.lat_mean), 1),
                Cell::opt(med(&g.lat_p50), 1),
                Cell::opt(med(&g.lat_p90), 1),
                Cell::opt(med(&g.lat_p99), 1),
                Cell::opt(g.lat_p99.as_ref().filter(|s| s.n >= 2).map(|s| s.low), 1),
                Cell::opt(g.lat_p99.as_ref().filter(|s| s.n >= 2).map(|s| s.high), 1),
                Cell::opt(med(&g.lat_p999), 1),
                Cell::opt(med(&g.lat_max), 1),
            ]);
            table.push(cells);
        }
    }
    let chart = BarChart {
        id: format!("chart-{id}"),
        title: title.to_string(),
        subtitle: Some("medians of repetitions; whiskers: CI of the p99 median".into()),
        x_label: format!("latency ({unit})"),
        rows,
        legend: vec![
            LegendItem {
                label: "mean".into(),
                colour: "#555555",
                opacity: 0.45,
            },
            LegendItem {
                label: "p99".into(),
                colour: "#555555",
                opacity: 1.0,
            },
        ],
    };
    Figure {
        id: id.to_string(),
        title: title.to_string(),
        caption:
            "Lower is better. Bars use the server's colour: light for the mean, solid for p99."
                .into(),
        svg: Some(chart.render()),
        table,
    }
}

/// A bar chart of one metric per case, all cases, sections by context.
struct SimpleBar<'a> {
    id: &'a str,
    title: &'a str,
    subtitle: &'a str,
    caption: &'a str,
    axis: String,
    div: f64,
    unit: &'a str,
    decimals: usize,
    metric: fn(&Group) -> &Option<Summary>,
    text: fn(f64) -> String,
}

fn simple_bar(
    groups: &[&Group],
    spec: SimpleBar<'_>,
    table_cols: &[(&'static str, bool)],
) -> Figure {
    let mut rows = Vec::new();
    let mut table = Table::new(format!("table-{}", spec.id), &columns(table_cols));
    for (ctx, gs) in by_context(groups) {
        rows.push(BarRow::Section(ctx));
        for g in gs {
            let m = (spec.metric)(g);
            let bar = match m {
                Some(s) => Bar {
                    value: s.median / spec.div,
                    whisker: (s.n >= 2).then(|| (s.low / spec.div, s.high / spec.div)),
                    opacity: 1.0,
                    tip: format!(
                        "{}\n{}",
                        tip_head(g),
                        summary_tip(s, spec.decimals, spec.unit)
                    ),
                    text: (spec.text)(s.median),
                },
                None => no_data(g),
            };
            rows.push(BarRow::Bars {
                label: bar_label(g),
                colour: colour(g),
                bars: vec![bar],
            });
            let mut cells = key_cells(g);
            cells.extend([
                Cell::opt(m.as_ref().map(|s| s.median), spec.decimals),
                Cell::opt(m.as_ref().map(|s| s.min), spec.decimals),
                Cell::opt(m.as_ref().map(|s| s.max), spec.decimals),
            ]);
            table.push(cells);
        }
    }
    let chart = BarChart {
        id: format!("chart-{}", spec.id),
        title: spec.title.to_string(),
        subtitle: Some(spec.subtitle.to_string()),
        x_label: spec.axis,
        rows,
        legend: Vec::new(),
    };
    Figure {
        id: spec.id.to_string(),
        title: spec.title.to_string(),
        caption: spec.caption.to_string(),
        svg: Some(chart.render()),
        table,
    }
}

fn requests(groups: &[&Group]) -> Figure {
    let mut f = simple_bar(
        groups,
        SimpleBar {
            id: "requests",
            title: "Total requests per case",
            subtitle: "completed responses in the measurement, median of repetitions",
            caption:
                "Higher is better at equal duration; the table also counts errors of every class.",
            axis: "requests (count)".into(),
            div: 1.0,
            unit: "requests",
            decimals: 0,
            metric: |g| &g.requests,
            text: |v| fixed(v, 0),
        },
        &[("requests median", true), ("min", true), ("max", true)],
    );
    f.table.columns.push(super::table::Column {
        name: "errors median".into(),
        numeric: true,
    });
    for (row, g) in f
        .table
        .rows
        .iter_mut()
        .zip(by_context(groups).into_iter().flat_map(|(_, v)| v))
    {
        row.push(Cell::opt(med(&g.errors), 0));
    }
    f
}

fn timeouts(groups: &[&Group]) -> Figure {
    simple_bar(
        groups,
        SimpleBar {
            id: "timeouts",
            title: "Timeouts per million requests",
            subtitle: "requests without an answer within the timeout, per million attempted; median of repetitions",
            caption: "Lower is better; zero draws no bar.",
            axis: "timeouts per million requests".into(),
            div: 1.0,
            unit: "per million",
            decimals: 1,
            metric: |g| &g.timeouts_per_million,
            text: |v| fixed(v, 1),
        },
        &[("timeouts/M median", true), ("min", true), ("max", true)],
    )
}

fn cpu_per_request(groups: &[&Group]) -> Figure {
    let with: Vec<&Group> = groups
        .iter()
        .copied()
        .filter(|g| g.cpu_us_per_request.is_some())
        .collect();
    simple_bar(
        &with,
        SimpleBar {
            id: "cpu-per-request",
            title: "Server CPU time per request",
            subtitle:
                "CPU seconds of the server process tree during the measurement ÷ completed requests",
            caption: "Lower is better: the work the server spends on one response.",
            axis: "CPU microseconds per request (µs)".into(),
            div: 1.0,
            unit: "µs",
            decimals: 2,
            metric: |g| &g.cpu_us_per_request,
            text: |v| format!("{} µs", fixed(v, 2)),
        },
        &[("CPU µs/req median", true), ("min", true), ("max", true)],
    )
}

fn rss_peak(groups: &[&Group]) -> Figure {
    let with: Vec<&Group> = groups
        .iter()
        .copied()
        .filter(|g| g.rss_peak.is_some())
        .collect();
    let max = with
        .iter()
        .filter_map(|g| g.rss_peak.as_ref().map(|s| s.max))
        .fold(0.0, f64::max);
    let (div, unit) = byte_unit(max);
    simple_bar(
        &with,
        SimpleBar {
            id: "rss-peak",
            title: "Peak server memory (RSS)",
            subtitle: "peak resident set size of the server process tree, median of repetitions",
            caption: "Lower is better.",
            axis: format!("peak RSS ({unit})"),
            div,
            unit: "bytes",
            decimals: 0,
            metric: |g| &g.rss_peak,
            text: |v| crate::units::bytes(v as u64),
        },
        &[
            ("peak RSS bytes median", true),
            ("min", true),
            ("max", true),
        ],
    )
}

fn series_label(g: &Group) -> String {
    g.label.clone()
}

fn spectra(groups: &[&Group]) -> Vec<Figure> {
    let mut figs = Vec::new();
    let with: Vec<&Group> = groups
        .iter()
        .copied()
        .filter(|g| g.spectrum.is_some())
        .collect();
    for (i, (ctx, gs)) in by_context(&with).into_iter().enumerate() {
        let max = gs
            .iter()
            .filter_map(|g| g.spectrum.as_ref())
            .flat_map(|s| s.points.iter().map(|p| p.latency_us as f64))
            .fold(0.0, f64::max);
        let (div, unit) = latency_unit(max);
        let series = gs
            .iter()
            .map(|g| {
                let sp = g.spectrum.as_ref().expect("filtered");
                Series {
                    label: series_label(g),
                    colour: colour(g),
                    dash: palette::dash(g.variant_index),
                    points: sp
                        .points
                        .iter()
                        .map(|p| Point {
                            x: p.nines,
                            y: p.latency_us as f64 / div,
                            tip: format!(
                                "{}\np{}: {} µs ({} samples)",
                                g.label,
                                trim_pct(p.percentile),
                                fixed(p.latency_us as f64, 0),
                                fixed(sp.count as f64, 0)
                            ),
                        })
                        .collect(),
                }
            })
            .collect();
        let id = format!("spectrum-{}", i + 1);
        let title = format!("Latency by percentile — {ctx}");
        let chart = LineChart {
            id: format!("chart-{id}"),
            title: title.clone(),
            subtitle: Some("all repetitions merged; x: percentile on a log \"nines\" scale".into()),
            x: Axis {
                label: "percentile (log scale of nines)".into(),
                kind: AxisKind::Nines,
            },
            y: Axis {
                label: format!("latency ({unit})"),
                kind: AxisKind::Linear,
            },
            series,
            vmarks: Vec::new(),
            hmarks: Vec::new(),
        };
        // Table: one row per percentile drawn, one column per variant.
        let mut cols: Vec<(String, bool)> = vec![("percentile".into(), false)];
        cols.extend(gs.iter().map(|g| (format!("{} µs", g.label), true)));
        let col_refs: Vec<(&str, bool)> = cols.iter().map(|(n, b)| (n.as_str(), *b)).collect();
        let mut table = Table::new(format!("table-{id}"), &col_refs);
        let deepest = gs
            .iter()
            .filter_map(|g| g.spectrum.as_ref().map(|s| s.points.len()))
            .max()
            .unwrap_or(0);
        for step in 0..deepest {
            let pct = gs
                .iter()
                .filter_map(|g| g.spectrum.as_ref().and_then(|s| s.points.get(step)))
                .map(|p| p.percentile)
                .next()
                .unwrap_or(f64::NAN);
            let mut row = vec![Cell {
                text: format!("p{}", trim_pct(pct)),
                value: Some(pct),
                swatch: None,
            }];
            for g in &gs {
                row.push(Cell::opt(
                    g.spectrum
                        .as_ref()
                        .and_then(|s| s.points.get(step))
                        .map(|p| p.latency_us as f64),
                    0,
                ));
            }
            table.push(row);
        }
        let mut row = vec![Cell::text("max")];
        for g in &gs {
            row.push(Cell::opt(g.spectrum.as_ref().map(|s| s.max_us as f64), 0));
        }
        table.push(row);
        figs.push(Figure {
            id,
            title,
            caption: format!(
                "Lower is better. Points every {NINES_STEP} nines; the table adds the maximum. Line colour: server; dash: variant."
            ),
            svg: Some(chart.render()),
            table,
        });
    }
    figs
}

/// 99.9 → "99.9", 43.765867 → "43.7659".
fn trim_pct(p: f64) -> String {
    let s = format!("{p:.4}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

fn scaling(groups: &[&Group]) -> Vec<Figure> {
    // (scenario, load) pairs measured at two or more core counts.
    let mut keys: Vec<(String, String)> = Vec::new();
    for g in groups {
        let k = (g.key.scenario.clone(), g.key.load.clone());
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    let mut figs = Vec::new();
    for (scenario, load) in keys {
        let gs: Vec<&Group> = groups
            .iter()
            .copied()
            .filter(|g| g.key.scenario == scenario && g.key.load == load && g.rps.is_some())
            .collect();
        let cores: BTreeSet<i64> = gs.iter().map(|g| g.key.cores).collect();
        if cores.len() < 2 {
            continue;
        }
        let mut variants: Vec<&Group> = Vec::new();
        for g in &gs {
            if !variants.iter().any(|v| v.label == g.label) {
                variants.push(g);
            }
        }
        let series = variants
            .iter()
            .map(|v| {
                let mut pts: Vec<&Group> =
                    gs.iter().copied().filter(|g| g.label == v.label).collect();
                pts.sort_by_key(|g| g.key.cores);
                Series {
                    label: series_label(v),
                    colour: colour(v),
                    dash: palette::dash(v.variant_index),
                    points: pts
                        .iter()
                        .map(|g| {
                            let s = g.rps.as_ref().expect("filtered");
                            Point {
                                x: g.key.cores as f64,
                                y: s.median,
                                tip: format!(
                                    "{}\n{}\n{}",
                                    g.label,
                                    cores_label(g.key.cores),
                                    summary_tip(s, 1, "req/s")
                                ),
                            }
                        })
                        .collect(),
                }
            })
            .collect();
        let id = format!("scaling-{}", figs.len() + 1);
        let title = format!("Core scaling — {scenario} · {load}");
        let chart = LineChart {
            id: format!("chart-{id}"),
            title: title.clone(),
            subtitle: Some("median requests per second at each core count".into()),
            x: Axis {
                label: "cores given to the server".into(),
                kind: AxisKind::Count,
            },
            y: Axis {
                label: "requests per second (req/s)".into(),
                kind: AxisKind::Linear,
            },
            series,
            vmarks: Vec::new(),
            hmarks: Vec::new(),
        };
        let mut cols: Vec<(String, bool)> = vec![("variant".into(), false)];
        cols.extend(
            cores
                .iter()
                .map(|c| (format!("req/s at {}", cores_label(*c)), true)),
        );
        let col_refs: Vec<(&str, bool)> = cols.iter().map(|(n, b)| (n.as_str(), *b)).collect();
        let mut table = Table::new(format!("table-{id}"), &col_refs);
        for v in &variants {
            let mut row = vec![Cell::swatch(v.label.clone(), colour(v))];
            for c in &cores {
                row.push(Cell::opt(
                    gs.iter()
                        .find(|g| g.label == v.label && g.key.cores == *c)
                        .and_then(|g| med(&g.rps)),
                    1,
                ));
            }
            table.push(row);
        }
        figs.push(Figure {
            id,
            title,
            caption: "Higher is better; a line that flattens stops scaling.".into(),
            svg: Some(chart.render()),
            table,
        });
    }
    figs
}

fn warmups(groups: &[&Group]) -> Vec<Figure> {
    let with: Vec<&Group> = groups
        .iter()
        .copied()
        .filter(|g| g.warmup.is_some())
        .collect();
    let mut figs = Vec::new();
    for (i, (ctx, gs)) in by_context(&with).into_iter().enumerate() {
        let series = gs
            .iter()
            .map(|g| {
                let w = g.warmup.as_ref().expect("filtered");
                Series {
                    label: series_label(g),
                    colour: colour(g),
                    dash: palette::dash(g.variant_index),
                    points: w
                        .points
                        .iter()
                        .map(|p| Point {
                            x: p.t_s,
                            y: p.rps,
                            tip: format!(
                                "{}\nsecond {} ({}), t = {} s: {} req/s, p99 {} µs",
                                g.label,
                                p.second,
                                p.phase,
                                fixed(p.t_s, 1),
                                fixed(p.rps, 1),
                                fixed(p.p99_us as f64, 0)
                            ),
                        })
                        .collect(),
                }
            })
            .collect();
        // The measurement starts at the first 'measure' sample.
        let start = gs
            .iter()
            .filter_map(|g| g.warmup.as_ref())
            .filter_map(|w| {
                w.points
                    .iter()
                    .find(|p| p.phase == "measure")
                    .map(|p| p.t_s)
            })
            .fold(f64::NAN, |a: f64, b| if a.is_nan() { b } else { a.min(b) });
        let vmarks = if start.is_finite() && start > 0.0 {
            vec![Mark {
                at: start,
                colour: "#444444",
                dash: "4 3",
                label: "measurement starts".into(),
            }]
        } else {
            Vec::new()
        };
        let id = format!("warmup-{}", i + 1);
        let title = format!("Warm-up — {ctx}");
        let chart = LineChart {
            id: format!("chart-{id}"),
            title: title.clone(),
            subtitle: Some(
                "requests per second, second by second; first finished repetition".into(),
            ),
            x: Axis {
                label: "time since the load began (s)".into(),
                kind: AxisKind::Linear,
            },
            y: Axis {
                label: "requests per second (req/s)".into(),
                kind: AxisKind::Linear,
            },
            series,
            vmarks,
            hmarks: Vec::new(),
        };
        let mut seconds: Vec<(i64, f64, String)> = Vec::new();
        for g in &gs {
            for p in &g.warmup.as_ref().expect("filtered").points {
                if !seconds.iter().any(|(s, _, _)| *s == p.second) {
                    seconds.push((p.second, p.t_s, p.phase.clone()));
                }
            }
        }
        seconds.sort_by_key(|(s, _, _)| *s);
        let mut cols: Vec<(String, bool)> = vec![
            ("second".into(), true),
            ("t (s)".into(), true),
            ("phase".into(), false),
        ];
        cols.extend(gs.iter().map(|g| (format!("{} req/s", g.label), true)));
        let col_refs: Vec<(&str, bool)> = cols.iter().map(|(n, b)| (n.as_str(), *b)).collect();
        let mut table = Table::new(format!("table-{id}"), &col_refs);
        for (sec, t, phase) in seconds {
            let mut row = vec![Cell::num(sec as f64, 0), Cell::num(t, 1), Cell::text(phase)];
            for g in &gs {
                let p = g
                    .warmup
                    .as_ref()
                    .and_then(|w| w.points.iter().find(|p| p.second == sec));
                row.push(Cell::opt(p.map(|p| p.rps), 1));
            }
            table.push(row);
        }
        figs.push(Figure {
            id,
            title,
            caption: "Seconds before the dashed line are warm-up and are not counted in any other figure.".into(),
            svg: Some(chart.render()),
            table,
        });
    }
    figs
}

fn sweeps(r: &Report) -> Vec<Figure> {
    let mut keys: Vec<(String, i64)> = Vec::new();
    for s in &r.sweeps {
        let k = (s.scenario.clone(), s.cores);
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    let mut figs = Vec::new();
    for (i, (scenario, cores)) in keys.iter().enumerate() {
        let ss: Vec<&SweepInfo> = r
            .sweeps
            .iter()
            .filter(|s| &s.scenario == scenario && s.cores == *cores)
            .collect();
        let max = ss
            .iter()
            .flat_map(|s| s.steps.iter().flat_map(|p| [p.p50_us, p.p99_us]))
            .flatten()
            .chain(ss.iter().map(|s| s.slo_us as f64))
            .fold(0.0, f64::max);
        let (div, unit) = latency_unit(max);
        let mut series = Vec::new();
        let mut vmarks = Vec::new();
        for s in &ss {
            let c = palette::colour(s.palette_index);
            for (name, dash, pick) in [
                (
                    "p99",
                    "",
                    (|p: &super::model::SweepStep| p.p99_us)
                        as fn(&super::model::SweepStep) -> Option<f64>,
                ),
                ("p50", "2 3", |p: &super::model::SweepStep| p.p50_us),
            ] {
                series.push(Series {
                    label: format!("{} {name}", s.variant_label()),
                    colour: c,
                    dash,
                    points: s
                        .steps
                        .iter()
                        .filter_map(|p| {
                            pick(p).map(|v| Point {
                                x: p.offered_rps,
                                y: v / div,
                                tip: format!(
                                    "{}\noffered {} req/s, achieved {} req/s\n{name} {} µs",
                                    s.variant_label(),
                                    fixed(p.offered_rps, 0),
                                    p.achieved_rps.map_or("—".into(), |a| fixed(a, 1)),
                                    fixed(v, 0)
                                ),
                            })
                        })
                        .collect(),
                });
            }
            if let Some(k) = s.knee_rps {
                vmarks.push(Mark {
                    at: k,
                    colour: c,
                    dash: "6 3",
                    label: format!("knee {}: {} req/s", s.server, fixed(k, 0)),
                });
            }
        }
        let slos: BTreeSet<(i64, i64)> = ss
            .iter()
            .map(|s| ((s.slo_quantile * 1e6) as i64, s.slo_us))
            .collect();
        let hmarks = ss
            .first()
            .filter(|_| slos.len() == 1)
            .map(|s| Mark {
                at: s.slo_us as f64 / div,
                colour: "#999999",
                dash: "3 3",
                label: format!(
                    "objective: p{} ≤ {}",
                    trim_pct(s.slo_quantile * 100.0),
                    crate::units::micros(s.slo_us as f64)
                ),
            })
            .into_iter()
            .collect();
        let id = format!("sweep-{}", i + 1);
        let title = format!(
            "Latency against offered rate — {scenario} · {}",
            cores_label(*cores)
        );
        let chart = LineChart {
            id: format!("chart-{id}"),
            title: title.clone(),
            subtitle: Some("constant-rate steps, medians of repetitions; knee = highest rate meeting the objective".into()),
            x: Axis { label: "offered rate (req/s)".into(), kind: AxisKind::Linear },
            y: Axis { label: format!("latency ({unit}, log scale)"), kind: AxisKind::Log },
            series,
            vmarks,
            hmarks,
        };
        let mut table = Table::new(
            format!("table-{id}"),
            &[
                ("variant", false),
                ("offered req/s", true),
                ("achieved req/s", true),
                ("p50 µs", true),
                ("p99 µs", true),
                ("met objective", false),
                ("knee req/s", true),
            ],
        );
        for s in &ss {
            for p in &s.steps {
                table.push(vec![
                    Cell::swatch(s.variant_label(), palette::colour(s.palette_index)),
                    Cell::num(p.offered_rps, 0),
                    Cell::opt(p.achieved_rps, 1),
                    Cell::opt(p.p50_us, 1),
                    Cell::opt(p.p99_us, 1),
                    Cell::text(match p.met {
                        Some(true) => "yes",
                        Some(false) => "no",
                        None => "—",
                    }),
                    Cell::opt(s.knee_rps, 0),
                ]);
            }
            if s.steps.is_empty() {
                table.push(vec![
                    Cell::swatch(s.variant_label(), palette::colour(s.palette_index)),
                    Cell::none(),
                    Cell::none(),
                    Cell::none(),
                    Cell::none(),
                    Cell::text(format!(
                        "{}{}",
                        s.state,
                        s.reason
                            .as_deref()
                            .map(|r| format!(": {r}"))
                            .unwrap_or_default()
                    )),
                    Cell::opt(s.knee_rps, 0),
                ]);
            }
        }
        figs.push(Figure {
            id,
            title,
            caption:
                "Past the knee, latency climbs: the server cannot keep up with the offered rate."
                    .into(),
            svg: Some(chart.render()),
            table,
        });
    }
    figs
}
