//! Ratio charts (a forest plot): one row per server variant, a dot at its
//! ratio to the reference and a line across its confidence interval, on a
//! log axis with a line at 1 — so 2× and ½× sit equally far from "same as
//! the reference", and an interval crossing the line says "cannot tell".

use super::{
    fit, label_column, linear_ticks, log_ticks, tick_label, Anchor, Svg, LABEL_MAX_CHARS, SECTION_H,
};

pub struct RatioChart {
    pub id: String,
    pub title: String,
    pub subtitle: Option<String>,
    /// The axis label, e.g. "req/s relative to go-nethttp (×)".
    pub x_label: String,
    pub rows: Vec<RatioRow>,
}

pub enum RatioRow {
    /// A bold heading line above the rows it names.
    Section(String),
    Point {
        label: String,
        colour: &'static str,
        /// The ratio; None for the reference itself (drawn as a mark at 1).
        value: Option<f64>,
        interval: Option<(f64, f64)>,
        /// Shown on hover.
        tip: String,
        /// Printed at the right.
        text: String,
    },
}

const WIDTH: f64 = 960.0;
const ROW_H: f64 = 20.0;

impl RatioChart {
    /// The axis range: every value and interval, and 1, with some air.
    fn domain(&self) -> (f64, f64) {
        let mut lo = 1.0f64 / 1.05;
        let mut hi = 1.05f64;
        for r in &self.rows {
            if let RatioRow::Point {
                value, interval, ..
            } = r
            {
                for v in value
                    .iter()
                    .copied()
                    .chain(interval.iter().flat_map(|(a, b)| [*a, *b]))
                    .filter(|v| v.is_finite() && *v > 0.0)
                {
                    lo = lo.min(v);
                    hi = hi.max(v);
                }
            }
        }
        let pad = (hi / lo).powf(0.05);
        (lo / pad, hi * pad)
    }

    pub fn render(&self) -> String {
        let left = label_column(self.rows.iter().filter_map(|r| match r {
            RatioRow::Point { label, .. } => Some(label.as_str()),
            RatioRow::Section(_) => None,
        }));
        let right = 170.0;
        let top = if self.subtitle.is_some() { 56.0 } else { 40.0 };
        let plot_w = WIDTH - left - right;
        let rows_h: f64 = self
            .rows
            .iter()
            .map(|r| match r {
                RatioRow::Section(_) => SECTION_H,
                RatioRow::Point { .. } => ROW_H,
            })
            .sum();
        let height = top + rows_h + 44.0;
        let (lo, hi) = self.domain();
        let axis = LogAxis {
            lo,
            hi,
            left,
            plot_w,
        };

        let points = self
            .rows
            .iter()
            .filter(|r| matches!(r, RatioRow::Point { .. }))
            .count();
        let desc = format!(
            "Ratio chart, {points} rows: each variant's ratio to the reference with its confidence interval, on a log axis with a line at 1; exact values on hover and in the table below."
        );
        let mut s = Svg::new(&self.id, WIDTH, height, &self.title, &desc);
        s.heading(&self.title, self.subtitle.as_deref());

        let plot_bottom = top + rows_h;
        axis.draw(&mut s, top, plot_bottom, &self.x_label);

        let mut y = top;
        for r in &self.rows {
            match r {
                RatioRow::Section(title) => {
                    s.row_section(y, title);
                    y += SECTION_H;
                }
                RatioRow::Point { .. } => {
                    draw_point(&mut s, &axis, y + ROW_H / 2.0, r);
                    y += ROW_H;
                }
            }
        }
        s.finish()
    }
}

/// The chart's log axis: from `lo` at `left` to `hi` at `left + plot_w`.
struct LogAxis {
    lo: f64,
    hi: f64,
    left: f64,
    plot_w: f64,
}

impl LogAxis {
    fn x(&self, v: f64) -> f64 {
        let (lo, hi) = (self.lo, self.hi);
        let v = v.clamp(lo, hi);
        self.left + (v.ln() - lo.ln()) / (hi.ln() - lo.ln()) * self.plot_w
    }

    fn ticks(&self) -> Vec<f64> {
        let (lo, hi) = (self.lo, self.hi);
        if hi / lo <= 4.0 {
            linear_ticks(lo, hi, 6)
        } else {
            log_ticks(lo, hi)
        }
        .into_iter()
        .filter(|t| *t >= lo && *t <= hi && *t > 0.0)
        .collect()
    }

    /// The grid, the line at 1 and the axis label.
    fn draw(&self, s: &mut Svg, top: f64, plot_bottom: f64, label: &str) {
        let grid: Vec<(f64, String)> = self
            .ticks()
            .iter()
            .map(|t| (self.x(*t), format!("{}×", tick_label(*t))))
            .collect();
        s.x_grid(&grid, top, plot_bottom);
        // "Same as the reference".
        s.line(
            self.x(1.0),
            top - 4.0,
            self.x(1.0),
            plot_bottom,
            "#444444",
            1.2,
            "4 3",
        );
        s.x_label(self.left + self.plot_w / 2.0, plot_bottom, label);
    }
}

/// A point row centred on `cy`: its label, interval, dot (or the
/// reference's square) and text.
fn draw_point(s: &mut Svg, axis: &LogAxis, cy: f64, row: &RatioRow) {
    let RatioRow::Point {
        label,
        colour,
        value,
        interval,
        tip,
        text,
    } = row
    else {
        return;
    };
    let x = |v: f64| axis.x(v);
    s.text_with_tip(
        axis.left - 8.0,
        cy + 4.0,
        &fit(label, LABEL_MAX_CHARS),
        label,
        Anchor::End,
    );
    if let Some((a, b)) = interval {
        s.line(x(*a), cy, x(*b), cy, colour, 2.0, "");
        s.line(x(*a), cy - 4.0, x(*a), cy + 4.0, colour, 2.0, "");
        s.line(x(*b), cy - 4.0, x(*b), cy + 4.0, colour, 2.0, "");
    }
    match value {
        Some(v) => s.circle(x(*v), cy, 4.5, colour, Some(tip)),
        // The reference: a hollow square on the line at 1.
        None => s.rect(x(1.0) - 4.0, cy - 4.0, 8.0, 8.0, colour, 0.35, Some(tip)),
    }
    s.text(
        axis.left + axis.plot_w + 10.0,
        cy + 4.0,
        text,
        Anchor::Start,
        11.0,
        "normal",
        "#333333",
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chart(rows: Vec<RatioRow>) -> String {
        RatioChart {
            id: "c".into(),
            title: "t".into(),
            subtitle: None,
            x_label: "×".into(),
            rows,
        }
        .render()
    }

    #[test]
    fn points_sit_on_a_log_axis_around_one() {
        let out = chart(vec![
            RatioRow::Section("static <b>".into()),
            RatioRow::Point {
                label: "ref".into(),
                colour: "#000000",
                value: None,
                interval: None,
                tip: "reference".into(),
                text: "reference".into(),
            },
            RatioRow::Point {
                label: "double".into(),
                colour: "#0072b2",
                value: Some(2.0),
                interval: Some((1.9, 2.1)),
                tip: "2.00× [1.90–2.10]".into(),
                text: "2.00× [1.90–2.10]".into(),
            },
            RatioRow::Point {
                label: "half<script>".into(),
                colour: "#e69f00",
                value: Some(0.5),
                interval: Some((0.45, 0.55)),
                tip: "0.50×".into(),
                text: "0.50×".into(),
            },
        ]);
        assert!(out.contains("static &lt;b&gt;") && !out.contains("<script>"));
        // 2× and ½× are equally far from the line at 1.
        let cx: Vec<f64> = out
            .match_indices("<circle cx=\"")
            .map(|(i, m)| {
                let rest = &out[i + m.len()..];
                rest[..rest.find('"').unwrap()].parse().unwrap()
            })
            .collect();
        assert_eq!(cx.len(), 2);
        let one = {
            let i = out.find("stroke-dasharray=\"4 3\"").unwrap();
            let line = &out[out[..i].rfind("<line").unwrap()..i];
            let x1 = line.split("x1=\"").nth(1).unwrap();
            x1[..x1.find('"').unwrap()].parse::<f64>().unwrap()
        };
        assert!(
            ((cx[0] - one) - (one - cx[1])).abs() < 0.05,
            "{cx:?} around {one}"
        );
        assert!(out.contains(">2×<") && out.contains(">1×<"), "{out}");
    }
}
