//! Tables: the numbers under every chart, in a form each output renders
//! its own way (HTML, Markdown). A cell keeps its exact value beside its
//! text, so tests and scripts can read numbers without parsing prose.

use serde::Serialize;

#[derive(Debug, Clone, Serialize)]
pub struct Table {
    pub id: String,
    pub columns: Vec<Column>,
    pub rows: Vec<Vec<Cell>>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Column {
    pub name: String,
    pub numeric: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct Cell {
    pub text: String,
    /// The exact number the text shows, if it is one.
    pub value: Option<f64>,
    /// A server colour shown beside the text.
    #[serde(skip)]
    pub swatch: Option<&'static str>,
}

impl Cell {
    pub fn text(s: impl Into<String>) -> Cell {
        Cell {
            text: s.into(),
            value: None,
            swatch: None,
        }
    }

    pub fn none() -> Cell {
        Cell::text("—")
    }

    pub fn num(v: f64, decimals: usize) -> Cell {
        if v.is_finite() {
            Cell {
                text: fixed(v, decimals),
                value: Some(v),
                swatch: None,
            }
        } else {
            Cell::none()
        }
    }

    pub fn opt(v: Option<f64>, decimals: usize) -> Cell {
        v.map_or_else(Cell::none, |v| Cell::num(v, decimals))
    }

    pub fn swatch(label: impl Into<String>, colour: &'static str) -> Cell {
        Cell {
            text: label.into(),
            value: None,
            swatch: Some(colour),
        }
    }
}

impl Table {
    pub fn new(id: impl Into<String>, columns: &[(&str, bool)]) -> Table {
        Table {
            id: id.into(),
            columns: columns
                .iter()
                .map(|(name, numeric)| Column {
                    name: name.to_string(),
                    numeric: *numeric,
                })
                .collect(),
            rows: Vec::new(),
        }
    }

    pub fn push(&mut self, row: Vec<Cell>) {
        debug_assert_eq!(row.len(), self.columns.len(), "table {}", self.id);
        self.rows.push(row);
    }
}

/// `v` with `decimals` decimals and thousands separators: 1234567.89 →
/// "1,234,567.9" (decimals = 1).
pub fn fixed(v: f64, decimals: usize) -> String {
    let s = format!("{:.*}", decimals, v.abs());
    let (int, frac) = match s.split_once('.') {
        Some((i, f)) => (i.to_string(), Some(f.to_string())),
        None => (s.clone(), None),
    };
    let mut out = String::new();
    if v < 0.0 && s.chars().any(|c| c.is_ascii_digit() && c != '0') {
        out.push('-');
    }
    for (i, ch) in int.chars().enumerate() {
        if i > 0 && (int.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(ch);
    }
    if let Some(f) = frac {
        out.push('.');
        out.push_str(&f);
    }
    out
}

/// A confidence as a percentage: 0.75 → "75 %", 0.96875 → "96.9 %".
pub fn percent(c: f64) -> String {
    let p = c * 100.0;
    if (p - p.round()).abs() < 1e-9 {
        format!("{p:.0} %")
    } else {
        format!("{} %", fixed(p, 1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_numbers() {
        assert_eq!(fixed(1_234_567.891, 1), "1,234,567.9");
        assert_eq!(fixed(12.0, 0), "12");
        assert_eq!(fixed(-1_500.25, 2), "-1,500.25");
        assert_eq!(fixed(-0.01, 1), "0.0");
        assert_eq!(percent(0.75), "75 %");
        assert_eq!(percent(0.96875), "96.9 %");
    }
}
