//! A small hand-written SVG toolkit: an element writer that escapes every
//! string it is given, scales with nice ticks, and two chart kinds
//! ([`bar::BarChart`] and [`line::LineChart`]). Exact values travel in
//! `<title>` children, which browsers show on hover.
//!
//! The SVG is meant to be inlined in HTML: no `xmlns`, no external
//! reference of any kind.

pub mod bar;
pub mod line;
pub mod ratio;

use std::fmt::Write;

use super::escape;

/// Average advance of a 12 px sans-serif character, for layout estimates.
pub const CHAR_W: f64 = 6.8;

/// Text anchor.
#[derive(Clone, Copy)]
pub enum Anchor {
    Start,
    Middle,
    End,
}

impl Anchor {
    fn as_str(self) -> &'static str {
        match self {
            Anchor::Start => "start",
            Anchor::Middle => "middle",
            Anchor::End => "end",
        }
    }
}

/// An SVG document being written. Numbers are written with at most two
/// decimals; strings always go through [`escape::html`].
pub struct Svg {
    out: String,
}

/// Formats a coordinate compactly.
pub fn n(v: f64) -> String {
    if !v.is_finite() {
        return "0".into();
    }
    let s = format!("{v:.2}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".into()
    } else {
        s.to_string()
    }
}

impl Svg {
    pub fn new(id: &str, width: f64, height: f64, title: &str, desc: &str) -> Svg {
        let id = escape::html(id);
        let mut out = String::new();
        let _ = write!(
            out,
            "<svg id=\"{id}\" class=\"chart\" viewBox=\"0 0 {w} {h}\" width=\"{w}\" height=\"{h}\" role=\"img\" aria-labelledby=\"{id}-t {id}-d\" font-family=\"system-ui, sans-serif\" font-size=\"12\">\n<title id=\"{id}-t\">{t}</title>\n<desc id=\"{id}-d\">{d}</desc>\n<rect x=\"0\" y=\"0\" width=\"{w}\" height=\"{h}\" fill=\"#ffffff\"/>\n",
            w = n(width),
            h = n(height),
            t = escape::html(title),
            d = escape::html(desc),
        );
        Svg { out }
    }

    fn tip(&mut self, tip: Option<&str>) {
        if let Some(t) = tip {
            let _ = write!(self.out, "<title>{}</title>", escape::html_multiline(t));
        }
    }

    #[allow(clippy::too_many_arguments)]
    pub fn rect(
        &mut self,
        x: f64,
        y: f64,
        w: f64,
        h: f64,
        fill: &str,
        opacity: f64,
        tip: Option<&str>,
    ) {
        let _ = write!(
            self.out,
            "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"",
            n(x),
            n(y),
            n(w.max(0.0)),
            n(h.max(0.0)),
            escape::html(fill)
        );
        if opacity < 1.0 {
            let _ = write!(self.out, " fill-opacity=\"{}\"", n(opacity));
        }
        if tip.is_some() {
            self.out.push('>');
            self.tip(tip);
            self.out.push_str("</rect>\n");
        } else {
            self.out.push_str("/>\n");
        }
    }

    #[allow(clippy::too_many_arguments)]
    pub fn line(
        &mut self,
        x1: f64,
        y1: f64,
        x2: f64,
        y2: f64,
        stroke: &str,
        width: f64,
        dash: &str,
    ) {
        let _ = write!(
            self.out,
            "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\" stroke-width=\"{}\"",
            n(x1),
            n(y1),
            n(x2),
            n(y2),
            escape::html(stroke),
            n(width)
        );
        if !dash.is_empty() {
            let _ = write!(self.out, " stroke-dasharray=\"{}\"", escape::html(dash));
        }
        self.out.push_str("/>\n");
    }

    pub fn polyline(
        &mut self,
        pts: &[(f64, f64)],
        stroke: &str,
        width: f64,
        dash: &str,
        tip: Option<&str>,
    ) {
        let points: Vec<String> = pts
            .iter()
            .map(|(x, y)| format!("{},{}", n(*x), n(*y)))
            .collect();
        let _ = write!(
            self.out,
            "<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"{}\" stroke-linejoin=\"round\"",
            points.join(" "),
            escape::html(stroke),
            n(width)
        );
        if !dash.is_empty() {
            let _ = write!(self.out, " stroke-dasharray=\"{}\"", escape::html(dash));
        }
        if tip.is_some() {
            self.out.push('>');
            self.tip(tip);
            self.out.push_str("</polyline>\n");
        } else {
            self.out.push_str("/>\n");
        }
    }

    pub fn circle(&mut self, cx: f64, cy: f64, r: f64, fill: &str, tip: Option<&str>) {
        let _ = write!(
            self.out,
            "<circle cx=\"{}\" cy=\"{}\" r=\"{}\" fill=\"{}\"",
            n(cx),
            n(cy),
            n(r),
            escape::html(fill)
        );
        if tip.is_some() {
            self.out.push('>');
            self.tip(tip);
            self.out.push_str("</circle>\n");
        } else {
            self.out.push_str("/>\n");
        }
    }

    /// Text; `weight` and `size` as in CSS (size in px).
    #[allow(clippy::too_many_arguments)]
    pub fn text(
        &mut self,
        x: f64,
        y: f64,
        s: &str,
        anchor: Anchor,
        size: f64,
        weight: &str,
        fill: &str,
    ) {
        let _ = write!(
            self.out,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"{}\" font-size=\"{}\" fill=\"{}\"",
            n(x),
            n(y),
            anchor.as_str(),
            n(size),
            escape::html(fill)
        );
        if weight != "normal" {
            let _ = write!(self.out, " font-weight=\"{}\"", escape::html(weight));
        }
        let _ = writeln!(self.out, ">{}</text>", escape::html(s));
    }

    /// Text with its full version on hover (for labels cut to fit).
    pub fn text_with_tip(&mut self, x: f64, y: f64, s: &str, full: &str, anchor: Anchor) {
        let _ = writeln!(
            self.out,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"{}\" fill=\"#222222\"><title>{}</title>{}</text>",
            n(x),
            n(y),
            anchor.as_str(),
            escape::html(full),
            escape::html(s)
        );
    }

    /// Text turned 90° counter-clockwise around (x, y) (a y-axis label).
    pub fn text_vertical(&mut self, x: f64, y: f64, s: &str) {
        let _ = writeln!(
            self.out,
            "<text x=\"{x}\" y=\"{y}\" text-anchor=\"middle\" transform=\"rotate(-90 {x} {y})\" fill=\"#222222\">{}</text>",
            escape::html(s),
            x = n(x),
            y = n(y)
        );
    }

    /// The chart title and an optional subtitle at the top left.
    pub fn heading(&mut self, title: &str, subtitle: Option<&str>) {
        self.text(12.0, 22.0, title, Anchor::Start, 15.0, "bold", "#111111");
        if let Some(s) = subtitle {
            self.text(12.0, 40.0, s, Anchor::Start, 12.0, "normal", "#555555");
        }
    }

    /// Vertical grid lines from `top` to `bottom` at each tick's x, with
    /// its label under the plot (bar and ratio charts).
    pub fn x_grid(&mut self, ticks: &[(f64, String)], top: f64, bottom: f64) {
        for (tx, label) in ticks {
            self.line(*tx, top - 4.0, *tx, bottom, "#e3e3e3", 1.0, "");
            self.text(
                *tx,
                bottom + 16.0,
                label,
                Anchor::Middle,
                11.0,
                "normal",
                "#444444",
            );
        }
    }

    /// The x-axis label, centred under a plot ending at `bottom`.
    pub fn x_label(&mut self, centre: f64, bottom: f64, label: &str) {
        self.text(
            centre,
            bottom + 36.0,
            label,
            Anchor::Middle,
            12.0,
            "normal",
            "#222222",
        );
    }

    /// A bold heading line above the rows it names (bar and ratio charts).
    pub fn row_section(&mut self, y: f64, title: &str) {
        self.text(
            12.0,
            y + 16.0,
            &fit(title, 110),
            Anchor::Start,
            12.0,
            "bold",
            "#333333",
        );
    }

    pub fn finish(mut self) -> String {
        self.out.push_str("</svg>");
        self.out
    }
}

/// Cuts `s` to at most `max` characters, ending in `…` when cut.
/// Longest a row label is drawn before [`fit`] shortens it.
pub const LABEL_MAX_CHARS: usize = 44;
/// Section rows of the row charts (bars, ratios).
pub const SECTION_H: f64 = 24.0;

/// The left margin of a chart with one label per row: wide enough for the
/// longest label (as [`fit`] will draw it), within fixed bounds.
pub fn label_column<'a>(labels: impl Iterator<Item = &'a str>) -> f64 {
    let chars = labels
        .map(|l| l.chars().count().min(LABEL_MAX_CHARS))
        .max()
        .unwrap_or(10);
    (chars as f64 * CHAR_W + 24.0).clamp(120.0, 330.0)
}

pub fn fit(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(max.saturating_sub(1)).collect();
        t.push('…');
        t
    }
}

/// A "nice" step (1, 2 or 5 × 10^k) giving about `target` intervals over `span`.
pub fn nice_step(span: f64, target: usize) -> f64 {
    if span.is_nan() || span <= 0.0 || span.is_infinite() {
        return 1.0;
    }
    let raw = span / target.max(1) as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let f = raw / mag;
    let nice = if f <= 1.0 {
        1.0
    } else if f <= 2.0 {
        2.0
    } else if f <= 5.0 {
        5.0
    } else {
        10.0
    };
    nice * mag
}

/// Ticks from 0 (or `lo`) to at least `hi`, on nice steps; returns the ticks,
/// the last being the axis end.
pub fn linear_ticks(lo: f64, hi: f64, target: usize) -> Vec<f64> {
    let hi = if hi > lo { hi } else { lo + 1.0 };
    let step = nice_step(hi - lo, target);
    let start = (lo / step).floor() * step;
    let mut ticks = Vec::new();
    let mut i = 0;
    loop {
        let t = start + step * i as f64;
        // Rounded to the step's precision, so 0.30000000000000004 prints as 0.3.
        let k = (t / step).round();
        ticks.push(if step < 1.0 {
            k / (1.0 / step).round()
        } else {
            k * step
        });
        if t >= hi - step * 1e-9 || i > 50 {
            break;
        }
        i += 1;
    }
    ticks
}

/// Ticks of a log10 axis covering [lo, hi] (both > 0): 1, 2, 5 × 10^k.
pub fn log_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let lo = lo.max(1e-9);
    let hi = hi.max(lo * 1.0001);
    let mut k = lo.log10().floor() as i32;
    let top = hi.log10().ceil() as i32;
    let mut ticks = Vec::new();
    while k <= top && ticks.len() < 60 {
        for m in [1.0, 2.0, 5.0] {
            let t = m * 10f64.powi(k);
            if t >= lo * 0.999 && t <= hi * 1.001 {
                ticks.push(t);
            }
        }
        k += 1;
    }
    ticks
}

/// A number for an axis tick: 950, 1.5k, 20k, 1.2M; small numbers keep up to
/// three significant digits.
pub fn tick_label(v: f64) -> String {
    let a = v.abs();
    let trim = |s: String| -> String {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s
        }
    };
    if a >= 1e6 {
        format!("{}M", trim(format!("{:.2}", v / 1e6)))
    } else if a >= 1e4 {
        format!("{}k", trim(format!("{:.1}", v / 1e3)))
    } else if a >= 100.0 || a == 0.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        trim(format!("{v:.1}"))
    } else if a >= 1.0 {
        trim(format!("{v:.2}"))
    } else {
        trim(format!("{v:.3}"))
    }
}

/// The unit a latency axis is drawn in, chosen by the largest value (µs).
pub fn latency_unit(max_us: f64) -> (f64, &'static str) {
    if max_us >= 2_000_000.0 {
        (1_000_000.0, "s")
    } else if max_us >= 2_000.0 {
        (1_000.0, "ms")
    } else {
        (1.0, "µs")
    }
}

/// The unit a byte axis is drawn in.
pub fn byte_unit(max: f64) -> (f64, &'static str) {
    if max >= 2.0 * 1024.0 * 1024.0 * 1024.0 {
        (1024.0 * 1024.0 * 1024.0, "GiB")
    } else if max >= 2.0 * 1024.0 * 1024.0 {
        (1024.0 * 1024.0, "MiB")
    } else if max >= 2.0 * 1024.0 {
        (1024.0, "KiB")
    } else {
        (1.0, "B")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_nice() {
        assert_eq!(
            linear_ticks(0.0, 97.0, 5),
            vec![0.0, 20.0, 40.0, 60.0, 80.0, 100.0]
        );
        assert_eq!(
            linear_ticks(0.0, 0.9, 5),
            vec![0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
        );
        assert_eq!(log_ticks(3.0, 120.0), vec![5.0, 10.0, 20.0, 50.0, 100.0]);
        assert_eq!(tick_label(150_000.0), "150k");
        assert_eq!(tick_label(1_500.0), "1500");
        assert_eq!(tick_label(2_500_000.0), "2.5M");
        assert_eq!(tick_label(0.25), "0.25");
        assert_eq!(n(1.0 / 3.0), "0.33");
        assert_eq!(n(-0.001), "0");
    }

    #[test]
    fn strings_are_escaped_in_every_element() {
        let mut s = Svg::new("x\"y", 10.0, 10.0, "<t>", "d&");
        s.text(0.0, 0.0, "<script>", Anchor::Start, 12.0, "normal", "#000");
        s.rect(0.0, 0.0, 1.0, 1.0, "red\"", 1.0, Some("a\x07<b>"));
        let out = s.finish();
        assert!(!out.contains("<script>"));
        assert!(!out.contains("<t>"));
        assert!(out.contains("&lt;script&gt;"));
        assert!(out.contains("a\\x07&lt;b&gt;"));
        assert!(out.contains("id=\"x&quot;y\""));
    }
}
