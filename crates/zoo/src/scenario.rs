//! `scenarios/<name>.toml`: the contract a response must meet. Documented in
//! docs/scenarios.md.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use sha2::{Digest, Sha256};

use crate::error::{parse_toml, DefinitionError};
use crate::token::is_token;

/// The header names every request fairbench sends for a scenario carries,
/// from `check` and from the load engine alike: `Host`, and for most
/// scenarios nothing else; a scenario's own `headers` follow it. Part of
/// the contract because servers answer the same path differently to other
/// requests: Conduit gzips a text body for `Accept-Encoding: gzip`, some
/// servers add a header for `Connection: close`. A response is only
/// comparable with Go's if both were asked the same thing.
pub const REQUEST_HEADERS: [&str; 1] = ["Host"];

/// The content codings a scenario may expect (`expect.content_encoding`):
/// the ones the check can decode.
pub const CONTENT_ENCODINGS: [&str; 1] = ["gzip"];

/// A body file larger than this is a mistake, not a benchmark scenario; the
/// raw fetch reads at most 8 MiB anyway.
const MAX_BODY_FILE: u64 = 8 * 1024 * 1024;

#[derive(Debug, Clone)]
pub struct Scenario {
    pub name: String,
    pub description: Option<String>,
    pub method: String,
    pub path: String,
    pub file: PathBuf,
    /// Request headers beyond [`REQUEST_HEADERS`], in order, as `(name,
    /// value)`: sent by `check` and by the load engine alike.
    pub headers: Vec<(String, String)>,
    pub expect: Expect,
    /// `path` split at its templates (`{{uniform LO HI}}`).
    path_pieces: Vec<PathPiece>,
}

/// A piece of a scenario's path: text, or a value drawn per request.
#[derive(Debug, Clone, PartialEq, Eq)]
enum PathPiece {
    Text(String),
    Uniform(u64, u64),
}

/// What a scenario's answers are graded against in the database, beyond
/// their shape (`expect.database`; crate::database::content).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DbContent {
    /// `/db?id=N`: the row of that id.
    Row,
    /// `/queries?queries=N`: N rows (clamped to 1..=500), each the table's.
    Rows,
    /// `/fortunes`: every row plus the added one, sorted, HTML-escaped.
    Fortunes,
    /// `/updates?queries=N`: N rows changed and written back.
    Updates,
}

impl DbContent {
    pub fn parse(s: &str) -> Option<DbContent> {
        Some(match s {
            "row" => DbContent::Row,
            "rows" => DbContent::Rows,
            "fortunes" => DbContent::Fortunes,
            "updates" => DbContent::Updates,
            _ => return None,
        })
    }
}

/// The templates a scenario's path may hold: values the load engine draws
/// per prepared request (docs/targets.md) and the check picks itself.
pub const PATH_TEMPLATES: &str = "{{uniform LO HI}}";

fn parse_path(path: &str) -> Result<Vec<PathPiece>, String> {
    let mut out = Vec::new();
    let mut rest = path;
    while let Some(open) = rest.find("{{") {
        if open > 0 {
            out.push(PathPiece::Text(rest[..open].to_string()));
        }
        let after = &rest[open + 2..];
        let close = after
            .find("}}")
            .ok_or_else(|| format!("{{{{ without a closing }}}} in \"{path}\""))?;
        let words: Vec<&str> = after[..close].split_whitespace().collect();
        let bad = || {
            format!(
                "unknown template {{{{{}}}}} in \"{path}\": a scenario's path may hold {PATH_TEMPLATES} (LO <= HI, whole numbers)",
                &after[..close]
            )
        };
        match words.as_slice() {
            ["uniform", lo, hi] => {
                let lo: u64 = lo.parse().map_err(|_| bad())?;
                let hi: u64 = hi.parse().map_err(|_| bad())?;
                if lo > hi {
                    return Err(bad());
                }
                out.push(PathPiece::Uniform(lo, hi));
            }
            _ => return Err(bad()),
        }
        rest = &after[close + 2..];
    }
    if !rest.is_empty() {
        out.push(PathPiece::Text(rest.to_string()));
    }
    Ok(out)
}

#[derive(Debug, Clone)]
pub struct Expect {
    pub status: u16,
    pub content_type: Option<String>,
    pub required_headers: Vec<String>,
    pub forbid_chunked: bool,
    pub body: BodyExpect,
    /// Two responses this far apart must have different bodies.
    pub body_changes_after: Option<Duration>,
    /// Headers a `default` response may carry without a warning.
    pub allowed_headers: Vec<String>,
    /// The content graded against the database, for the scenarios that
    /// read or write it.
    pub database: Option<DbContent>,
    /// The `Content-Encoding` the answer must carry (one of
    /// [`CONTENT_ENCODINGS`]); the body is graded after decoding it.
    pub content_encoding: Option<String>,
}

#[derive(Debug, Clone)]
pub enum BodyExpect {
    Exact(Vec<u8>),
    Regex {
        source: String,
        re: regex::bytes::Regex,
    },
    /// A file under the scenarios folder, compared by length and SHA-256.
    File {
        path: PathBuf,
        len: u64,
        sha256: [u8; 32],
    },
}

impl BodyExpect {
    /// The body length every correct response has, when it is fixed.
    pub fn fixed_len(&self) -> Option<u64> {
        match self {
            BodyExpect::Exact(b) => Some(b.len() as u64),
            BodyExpect::File { len, .. } => Some(*len),
            BodyExpect::Regex { .. } => None,
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScenario {
    name: String,
    #[serde(default)]
    description: Option<String>,
    method: String,
    path: String,
    #[serde(default)]
    headers: Vec<String>,
    expect: RawExpect,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawExpect {
    status: u16,
    #[serde(default)]
    content_type: Option<String>,
    #[serde(default)]
    required_headers: Vec<String>,
    #[serde(default)]
    forbid_chunked: bool,
    #[serde(default)]
    body: Option<String>,
    #[serde(default)]
    body_regex: Option<String>,
    #[serde(default)]
    body_file: Option<String>,
    #[serde(default)]
    body_changes_after_s: Option<f64>,
    #[serde(default)]
    allowed_headers: Vec<String>,
    #[serde(default)]
    database: Option<String>,
    #[serde(default)]
    content_encoding: Option<String>,
}

impl Scenario {
    /// Loads and validates one scenario file; `body_file` is resolved
    /// relative to the file's folder.
    pub fn load(file: &Path, shown: &Path) -> Result<Scenario, Vec<DefinitionError>> {
        let text = std::fs::read_to_string(file)
            .map_err(|e| vec![DefinitionError::file(shown, format!("cannot read: {e}"))])?;
        let raw: RawScenario = parse_toml(&text, shown).map_err(|e| vec![e])?;
        let mut errs = Errors {
            shown,
            list: Vec::new(),
        };
        let path_pieces = request(&raw, file, &mut errs);
        let headers = request_headers(&raw.headers, &mut errs);
        content_encoding(raw.expect.content_encoding.as_deref(), &mut errs);
        let e = &raw.expect;
        let database = database(e.database.as_deref(), &mut errs);
        status_and_headers(e, &mut errs);
        let changes = body_changes_after(e.body_changes_after_s, &mut errs);
        let body = body(e, file, &mut errs);

        match body {
            Some(body) if errs.list.is_empty() => Ok(Scenario {
                name: raw.name,
                description: raw.description,
                method: raw.method,
                path: raw.path,
                file: file.to_path_buf(),
                headers,
                expect: Expect {
                    status: raw.expect.status,
                    content_type: raw.expect.content_type,
                    required_headers: raw.expect.required_headers,
                    forbid_chunked: raw.expect.forbid_chunked,
                    body,
                    body_changes_after: changes,
                    allowed_headers: raw.expect.allowed_headers,
                    database,
                    content_encoding: raw.expect.content_encoding,
                },
                path_pieces,
            }),
            _ => Err(errs.list),
        }
    }
}

/// The mistakes found in one scenario file, in the order found.
struct Errors<'a> {
    shown: &'a Path,
    list: Vec<DefinitionError>,
}

impl Errors<'_> {
    fn err(&mut self, field: &str, msg: String) {
        self.list
            .push(DefinitionError::field(self.shown, field, msg));
    }
}

/// The request: `name` (the file's), `method` and `path`; the path's
/// pieces (none when it does not parse).
fn request(raw: &RawScenario, file: &Path, errs: &mut Errors) -> Vec<PathPiece> {
    let stem = file
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    if raw.name != stem {
        errs.err(
            "name",
            format!("expected the file name \"{stem}\", found \"{}\"", raw.name),
        );
    }
    if !is_token(&raw.method) || raw.method.bytes().any(|b| b.is_ascii_lowercase()) {
        errs.err(
            "method",
            format!(
                "expected an HTTP method such as GET, found \"{}\"",
                raw.method
            ),
        );
    }
    let (path_pieces, parsed) = match parse_path(&raw.path) {
        Ok(p) => (p, true),
        Err(m) => {
            errs.err("path", m);
            (Vec::new(), false)
        }
    };
    // Templates hold spaces; the path as sent must not.
    let sent: String = path_pieces
        .iter()
        .map(|p| match p {
            PathPiece::Text(t) => t.clone(),
            PathPiece::Uniform(lo, _) => lo.to_string(),
        })
        .collect();
    if parsed && !sent.starts_with('/') || sent.bytes().any(|b| b <= b' ' || b == 0x7f) {
        errs.err(
            "path",
            format!(
                "expected an absolute request path without spaces, such as \"/\", found \"{}\"",
                raw.path
            ),
        );
    }
    path_pieces
}

/// `headers`: `Name: value` each, a header name once, never `Host` (every
/// request carries that one, fairbench's own).
fn request_headers(given: &[String], errs: &mut Errors) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for (i, h) in given.iter().enumerate() {
        let field = format!("headers[{i}]");
        let Some((name, value)) = h.split_once(':') else {
            errs.err(
                &field,
                format!(
                    "expected \"Name: value\", such as \"Accept-Encoding: gzip\", found \"{h}\""
                ),
            );
            continue;
        };
        let (name, value) = (name.trim(), value.trim());
        let bad_value = value.is_empty() || value.bytes().any(|b| b < b' ' || b == 0x7f);
        if !is_token(name) || bad_value {
            errs.err(
                &field,
                format!("expected \"Name: value\" with a header name and a visible value, found \"{h}\""),
            );
        } else if REQUEST_HEADERS.iter().any(|d| d.eq_ignore_ascii_case(name)) {
            errs.err(
                &field,
                format!("{name} is sent by fairbench itself; expected a header beyond {REQUEST_HEADERS:?}"),
            );
        } else if out.iter().any(|(n, _)| n.eq_ignore_ascii_case(name)) {
            errs.err(&field, format!("{name} is listed twice"));
        } else {
            out.push((name.to_string(), value.to_string()));
        }
    }
    out
}

/// `expect.content_encoding`, when given: a coding the check decodes.
fn content_encoding(given: Option<&str>, errs: &mut Errors) {
    if let Some(c) = given.filter(|c| !CONTENT_ENCODINGS.contains(c)) {
        errs.err(
            "expect.content_encoding",
            format!("expected one of {CONTENT_ENCODINGS:?}, found \"{c}\""),
        );
    }
}

/// `expect.database`, when given: the content its answers are graded on.
fn database(given: Option<&str>, errs: &mut Errors) -> Option<DbContent> {
    let d = given?;
    let kind = DbContent::parse(d);
    if kind.is_none() {
        errs.err(
            "expect.database",
            format!("expected \"row\", \"rows\", \"fortunes\" or \"updates\", found \"{d}\""),
        );
    }
    kind
}

/// `expect.status` and the header names `expect` lists.
fn status_and_headers(e: &RawExpect, errs: &mut Errors) {
    if !(100..=599).contains(&e.status) {
        errs.err(
            "expect.status",
            format!("expected an HTTP status code 100-599, found {}", e.status),
        );
    }
    for (i, h) in e.required_headers.iter().enumerate() {
        if !is_token(h) {
            errs.err(
                &format!("expect.required_headers[{i}]"),
                format!("expected an HTTP header name, found \"{h}\""),
            );
        }
    }
    for (i, h) in e.allowed_headers.iter().enumerate() {
        if !is_token(h) {
            errs.err(
                &format!("expect.allowed_headers[{i}]"),
                format!("expected an HTTP header name, found \"{h}\""),
            );
        }
    }
}

/// `expect.body_changes_after_s`, when given: up to a minute.
fn body_changes_after(seconds: Option<f64>, errs: &mut Errors) -> Option<Duration> {
    match seconds {
        None => None,
        Some(s) if s.is_finite() && s > 0.0 && s <= 60.0 => Some(Duration::from_secs_f64(s)),
        Some(s) => {
            errs.err(
                "expect.body_changes_after_s",
                format!("expected seconds between 0 and 60, found {s}"),
            );
            None
        }
    }
}

/// The body expected: exactly one of `body`, `body_regex` or `body_file`;
/// none when that is not so or the one given is bad.
fn body(e: &RawExpect, file: &Path, errs: &mut Errors) -> Option<BodyExpect> {
    let given = [
        e.body.is_some(),
        e.body_regex.is_some(),
        e.body_file.is_some(),
    ];
    if given.iter().filter(|&&g| g).count() != 1 {
        errs.err(
            "expect",
            "expected exactly one of `body`, `body_regex` or `body_file`".to_string(),
        );
        return None;
    }
    if let Some(b) = &e.body {
        Some(BodyExpect::Exact(b.as_bytes().to_vec()))
    } else if let Some(src) = &e.body_regex {
        match regex::bytes::Regex::new(src) {
            Ok(re) => Some(BodyExpect::Regex {
                source: src.clone(),
                re,
            }),
            Err(x) => {
                errs.err(
                    "expect.body_regex",
                    format!(
                        "expected a regular expression: {}",
                        crate::error::regex_message(&x)
                    ),
                );
                None
            }
        }
    } else {
        let rel = e.body_file.as_deref().unwrap_or_default();
        let base = file.parent().unwrap_or(Path::new("."));
        match hash_file(&base.join(rel)) {
            Ok(b) => Some(b),
            Err(x) => {
                errs.err(
                    "expect.body_file",
                    format!("expected a readable file relative to the scenario's folder: {x}"),
                );
                None
            }
        }
    }
}

impl Scenario {
    /// Whether its servers need the database (fairbench starts one).
    pub fn needs_database(&self) -> bool {
        self.expect.database.is_some()
    }

    /// Whether its path draws values per request.
    pub fn is_templated(&self) -> bool {
        self.path_pieces
            .iter()
            .any(|p| matches!(p, PathPiece::Uniform(..)))
    }

    /// The ranges of its path's `{{uniform LO HI}}`s, in order.
    pub fn path_ranges(&self) -> Vec<(u64, u64)> {
        self.path_pieces
            .iter()
            .filter_map(|p| match p {
                PathPiece::Uniform(lo, hi) => Some((*lo, *hi)),
                PathPiece::Text(_) => None,
            })
            .collect()
    }

    /// Its path with each template replaced by `pick(LO, HI)`.
    pub fn render_path(&self, mut pick: impl FnMut(u64, u64) -> u64) -> String {
        self.path_pieces
            .iter()
            .map(|p| match p {
                PathPiece::Text(t) => t.clone(),
                PathPiece::Uniform(lo, hi) => pick(*lo, *hi).clamp(*lo, *hi).to_string(),
            })
            .collect()
    }

    /// The one path the check grades the shape of (and `run` probes after
    /// the load): every template at the middle of its range, the same for
    /// every server.
    pub fn check_path(&self) -> String {
        self.render_path(|lo, hi| lo + (hi - lo) / 2)
    }
}

fn hash_file(path: &Path) -> Result<BodyExpect, String> {
    let meta = std::fs::metadata(path).map_err(|e| format!("{}: {e}", path.display()))?;
    if !meta.is_file() {
        return Err(format!("{} is not a file", path.display()));
    }
    if meta.len() > MAX_BODY_FILE {
        return Err(format!(
            "{} is {} bytes; at most {MAX_BODY_FILE}",
            path.display(),
            meta.len()
        ));
    }
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(BodyExpect::File {
        path: path.to_path_buf(),
        len: bytes.len() as u64,
        sha256: Sha256::digest(&bytes).into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(name: &str, text: &str) -> Result<Scenario, Vec<DefinitionError>> {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("body.txt"), "abc").unwrap();
        let f = dir.path().join(format!("{name}.toml"));
        std::fs::write(&f, text).unwrap();
        Scenario::load(&f, Path::new("scenarios/x.toml"))
    }

    #[test]
    fn body_file_is_hashed() {
        let s = load(
            "f",
            "name = \"f\"\nmethod = \"GET\"\npath = \"/\"\n[expect]\nstatus = 200\nbody_file = \"body.txt\"\n",
        )
        .unwrap();
        assert_eq!(s.expect.body.fixed_len(), Some(3));
    }

    #[test]
    fn path_templates() {
        let s = load(
            "d",
            "name = \"d\"\nmethod = \"GET\"\npath = \"/db?id={{uniform 1 10000}}\"\n[expect]\nstatus = 200\nbody = \"a\"\ndatabase = \"row\"\n",
        )
        .unwrap();
        assert!(s.is_templated() && s.needs_database());
        assert_eq!(s.path_ranges(), vec![(1, 10000)]);
        assert_eq!(s.check_path(), "/db?id=5000");
        assert_eq!(s.render_path(|_, _| 99_999), "/db?id=10000");
        let e = load(
            "d",
            "name = \"d\"\nmethod = \"GET\"\npath = \"/db?id={{zipf 1 2 3}}\"\n[expect]\nstatus = 200\nbody = \"a\"\ndatabase = \"rowz\"\n",
        )
        .unwrap_err();
        let fields: Vec<_> = e.iter().filter_map(|e| e.field.clone()).collect();
        assert_eq!(fields, vec!["path", "expect.database"]);
        assert!(e[0].to_string().contains("{{uniform LO HI}}"), "{}", e[0]);
    }

    #[test]
    fn request_headers_and_content_encoding() {
        let s = load(
            "g",
            "name = \"g\"\nmethod = \"GET\"\npath = \"/gzip\"\nheaders = [\"Accept-Encoding: gzip\"]\n[expect]\nstatus = 200\nbody = \"a\"\ncontent_encoding = \"gzip\"\n",
        )
        .unwrap();
        assert_eq!(s.headers, vec![("Accept-Encoding".into(), "gzip".into())]);
        assert_eq!(s.expect.content_encoding.as_deref(), Some("gzip"));
        let e = load(
            "g",
            "name = \"g\"\nmethod = \"GET\"\npath = \"/\"\nheaders = [\"nocolon\", \"host: x\", \"A: 1\", \"a: 2\", \"B:\"]\n[expect]\nstatus = 200\nbody = \"a\"\ncontent_encoding = \"br\"\n",
        )
        .unwrap_err();
        let fields: Vec<_> = e.iter().filter_map(|e| e.field.clone()).collect();
        assert_eq!(
            fields,
            vec![
                "headers[0]",
                "headers[1]",
                "headers[3]",
                "headers[4]",
                "expect.content_encoding"
            ]
        );
    }

    #[test]
    fn exactly_one_body() {
        let e = load(
            "s",
            "name = \"s\"\nmethod = \"GET\"\npath = \"/\"\n[expect]\nstatus = 200\nbody = \"a\"\nbody_regex = \"a\"\n",
        )
        .unwrap_err();
        assert_eq!(e[0].field.as_deref(), Some("expect"));
    }

    #[test]
    fn bad_values_named() {
        let e = load(
            "s",
            "name = \"t\"\nmethod = \"get\"\npath = \"x\"\n[expect]\nstatus = 9\nbody_regex = \"(\"\n",
        )
        .unwrap_err();
        let fields: Vec<_> = e.iter().filter_map(|e| e.field.clone()).collect();
        assert_eq!(
            fields,
            vec![
                "name",
                "method",
                "path",
                "expect.status",
                "expect.body_regex"
            ]
        );
    }
}
