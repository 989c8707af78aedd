//! Line charts: latency spectra (x on a log "nines" scale), warm-up series,
//! core scaling and rate sweeps (y optionally log). Each point carries its
//! exact values in a `<title>`.

use super::{fit, linear_ticks, log_ticks, tick_label, Anchor, Svg, CHAR_W};

#[derive(Clone, Copy, PartialEq)]
pub enum AxisKind {
    /// Linear from zero.
    Linear,
    /// Linear from zero, ticks on whole numbers only (cores).
    Count,
    /// Log10; values ≤ 0 are not drawn.
    Log,
    /// Values are "nines" (−log10(1 − q)); ticks read as percentiles.
    Nines,
}

pub struct Axis {
    pub label: String,
    pub kind: AxisKind,
}

pub struct Point {
    pub x: f64,
    pub y: f64,
    pub tip: String,
}

pub struct Series {
    pub label: String,
    pub colour: &'static str,
    pub dash: &'static str,
    pub points: Vec<Point>,
}

/// A vertical (on x) or horizontal (on y) reference line.
pub struct Mark {
    pub at: f64,
    pub colour: &'static str,
    pub dash: &'static str,
    pub label: String,
}

pub struct LineChart {
    pub id: String,
    pub title: String,
    pub subtitle: Option<String>,
    pub x: Axis,
    pub y: Axis,
    pub series: Vec<Series>,
    pub vmarks: Vec<Mark>,
    pub hmarks: Vec<Mark>,
}

const WIDTH: f64 = 960.0;
const PLOT_H: f64 = 300.0;
const LEFT: f64 = 78.0;
const RIGHT: f64 = 36.0;

struct Scale {
    kind: AxisKind,
    lo: f64,
    hi: f64,
    r0: f64,
    r1: f64,
}

impl Scale {
    fn map(&self, v: f64) -> f64 {
        let (v, lo, hi) = match self.kind {
            AxisKind::Log => (v.max(1e-12).log10(), self.lo.log10(), self.hi.log10()),
            _ => (v, self.lo, self.hi),
        };
        let f = if hi > lo { (v - lo) / (hi - lo) } else { 0.0 };
        self.r0 + f * (self.r1 - self.r0)
    }

    fn ok(&self, v: f64) -> bool {
        v.is_finite() && (self.kind != AxisKind::Log || v > 0.0)
    }

    fn ticks(&self) -> Vec<(f64, String)> {
        match self.kind {
            AxisKind::Linear => linear_ticks(self.lo, self.hi, 6)
                .into_iter()
                .filter(|t| *t <= self.hi * 1.0001)
                .map(|t| (t, tick_label(t)))
                .collect(),
            AxisKind::Count => linear_ticks(self.lo, self.hi, 6)
                .into_iter()
                .filter(|t| *t <= self.hi * 1.0001 && t.fract() == 0.0)
                .map(|t| (t, tick_label(t)))
                .collect(),
            AxisKind::Log => log_ticks(self.lo, self.hi)
                .into_iter()
                .map(|t| (t, tick_label(t)))
                .collect(),
            AxisKind::Nines => {
                let mut t = vec![(0.0, "0%".to_string()), (2f64.log10(), "50%".to_string())];
                let mut k = 1;
                while (k as f64) <= self.hi + 1e-9 && k <= 9 {
                    t.push((k as f64, nines_label(k)));
                    k += 1;
                }
                t
            }
        }
    }
}

/// 1 → "90%", 2 → "99%", 3 → "99.9%", …
pub fn nines_label(k: usize) -> String {
    match k {
        0 => "0%".into(),
        1 => "90%".into(),
        2 => "99%".into(),
        k => format!("99.{}%", "9".repeat(k - 2)),
    }
}

fn domain(kind: AxisKind, values: impl Iterator<Item = f64>, marks: &[Mark]) -> (f64, f64) {
    let vals: Vec<f64> = values
        .chain(marks.iter().map(|m| m.at))
        .filter(|v| v.is_finite() && (kind != AxisKind::Log || *v > 0.0))
        .collect();
    let max = vals.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let min = vals.iter().copied().fold(f64::INFINITY, f64::min);
    match kind {
        AxisKind::Linear => {
            let hi = if max > 0.0 { max } else { 1.0 };
            (0.0, *linear_ticks(0.0, hi, 6).last().unwrap_or(&hi))
        }
        AxisKind::Count => (0.0, if max > 1.0 { max.ceil() } else { 1.0 }),
        AxisKind::Nines => (0.0, if max > 1.0 { max.ceil() } else { 1.0 }),
        AxisKind::Log => {
            if !min.is_finite() {
                return (1.0, 10.0);
            }
            let lo = 10f64.powf(min.log10().floor());
            let mut hi = 10f64.powf(max.log10().ceil());
            if hi <= lo {
                hi = lo * 10.0;
            }
            (lo, hi)
        }
    }
}

impl LineChart {
    pub fn render(&self) -> String {
        let top = if self.subtitle.is_some() { 64.0 } else { 48.0 };
        let height = top + PLOT_H + 48.0 + self.legend_height();
        let plot_bottom = top + PLOT_H;
        let (xs, ys) = self.scales(top, plot_bottom);

        let desc = format!(
            "Line chart, {} series; exact values on hover and in the table below.",
            self.series.len()
        );
        let mut s = Svg::new(&self.id, WIDTH, height, &self.title, &desc);
        s.heading(&self.title, self.subtitle.as_deref());
        self.draw_axes(&mut s, &xs, &ys);
        self.draw_marks(&mut s, &xs, &ys);
        self.draw_series(&mut s, &xs, &ys);
        self.draw_legend(&mut s, plot_bottom);
        s.finish()
    }

    /// The legend's height: its items flow left to right and wrap.
    fn legend_height(&self) -> f64 {
        let mut legend_rows = 1;
        let mut lx = LEFT;
        for s in &self.series {
            let w = 44.0 + fit(&s.label, 60).chars().count() as f64 * CHAR_W;
            if lx + w > WIDTH - 12.0 && lx > LEFT {
                legend_rows += 1;
                lx = LEFT;
            }
            lx += w;
        }
        if self.series.is_empty() {
            0.0
        } else {
            legend_rows as f64 * 18.0 + 8.0
        }
    }

    /// The x and y scales over every point and mark, onto the plot from
    /// `top` to `plot_bottom`.
    fn scales(&self, top: f64, plot_bottom: f64) -> (Scale, Scale) {
        let (x0, x1) = domain(
            self.x.kind,
            self.series
                .iter()
                .flat_map(|s| s.points.iter().map(|p| p.x)),
            &self.vmarks,
        );
        let (y0, y1) = domain(
            self.y.kind,
            self.series
                .iter()
                .flat_map(|s| s.points.iter().map(|p| p.y)),
            &self.hmarks,
        );
        let xs = Scale {
            kind: self.x.kind,
            lo: x0,
            hi: x1,
            r0: LEFT,
            r1: WIDTH - RIGHT,
        };
        let ys = Scale {
            kind: self.y.kind,
            lo: y0,
            hi: y1,
            r0: plot_bottom,
            r1: top,
        };
        (xs, ys)
    }

    /// The grid with its tick labels, the axis lines and their labels.
    fn draw_axes(&self, s: &mut Svg, xs: &Scale, ys: &Scale) {
        // The y scale runs from the plot's bottom (r0) up to its top (r1).
        let (top, plot_bottom) = (ys.r1, ys.r0);
        for (t, label) in xs.ticks() {
            let x = xs.map(t);
            s.line(x, top, x, plot_bottom, "#e3e3e3", 1.0, "");
            s.text(
                x,
                plot_bottom + 16.0,
                &label,
                Anchor::Middle,
                11.0,
                "normal",
                "#444444",
            );
        }
        for (t, label) in ys.ticks() {
            let y = ys.map(t);
            s.line(LEFT, y, WIDTH - RIGHT, y, "#e3e3e3", 1.0, "");
            s.text(
                LEFT - 6.0,
                y + 4.0,
                &label,
                Anchor::End,
                11.0,
                "normal",
                "#444444",
            );
        }
        s.line(LEFT, top, LEFT, plot_bottom, "#888888", 1.0, "");
        s.line(
            LEFT,
            plot_bottom,
            WIDTH - RIGHT,
            plot_bottom,
            "#888888",
            1.0,
            "",
        );
        s.x_label((LEFT + WIDTH - RIGHT) / 2.0, plot_bottom, &self.x.label);
        s.text_vertical(18.0, (top + plot_bottom) / 2.0, &self.y.label);
    }

    /// The vertical and horizontal reference lines with their labels.
    fn draw_marks(&self, s: &mut Svg, xs: &Scale, ys: &Scale) {
        let (top, plot_bottom) = (ys.r1, ys.r0);
        for (i, m) in self.vmarks.iter().enumerate() {
            if xs.ok(m.at) {
                let x = xs.map(m.at);
                s.line(x, top, x, plot_bottom, m.colour, 1.5, m.dash);
                // Labels step down so neighbouring marks stay readable, and
                // turn to the left of their line near the right edge.
                let y = top + 12.0 + 14.0 * i as f64;
                let w = m.label.chars().count() as f64 * CHAR_W * 0.92;
                if x + 4.0 + w > WIDTH - RIGHT {
                    s.text(x - 4.0, y, &m.label, Anchor::End, 11.0, "normal", "#333333");
                } else {
                    s.text(
                        x + 4.0,
                        y,
                        &m.label,
                        Anchor::Start,
                        11.0,
                        "normal",
                        "#333333",
                    );
                }
            }
        }
        for m in &self.hmarks {
            if ys.ok(m.at) {
                let y = ys.map(m.at);
                s.line(LEFT, y, WIDTH - RIGHT, y, m.colour, 1.2, m.dash);
                s.text(
                    WIDTH - RIGHT - 4.0,
                    y - 4.0,
                    &m.label,
                    Anchor::End,
                    11.0,
                    "normal",
                    "#333333",
                );
            }
        }
    }

    /// Each series' line through its points, and a dot at each.
    fn draw_series(&self, s: &mut Svg, xs: &Scale, ys: &Scale) {
        for series in &self.series {
            let pts: Vec<(f64, f64)> = series
                .points
                .iter()
                .filter(|p| xs.ok(p.x) && ys.ok(p.y))
                .map(|p| (xs.map(p.x), ys.map(p.y)))
                .collect();
            if pts.len() > 1 {
                s.polyline(&pts, series.colour, 2.0, series.dash, Some(&series.label));
            }
            for p in series.points.iter().filter(|p| xs.ok(p.x) && ys.ok(p.y)) {
                s.circle(xs.map(p.x), ys.map(p.y), 3.0, series.colour, Some(&p.tip));
            }
        }
    }

    /// The legend under the plot, wrapping as [`Self::legend_height`]
    /// counted.
    fn draw_legend(&self, s: &mut Svg, plot_bottom: f64) {
        let mut lx = LEFT;
        let mut ly = plot_bottom + 62.0;
        for series in &self.series {
            let label = fit(&series.label, 60);
            let w = 44.0 + label.chars().count() as f64 * CHAR_W;
            if lx + w > WIDTH - 12.0 && lx > LEFT {
                lx = LEFT;
                ly += 18.0;
            }
            s.line(
                lx,
                ly - 4.0,
                lx + 28.0,
                ly - 4.0,
                series.colour,
                2.5,
                series.dash,
            );
            s.text_with_tip(lx + 34.0, ly, &label, &series.label, Anchor::Start);
            lx += w;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nines_labels() {
        assert_eq!(nines_label(1), "90%");
        assert_eq!(nines_label(3), "99.9%");
        assert_eq!(nines_label(5), "99.999%");
    }

    #[test]
    fn log_domain_spans_decades() {
        let (lo, hi) = domain(AxisKind::Log, [150.0, 3_000.0].into_iter(), &[]);
        assert_eq!((lo, hi), (100.0, 10_000.0));
    }
}
