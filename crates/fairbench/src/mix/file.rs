//! The targets file (`load --targets FILE`): TOML, one `[[target]]` table
//! per request kind, in the spirit of k6's request lists and vegeta's
//! targets. Every mistake names the file, the line and the field.
//!
//! ```toml
//! [[target]]
//! name = "item"                       # the results' group; default "METHOD path"
//! method = "GET"                      # default GET
//! path = "/items/{{zipf 1.1 1 10000}}" # or url = "http://host:port/…" (the run's origin)
//! weight = 8                          # how often, relative to the others; default 1
//! headers = ["Accept: application/json", "X-Request-Id: {{seq}}"]
//! body = '{"id": {{uniform 1 100}}}'   # or body_file = "new.json" (beside this file)
//! ```

use std::path::Path;

use serde::Deserialize;
use toml::Spanned;

use super::template::Template;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Doc {
    #[serde(default)]
    target: Vec<Spanned<Entry>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    name: Option<Spanned<String>>,
    method: Option<Spanned<String>>,
    path: Option<Spanned<String>>,
    url: Option<Spanned<String>>,
    #[serde(default)]
    headers: Vec<Spanned<String>>,
    body: Option<Spanned<String>>,
    body_file: Option<Spanned<String>>,
    weight: Option<Spanned<i64>>,
}

/// A request's body: text that may hold templates, or bytes as they are.
pub enum Body {
    Template(Template),
    Bytes(Vec<u8>),
}

/// One `[[target]]`, its templates parsed.
pub struct TargetDef {
    pub name: String,
    pub method: String,
    pub path: Template,
    pub headers: Vec<(String, Template)>,
    pub body: Body,
    pub weight: u64,
    /// Where it is, for messages: "FILE:LINE".
    pub at: String,
}

impl TargetDef {
    pub fn is_constant(&self) -> bool {
        self.path.is_constant()
            && self.headers.iter().all(|(_, v)| v.is_constant())
            && match &self.body {
                Body::Template(t) => t.is_constant(),
                Body::Bytes(_) => true,
            }
    }
}

/// The most a weight may be.
const MAX_WEIGHT: i64 = 1_000_000;

/// Reads the targets of `file`. `origin` is the run's URL: an entry's
/// `url` must name the same scheme, host and port (one address is
/// measured). Errors: "FILE:LINE: FIELD: what is wrong".
pub fn read(file: &Path, origin: &url::Url) -> Result<Vec<TargetDef>, String> {
    let text = std::fs::read_to_string(file)
        .map_err(|e| format!("{}: cannot read: {e}", file.display()))?;
    let source = Source {
        file,
        text: &text,
        dir: file.parent().unwrap_or(Path::new(".")),
    };
    let doc: Doc = toml::from_str(&text).map_err(|e| {
        let at = e.span().map_or(0, |s| s.start);
        format!("{}: {}", source.place(at), e.message())
    })?;
    if doc.target.is_empty() {
        return Err(format!(
            "{}: no [[target]] table (each needs at least a path or a url)",
            file.display()
        ));
    }
    doc.target
        .into_iter()
        .map(|entry| source.target(entry, origin))
        .collect()
}

/// The targets file being read: where its entries are, for messages, and
/// the folder its templates' and bodies' files are beside.
struct Source<'a> {
    file: &'a Path,
    text: &'a str,
    dir: &'a Path,
}

impl Source<'_> {
    /// "FILE:LINE" of the byte offset `at`.
    fn place(&self, at: usize) -> String {
        let line = self.text[..at.min(self.text.len())].matches('\n').count() + 1;
        format!("{}:{}", self.file.display(), line)
    }

    /// "FILE:LINE: FIELD: why", at the value `s`.
    fn fail(&self, s: &Spanned<String>, field: &str, why: String) -> String {
        format!("{}: {field}: {why}", self.place(s.span().start))
    }

    /// One `[[target]]`, every field checked in the order written here.
    fn target(&self, entry: Spanned<Entry>, origin: &url::Url) -> Result<TargetDef, String> {
        let at = self.place(entry.span().start);
        let e = entry.into_inner();
        let method = self.method(&e.method)?;
        let path_src = self.path_source(&e, &at, origin)?;
        let path = Template::parse(path_src.get_ref(), self.dir)
            .map_err(|w| self.fail(&path_src, "path", w))?;
        let mut headers = Vec::new();
        for h in &e.headers {
            headers.push(self.header(h)?);
        }
        let body = self.body(&e)?;
        let weight = self.weight(&e.weight)?;
        let name = match &e.name {
            Some(n) if n.get_ref().trim().is_empty() => {
                return Err(self.fail(n, "name", "must not be empty".into()));
            }
            Some(n) => n.get_ref().trim().to_string(),
            None => format!("{method} {}", path_src.get_ref()),
        };
        Ok(TargetDef {
            name,
            method,
            path,
            headers,
            body,
            weight,
            at,
        })
    }

    /// `method`, upper-cased; GET when not given.
    fn method(&self, method: &Option<Spanned<String>>) -> Result<String, String> {
        let Some(m) = method else {
            return Ok("GET".to_string());
        };
        let v = m.get_ref().trim().to_ascii_uppercase();
        if !is_token(&v) {
            return Err(self.fail(
                m,
                "method",
                format!("{:?} is not an HTTP method", m.get_ref()),
            ));
        }
        Ok(v)
    }

    /// The path template's text, from `path` or from `url` (one of them),
    /// where it is in the file.
    fn path_source(
        &self,
        e: &Entry,
        at: &str,
        origin: &url::Url,
    ) -> Result<Spanned<String>, String> {
        match (&e.path, &e.url) {
            (Some(_), Some(u)) => Err(self.fail(u, "url", "give a path or a url, not both".into())),
            (None, None) => Err(format!(
                "{at}: [[target]]: needs a path (e.g. \"/items/1\") or a url"
            )),
            (Some(p), None) => {
                if !p.get_ref().starts_with('/') {
                    return Err(self.fail(
                        p,
                        "path",
                        format!("{:?} must start with /", p.get_ref()),
                    ));
                }
                Ok(p.clone())
            }
            (None, Some(u)) => Ok(Spanned::new(
                u.span(),
                same_origin(u.get_ref(), origin).map_err(|w| self.fail(u, "url", w))?,
            )),
        }
    }

    /// One of `headers`: "Name: value", the value a template.
    fn header(&self, h: &Spanned<String>) -> Result<(String, Template), String> {
        let (k, v) = h.get_ref().split_once(':').ok_or_else(|| {
            self.fail(
                h,
                "headers",
                format!("{:?} is not \"Name: value\"", h.get_ref()),
            )
        })?;
        let k = k.trim();
        if !is_token(k) {
            return Err(self.fail(h, "headers", format!("{k:?} is not a header name")));
        }
        if v.contains(['\r', '\n']) {
            return Err(self.fail(h, "headers", "a value cannot hold CR or LF".into()));
        }
        let t = Template::parse(v.trim(), self.dir).map_err(|w| self.fail(h, "headers", w))?;
        Ok((k.to_string(), t))
    }

    /// `body` or `body_file` (a template if it holds one), or no body.
    fn body(&self, e: &Entry) -> Result<Body, String> {
        Ok(match (&e.body, &e.body_file) {
            (Some(_), Some(f)) => {
                return Err(self.fail(f, "body_file", "give body or body_file, not both".into()));
            }
            (Some(b), None) => Body::Template(
                Template::parse(b.get_ref(), self.dir).map_err(|w| self.fail(b, "body", w))?,
            ),
            (None, Some(f)) => {
                let p = self.dir.join(f.get_ref());
                let bytes = std::fs::read(&p).map_err(|err| {
                    self.fail(
                        f,
                        "body_file",
                        format!("cannot read {}: {err}", p.display()),
                    )
                })?;
                match String::from_utf8(bytes) {
                    Ok(s) if s.contains("{{") => Body::Template(
                        Template::parse(&s, self.dir).map_err(|w| self.fail(f, "body_file", w))?,
                    ),
                    Ok(s) => Body::Bytes(s.into_bytes()),
                    Err(b) => Body::Bytes(b.into_bytes()),
                }
            }
            (None, None) => Body::Bytes(Vec::new()),
        })
    }

    /// `weight`: 1 to [`MAX_WEIGHT`], 1 when not given.
    fn weight(&self, weight: &Option<Spanned<i64>>) -> Result<u64, String> {
        match weight {
            Some(w) if (1..=MAX_WEIGHT).contains(w.get_ref()) => Ok(*w.get_ref() as u64),
            Some(w) => Err(format!(
                "{}: weight: must be a whole number from 1 to {MAX_WEIGHT}, got {}",
                self.place(w.span().start),
                w.get_ref()
            )),
            None => Ok(1),
        }
    }
}

/// Whether `v` is an HTTP token (a method or a header name): not empty,
/// and only the characters RFC 9110 allows.
fn is_token(v: &str) -> bool {
    !v.is_empty()
        && v.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// The path and query of `raw`, which must have `origin`'s scheme, host
/// and port. Templates are taken out before parsing (a URL parser would
/// escape their braces) and put back after.
fn same_origin(raw: &str, origin: &url::Url) -> Result<String, String> {
    let (scheme, rest) = raw
        .split_once("://")
        .ok_or_else(|| format!("{raw:?} is not an http:// or https:// URL"))?;
    let cut = rest.find('/').unwrap_or(rest.len());
    let (authority, path) = rest.split_at(cut);
    let u = url::Url::parse(&format!("{scheme}://{authority}/"))
        .map_err(|e| format!("cannot parse {raw:?}: {e}"))?;
    if u.scheme() != origin.scheme()
        || u.host_str() != origin.host_str()
        || u.port_or_known_default() != origin.port_or_known_default()
    {
        return Err(format!(
            "{raw:?} is not on {}://{}: every target goes to the run's URL's address (give a path instead)",
            origin.scheme(),
            origin.host_str().unwrap_or(""),
        ));
    }
    Ok(if path.is_empty() {
        "/".into()
    } else {
        path.to_string()
    })
}
