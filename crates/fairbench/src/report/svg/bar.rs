//! Horizontal bar charts: one row per server variant, rows grouped in
//! sections (scenario · cores · load), optional whiskers for an interval.
//! Horizontal, because variant names are long and there may be many.

use super::{
    fit, label_column, linear_ticks, tick_label, Anchor, Svg, CHAR_W, LABEL_MAX_CHARS, SECTION_H,
};

pub struct BarChart {
    pub id: String,
    pub title: String,
    pub subtitle: Option<String>,
    /// The value axis label, with its unit.
    pub x_label: String,
    pub rows: Vec<BarRow>,
    pub legend: Vec<LegendItem>,
}

pub enum BarRow {
    /// A bold heading line above the rows it names.
    Section(String),
    Bars {
        label: String,
        colour: &'static str,
        bars: Vec<Bar>,
    },
}

/// One bar; `value` and the whisker in axis units.
pub struct Bar {
    pub value: f64,
    pub whisker: Option<(f64, f64)>,
    pub opacity: f64,
    /// Shown on hover: the exact figures.
    pub tip: String,
    /// Printed after the bar.
    pub text: String,
}

pub struct LegendItem {
    pub label: String,
    pub colour: &'static str,
    pub opacity: f64,
}

const WIDTH: f64 = 960.0;
const BAR_H: f64 = 14.0;

/// Where a bar chart's parts go, from its rows.
struct Layout {
    /// The label column's width: where the bars start.
    left: f64,
    top: f64,
    plot_w: f64,
    rows_h: f64,
    height: f64,
    /// The value at the right end of the axis.
    end: f64,
}

impl Layout {
    /// The x of a value, clamped to the plot.
    fn x(&self, v: f64) -> f64 {
        self.left + (v.max(0.0) / self.end).min(1.0) * self.plot_w
    }
}

impl BarChart {
    pub fn render(&self) -> String {
        let (layout, ticks) = self.layout();
        let (left, top, height) = (layout.left, layout.top, layout.height);
        let desc = format!(
            "Horizontal bar chart, {} bars; exact values on hover and in the table below.",
            self.rows
                .iter()
                .filter(|r| matches!(r, BarRow::Bars { .. }))
                .count()
        );
        let mut s = Svg::new(&self.id, WIDTH, height, &self.title, &desc);
        s.heading(&self.title, self.subtitle.as_deref());

        let plot_bottom = top + layout.rows_h;
        let grid: Vec<(f64, String)> = ticks
            .iter()
            .map(|t| (layout.x(*t), tick_label(*t)))
            .collect();
        s.x_grid(&grid, top, plot_bottom);
        s.line(left, top - 4.0, left, plot_bottom, "#888888", 1.0, "");
        s.x_label(left + layout.plot_w / 2.0, plot_bottom, &self.x_label);

        let mut y = top;
        for r in &self.rows {
            match r {
                BarRow::Section(title) => {
                    s.row_section(y, title);
                    y += SECTION_H;
                }
                BarRow::Bars {
                    label,
                    colour,
                    bars,
                } => {
                    let h = bars.len().max(1) as f64 * BAR_H + 8.0;
                    s.text_with_tip(
                        left - 8.0,
                        y + h / 2.0 + 4.0,
                        &fit(label, LABEL_MAX_CHARS),
                        label,
                        Anchor::End,
                    );
                    for (i, b) in bars.iter().enumerate() {
                        draw_bar(&mut s, &layout, y + 4.0 + i as f64 * BAR_H, colour, b);
                    }
                    y += h;
                }
            }
        }
        self.draw_legend(&mut s, left, height);
        s.finish()
    }

    /// The layout, and the axis ticks (the last is the axis end).
    fn layout(&self) -> (Layout, Vec<f64>) {
        let left = label_column(self.rows.iter().filter_map(|r| match r {
            BarRow::Bars { label, .. } => Some(label.as_str()),
            BarRow::Section(_) => None,
        }));
        let right = 120.0;
        let top = if self.subtitle.is_some() { 56.0 } else { 40.0 };
        let plot_w = WIDTH - left - right;
        let rows_h: f64 = self
            .rows
            .iter()
            .map(|r| match r {
                BarRow::Section(_) => SECTION_H,
                BarRow::Bars { bars, .. } => bars.len().max(1) as f64 * BAR_H + 8.0,
            })
            .sum();
        let legend_h = if self.legend.is_empty() { 0.0 } else { 24.0 };
        let height = top + rows_h + 44.0 + legend_h;

        let max = self
            .rows
            .iter()
            .flat_map(|r| match r {
                BarRow::Bars { bars, .. } => bars.iter().collect::<Vec<_>>(),
                BarRow::Section(_) => Vec::new(),
            })
            .map(|b| b.whisker.map_or(b.value, |(_, hi)| hi.max(b.value)))
            .filter(|v| v.is_finite())
            .fold(0.0f64, f64::max);
        let ticks = linear_ticks(0.0, if max > 0.0 { max } else { 1.0 }, 6);
        let end = *ticks.last().unwrap_or(&1.0);
        let layout = Layout {
            left,
            top,
            plot_w,
            rows_h,
            height,
            end,
        };
        (layout, ticks)
    }

    /// The legend along the bottom, items left to right.
    fn draw_legend(&self, s: &mut Svg, left: f64, height: f64) {
        if self.legend.is_empty() {
            return;
        }
        let ly = height - 14.0;
        let mut lx = left;
        for item in &self.legend {
            s.rect(lx, ly - 10.0, 14.0, 10.0, item.colour, item.opacity, None);
            s.text(
                lx + 20.0,
                ly,
                &item.label,
                Anchor::Start,
                11.0,
                "normal",
                "#333333",
            );
            lx += 34.0 + item.label.chars().count() as f64 * CHAR_W;
        }
    }
}

/// One bar from the axis at `by` (its top), with its whisker and its text.
fn draw_bar(s: &mut Svg, layout: &Layout, by: f64, colour: &str, b: &Bar) {
    let x = |v: f64| layout.x(v);
    let left = layout.left;
    let v = if b.value.is_finite() { b.value } else { 0.0 };
    s.rect(
        left,
        by + 1.0,
        x(v) - left,
        BAR_H - 2.0,
        colour,
        b.opacity,
        Some(&b.tip),
    );
    let mut end_x = x(v);
    if let Some((lo, hi)) = b.whisker {
        let cy = by + BAR_H / 2.0;
        s.line(x(lo), cy, x(hi), cy, "#222222", 1.2, "");
        s.line(x(lo), cy - 4.0, x(lo), cy + 4.0, "#222222", 1.2, "");
        s.line(x(hi), cy - 4.0, x(hi), cy + 4.0, "#222222", 1.2, "");
        end_x = end_x.max(x(hi));
    }
    s.text(
        end_x + 6.0,
        by + BAR_H - 3.0,
        &b.text,
        Anchor::Start,
        11.0,
        "normal",
        "#333333",
    );
}
