//! Reading the tables of an HTML report back, to compare them with the
//! database they were drawn from.

/// One table of an HTML report: per row, per cell, (text, data-value).
pub type Rows = Vec<Vec<(String, Option<f64>)>>;

/// The header names and body rows of `<table id="{id}">`.
pub fn html_table(html: &str, id: &str) -> (Vec<String>, Rows) {
    let start = html
        .find(&format!("<table id=\"{id}\""))
        .unwrap_or_else(|| panic!("table {id} not in the report"));
    let end = start + html[start..].find("</table>").expect("table end");
    let t = &html[start..end];
    let mut header = Vec::new();
    for th in t.split("<th>").skip(1) {
        header.push(unescape(&th[..th.find("</th>").unwrap()]));
    }
    let mut rows = Vec::new();
    let body = &t[t.find("<tbody>").expect("tbody")..];
    for tr in body.split("<tr>").skip(1) {
        let mut cells = Vec::new();
        for td in tr.split("<td").skip(1) {
            let open_end = td.find('>').unwrap();
            let attrs = &td[..open_end];
            let value = attrs.find("data-value=\"").map(|i| {
                let rest = &attrs[i + 12..];
                rest[..rest.find('"').unwrap()].parse::<f64>().unwrap()
            });
            let inner = &td[open_end + 1..td.find("</td>").unwrap()];
            // Drop the colour swatch span.
            let text = match inner.find("</span>") {
                Some(i) if inner.starts_with("<span class=\"sw\"") => &inner[i + 7..],
                _ => inner,
            };
            cells.push((unescape(text), value));
        }
        rows.push(cells);
    }
    (header, rows)
}

pub fn unescape(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

pub fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}
