//! A plain aligned text table (no colour, no box drawing) for `check` and
//! `servers`: readable in a terminal, a CI log and a pasted issue alike.

/// Rows of cells under a header row; each cell is shown with the one
/// escaping rule ([`fairbench_sys::text::visible`]) before it is measured,
/// so columns line up whatever a cell carries.
#[derive(Debug, Default)]
pub struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
    /// Columns aligned right (numbers).
    right: Vec<bool>,
}

impl Table {
    pub fn new(header: &[&str]) -> Self {
        Table {
            header: header.iter().map(|s| s.to_string()).collect(),
            rows: Vec::new(),
            right: vec![false; header.len()],
        }
    }

    /// Aligns the named columns to the right.
    pub fn right_align(mut self, cols: &[usize]) -> Self {
        for &c in cols {
            if c < self.right.len() {
                self.right[c] = true;
            }
        }
        self
    }

    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(
            cells
                .iter()
                .map(|c| fairbench_sys::text::visible(c))
                .collect(),
        );
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    pub fn render(&self) -> String {
        let n = self.header.len();
        let mut width = vec![0usize; n];
        for r in std::iter::once(&self.header).chain(self.rows.iter()) {
            for (i, c) in r.iter().enumerate().take(n) {
                width[i] = width[i].max(c.chars().count());
            }
        }
        let mut out = String::new();
        for r in std::iter::once(&self.header).chain(self.rows.iter()) {
            let mut line = String::new();
            for (i, w) in width.iter().enumerate() {
                let cell = r.get(i).map(String::as_str).unwrap_or("");
                let pad = w - cell.chars().count();
                if i > 0 {
                    line.push_str("  ");
                }
                if self.right[i] {
                    line.push_str(&" ".repeat(pad));
                    line.push_str(cell);
                } else {
                    line.push_str(cell);
                    if i + 1 < n {
                        line.push_str(&" ".repeat(pad));
                    }
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligns() {
        let mut t = Table::new(&["A", "NUM"]).right_align(&[1]);
        t.row(vec!["long-name".into(), "5".into()]);
        t.row(vec!["x".into(), "123".into()]);
        assert_eq!(
            t.render(),
            "A          NUM\nlong-name    5\nx          123\n"
        );
    }
}
