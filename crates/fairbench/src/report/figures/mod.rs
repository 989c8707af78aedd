//! From the model to figures: each chart with the table of every number it
//! draws, grouped in the report's sections. HTML shows both; Markdown shows
//! the tables; so the formats cannot disagree. One file per figure family;
//! this one holds the sections and what the families share.

mod calibration;
mod claims;
mod cores;
mod ladder;
mod latency;
mod protocols;
mod ratio;
mod resources;
mod scaling;
mod spectrum;
mod stages;
mod sweeps;
mod throughput;
mod volume;
mod warmup;
mod wrk;

use super::palette;
use crate::report::model::{Group, RunReport};
use crate::report::stats::Summary;
use crate::report::svg::bar::{Bar, BarChart, BarRow, LegendItem};
use crate::report::svg::line::{Point, Series};
use crate::report::table::{fixed, percent, Cell, Table};
use latency::latency;
use ratio::Metric;
use resources::{cpu_per_request, db_cpu_per_request, rss_peak};
use scaling::scaling;
use spectrum::spectra;
use sweeps::sweeps;
use throughput::throughput;
use volume::{requests, timeouts};
use warmup::warmups;

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
pub fn sections(r: &RunReport) -> Vec<Section> {
    let cases = Cases::of(r);
    let main = &cases.main[..];
    let mut out = Vec::new();
    push(&mut out, "throughput", "Throughput", "Requests per second: for each case, the median over its repetitions of the mean rate of the measurement. Whiskers show the confidence interval of that median (its level, which depends on the number of repetitions, is in the table); with a single repetition they show ± one standard deviation of the 1-second rates instead.", throughput_figures(r, &cases));

    push(&mut out, "latency", "Latency", "Mean (light) and 99th-percentile (solid) latency, medians over repetitions; whiskers on p99 as for throughput. Closed-loop latency runs from the send; constant-rate latency from when the request was due, so a stalled server shows.", latency_figures(r, &cases));

    if !main.is_empty() {
        let figs = vec![requests(main), timeouts(main)];
        push(&mut out, "volume", "Requests and timeouts", "Completed requests per measurement (as the study's \"total requests\"), and requests without an answer (timed out, or still unanswered when the run ended) per million planned.", figs);
    }

    push(&mut out, "stages", "Stages", "Each stage of a rate profile (load --stages), by planned time: the rate the plan asked for against the rate answered, and the latency of the requests planned in the stage (from their planned time, so a server falling behind shows).", stages::stages(main));

    if main
        .iter()
        .any(|g| crate::report::claims::mentions(&g.key.server))
    {
        push(&mut out, "claims", "Published claims", "What the publications claimed, judged by this run: see docs/study.md for the claims and where each comes from.", vec![claims::claims(r)]);
    }

    if let Some(l) = &r.ladder {
        push(&mut out, "ladder", "Ladder", "From the publication's setup to the corrected one, one change per rung (the suite's [[step]]s, each measured in this run): how each change moved each server variant's ratio to the reference. See docs/study.md, \"The ladder\".", ladder::ladder(l));
    }

    push(&mut out, "calibration", "Calibration", "The publication's own tool on the same cases: what it printed beside fairbench's figures computed its way.", calibration::calibration(main).into_iter().collect());

    let figs = spectra(main);
    push(&mut out, "spectrum", "Latency spectrum", "Latency by percentile, HdrHistogram style: every repetition's histogram merged, read at quarter \"nines\" (x = −log10(1 − q): 90 %, 99 %, 99.9 % … equally spaced). Curves stop where the sample count can no longer tell.", figs);

    let figs = scaling(main);
    push(&mut out, "scaling", "Core scaling", "Median requests per second against the cores the server was given, one line per server variant (closed-loop cases run at several core counts).", figs);

    let figs = warmups(main);
    push(&mut out, "warmup", "Warm-up", "Requests per second second by second, warm-up included, of each case's first finished repetition. A JIT climbs; an AOT binary should start flat.", figs);

    let (intro, figs) = resource_figures(r, main);
    push(&mut out, "resources", "Server CPU and memory", &intro, figs);

    let figs = sweeps(r);
    push(&mut out, "sweeps", "Rate sweeps", "Constant-rate steps of increasing offered rate: p50 (dashed) and p99 (solid) latency against the offered rate, the objective as a horizontal line and the knee (the highest rate meeting it) as a vertical line.", figs);
    out
}

/// The run's cases (sweep steps left out), and the subsets some figures
/// draw apart.
struct Cases<'a> {
    main: Vec<&'a Group>,
    single: Vec<&'a Group>,
    multi: Vec<&'a Group>,
    urls: Vec<&'a Group>,
}

impl<'a> Cases<'a> {
    fn of(r: &'a RunReport) -> Cases<'a> {
        let main: Vec<&Group> = r.groups.iter().filter(|g| !g.is_sweep_step()).collect();
        let single: Vec<&Group> = main.iter().copied().filter(|g| g.key.cores == 1).collect();
        let multi: Vec<&Group> = main.iter().copied().filter(|g| g.key.cores > 1).collect();
        let urls: Vec<&Group> = main.iter().copied().filter(|g| g.key.is_url()).collect();
        Cases {
            main,
            single,
            multi,
            urls,
        }
    }
}

/// One figure per subset that has cases, in the order given: (cases, id,
/// title).
fn per_subset(
    subsets: [(&[&Group], &str, &str); 3],
    figure: fn(&[&Group], &str, &str) -> Figure,
) -> Vec<Figure> {
    subsets
        .into_iter()
        .filter(|(gs, _, _)| !gs.is_empty())
        .map(|(gs, id, title)| figure(gs, id, title))
        .collect()
}

fn throughput_figures(r: &RunReport, c: &Cases<'_>) -> Vec<Figure> {
    let mut figs = per_subset(
        [
            (&c.urls, "throughput-urls", "Throughput, URLs"),
            (&c.single, "throughput-single", "Throughput, single core"),
            (&c.multi, "throughput-multi", "Throughput, multi-core"),
        ],
        throughput,
    );
    figs.extend(ratio::figure(r, Metric::Rps));
    figs.extend(protocols::protocols(&c.main));
    figs
}

fn latency_figures(r: &RunReport, c: &Cases<'_>) -> Vec<Figure> {
    let mut figs = per_subset(
        [
            (
                &c.single,
                "latency-single",
                "Mean and p99 latency, single core",
            ),
            (
                &c.multi,
                "latency-multi",
                "Mean and p99 latency, multi-core",
            ),
            (&c.urls, "latency-urls", "Mean and p99 latency, URLs"),
        ],
        latency,
    );
    figs.extend(ratio::figure(r, Metric::P99));
    figs.extend(wrk::as_wrk_prints(&c.main));
    figs
}

/// The resources section's intro (longer with the database scenarios) and
/// its figures.
fn resource_figures(r: &RunReport, main: &[&Group]) -> (String, Vec<Figure>) {
    let mut figs = Vec::new();
    if main.iter().any(|g| g.cpu_us_per_request.is_some()) {
        figs.push(cpu_per_request(main));
    }
    let with_db = main
        .iter()
        .any(|g| g.db_cpu_us_per_request.is_some() || g.db_pool.is_some());
    if with_db {
        figs.push(db_cpu_per_request(main));
    }
    if main.iter().any(|g| g.rss_peak.is_some()) {
        figs.push(rss_peak(main));
    }
    figs.extend(cores::cores_in_use(main));
    figs.extend(ratio::figure(r, Metric::CpuPerRequest));
    // Beside it, for the database scenarios: a server cannot gain on the
    // reference by handing its work to the database.
    figs.extend(ratio::figure(r, Metric::TotalCpuPerRequest));
    let mut intro = "CPU time of the whole server process tree per completed request (steadier than req/s on a noisy machine), the peak resident memory of the tree, and the cores the server and the load generator kept busy.".to_string();
    if with_db {
        intro.push_str(" For the database scenarios, PostgreSQL's CPU per request and its memory beside the server's, and the two CPU figures added up: the whole stack's work.");
    }
    (intro, figs)
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
    grouped(groups.iter().copied(), |g| g.key.context())
}

/// Items gathered by `key`, keys in order of first appearance.
fn grouped<'a, T, K: PartialEq>(
    items: impl IntoIterator<Item = &'a T>,
    key: impl Fn(&T) -> K,
) -> Vec<(K, Vec<&'a T>)> {
    let mut out: Vec<(K, Vec<&T>)> = Vec::new();
    for item in items {
        let k = key(item);
        match out.iter_mut().find(|(have, _)| *have == k) {
            Some((_, v)) => v.push(item),
            None => out.push((k, vec![item])),
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
    // A URL case: its method and URL where a zoo case has its scenario,
    // and no cores (fairbench did not give the server any).
    let (scenario, cores) = match &g.url {
        Some(u) => (format!("{} {}", u.method, u.url), Cell::text("—")),
        None => (g.key.scenario.clone(), Cell::num(g.key.cores as f64, 0)),
    };
    vec![
        Cell::swatch(g.label.clone(), colour(g)),
        Cell::text(scenario),
        cores,
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
        "median {} {unit} over {}",
        fixed(s.median, decimals),
        crate::units::counted(s.n as u64, "repetition")
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

fn no_data(g: &Group) -> Bar {
    Bar {
        value: 0.0,
        whisker: None,
        opacity: 1.0,
        tip: format!("{}\nno finished repetition", tip_head(g)),
        text: "no data".into(),
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
    let mut table = Table::new(format!("table-{}", spec.id), &columns(table_cols));
    let rows = case_rows(groups, &mut table, |g| {
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
        let cells = vec![
            Cell::opt(m.as_ref().map(|s| s.median), spec.decimals),
            Cell::opt(m.as_ref().map(|s| s.min), spec.decimals),
            Cell::opt(m.as_ref().map(|s| s.max), spec.decimals),
        ];
        (vec![bar], cells)
    });
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

/// The rows of a per-case bar chart, cases in sections by context, and
/// one row per case in `table`: its key cells, then the cells `per_case`
/// gives beside its bars. A case without a bar has no chart row.
fn case_rows(
    groups: &[&Group],
    table: &mut Table,
    mut per_case: impl FnMut(&Group) -> (Vec<Bar>, Vec<Cell>),
) -> Vec<BarRow> {
    let mut rows = Vec::new();
    for (ctx, gs) in by_context(groups) {
        rows.push(BarRow::Section(ctx));
        for g in gs {
            let (bars, extra) = per_case(g);
            if !bars.is_empty() {
                rows.push(BarRow::Bars {
                    label: bar_label(g),
                    colour: colour(g),
                    bars,
                });
            }
            let mut cells = key_cells(g);
            cells.extend(extra);
            table.push(cells);
        }
    }
    rows
}

/// A legend of the bars of a row, told apart by opacity: (label, opacity).
fn legend(items: &[(&str, f64)]) -> Vec<LegendItem> {
    items
        .iter()
        .map(|(label, opacity)| LegendItem {
            label: label.to_string(),
            colour: "#555555",
            opacity: *opacity,
        })
        .collect()
}

/// A table whose columns are made up as it is built (one per variant,
/// per core count …): (name, numeric).
fn named_table(id: &str, cols: &[(String, bool)]) -> Table {
    let col_refs: Vec<(&str, bool)> = cols.iter().map(|(n, b)| (n.as_str(), *b)).collect();
    Table::new(format!("table-{id}"), &col_refs)
}

/// A case's line: its server's colour, its variant's dash.
fn case_series(g: &Group, points: Vec<Point>) -> Series {
    Series {
        label: series_label(g),
        colour: colour(g),
        dash: palette::dash(g.variant_index),
        points,
    }
}

fn series_label(g: &Group) -> String {
    g.label.clone()
}

/// 99.9 → "99.9", 43.765867 → "43.7659".
fn trim_pct(p: f64) -> String {
    let s = format!("{p:.4}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}
