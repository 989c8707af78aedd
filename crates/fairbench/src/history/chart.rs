//! `history --svg`: one case's series as a chart, drawn with the report's
//! SVG writer (every string escaped): each run's median with its interval
//! as a whisker, its A/A noise band (the floor a change must exceed) as a
//! shaded bar, and a dashed vertical line where a change point starts.

use super::analysis::CaseHistory;
use crate::report::palette::OKABE_ITO;
use crate::report::svg::{linear_ticks, tick_label, Anchor, Svg};

const WIDTH: f64 = 960.0;
const LEFT: f64 = 84.0;
const RIGHT: f64 = 24.0;
const TOP: f64 = 64.0;
const PLOT_H: f64 = 300.0;

/// The y range: every median, interval and band, with a little room.
fn y_range(h: &CaseHistory) -> (f64, f64) {
    let mut lo = f64::INFINITY;
    let mut hi = f64::NEG_INFINITY;
    for p in &h.points {
        let band = p.median.abs() * h.floor_pct / 100.0;
        for v in [p.low, p.high, p.median - band, p.median + band] {
            if v.is_finite() {
                lo = lo.min(v);
                hi = hi.max(v);
            }
        }
    }
    if !lo.is_finite() {
        return (0.0, 1.0);
    }
    let pad = ((hi - lo) * 0.08).max(hi.abs() * 0.01).max(1e-9);
    ((lo - pad).max(0.0), hi + pad)
}

/// Where values and runs land on the plot.
struct Frame {
    lo: f64,
    hi: f64,
    step: f64,
}

impl Frame {
    fn y(&self, v: f64) -> f64 {
        TOP + PLOT_H - (v - self.lo) / (self.hi - self.lo) * PLOT_H
    }

    fn x(&self, i: usize) -> f64 {
        LEFT + self.step * (i as f64 + 0.5)
    }
}

/// `axis` names the points' order, under the x axis (e.g. "run
/// (oldest → newest)").
pub fn svg(h: &CaseHistory, axis: &str) -> String {
    let bottom = TOP + PLOT_H;
    let (lo, hi) = y_range(h);
    let f = Frame {
        lo,
        hi,
        step: (WIDTH - LEFT - RIGHT) / h.points.len().max(1) as f64,
    };
    let within = h.points.iter().any(|p| p.window.is_some());
    let title = if within {
        format!("{} — {} within its run", h.label, h.unit)
    } else {
        format!("{} — {} across runs", h.label, h.unit)
    };
    let desc = format!(
        "{} {}; {} change point(s) beyond ±{:.1} %; values on hover.",
        h.points.len(),
        if within { "windows" } else { "runs" },
        h.changes.len(),
        h.floor_pct
    );
    let mut s = Svg::new("history", WIDTH, bottom + 56.0, &title, &desc);
    s.heading(
        &title,
        Some("dot: median of the run's repetitions · whisker: its interval · shaded: ± the noise floor · dashed: a change point"),
    );
    for t in linear_ticks(lo, hi, 6)
        .into_iter()
        .filter(|t| *t >= lo && *t <= hi)
    {
        s.line(LEFT, f.y(t), WIDTH - RIGHT, f.y(t), "#e3e3e3", 1.0, "");
        s.text(
            LEFT - 6.0,
            f.y(t) + 4.0,
            &tick_label(t),
            Anchor::End,
            11.0,
            "normal",
            "#444444",
        );
    }
    s.line(LEFT, TOP, LEFT, bottom, "#888888", 1.0, "");
    s.line(LEFT, bottom, WIDTH - RIGHT, bottom, "#888888", 1.0, "");
    s.text_vertical(18.0, TOP + PLOT_H / 2.0, h.unit);
    s.x_label((LEFT + WIDTH - RIGHT) / 2.0, bottom, axis);
    draw_points(&mut s, h, &f);
    draw_changes(&mut s, h, &f);
    // The report inlines its charts in HTML; this one is a file of its
    // own, which a browser draws only with the SVG namespace named.
    s.finish()
        .replacen("<svg ", "<svg xmlns=\"http://www.w3.org/2000/svg\" ", 1)
}

/// Each run's band, whisker, label and dot, and the line through them.
/// The fill of a point whose run did not do the work (`Point::off`):
/// vermillion, apart from the series' purple and its band's orange.
const OFF_COLOUR: &str = OKABE_ITO[3];

fn draw_points(s: &mut Svg, h: &CaseHistory, f: &Frame) {
    let (colour, band) = (OKABE_ITO[4], OKABE_ITO[1]);
    let bottom = TOP + PLOT_H;
    for (i, p) in h.points.iter().enumerate() {
        let half = p.median.abs() * h.floor_pct / 100.0;
        let (top, low) = (f.y(p.median + half), f.y(p.median - half));
        s.rect(
            f.x(i) - f.step * 0.3,
            top,
            f.step * 0.6,
            low - top,
            band,
            0.25,
            None,
        );
        s.line(f.x(i), f.y(p.high), f.x(i), f.y(p.low), colour, 1.5, "");
        s.text(
            f.x(i),
            bottom + 16.0,
            &p.tag(),
            Anchor::Middle,
            11.0,
            "normal",
            "#444444",
        );
    }
    let pts: Vec<(f64, f64)> = h
        .points
        .iter()
        .enumerate()
        .map(|(i, p)| (f.x(i), f.y(p.median)))
        .collect();
    if pts.len() > 1 {
        s.polyline(&pts, colour, 2.0, "", Some(&h.label));
    }
    for (i, p) in h.points.iter().enumerate() {
        let at = match p.window {
            Some(_) => format!("{} of run {}", p.tag(), p.run),
            None => format!("run {}", p.run),
        };
        let mut tip = format!(
            "{at} · {} · revision {}\nmedian {} ({}–{})",
            p.started_at,
            p.revision.as_deref().unwrap_or("—"),
            tick_label(p.median),
            tick_label(p.low),
            tick_label(p.high)
        );
        // A run that did not do the work is drawn apart: its figure is
        // not the server's speed at the job.
        let fill = match &p.off {
            Some(off) => {
                tip.push_str(&format!("\n✗ {off}: not searched for changes"));
                OFF_COLOUR
            }
            None => colour,
        };
        s.circle(f.x(i), f.y(p.median), 3.5, fill, Some(&tip));
    }
}

/// A dashed line before the first run of each new level, labelled with
/// the run and the size; labels near the right edge turn left.
fn draw_changes(s: &mut Svg, h: &CaseHistory, f: &Frame) {
    for (k, c) in h.changes.iter().enumerate() {
        let at = f.x(c.index) - f.step / 2.0;
        s.line(at, TOP, at, TOP + PLOT_H, OKABE_ITO[5], 1.5, "6 3");
        let label = format!(
            "{}: {}",
            match h.points[c.index].window {
                Some(_) => h.points[c.index].tag(),
                None => format!("run {}", c.run_after),
            },
            c.change_pct
                .map_or_else(|| "—".into(), |p| format!("{p:+.1} %"))
        );
        let (anchor, dx) = if at > WIDTH * 0.75 {
            (Anchor::End, -4.0)
        } else {
            (Anchor::Start, 4.0)
        };
        let y = TOP + 12.0 + 14.0 * k as f64;
        s.text(at + dx, y, &label, anchor, 11.0, "normal", "#333333");
    }
}
