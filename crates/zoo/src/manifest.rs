//! `servers/<name>/server.toml`: parsing and validation into [`Server`].
//! The format is documented in docs/server-manifest.md.

use std::fmt;
use std::path::{Path, PathBuf};

use indexmap::IndexMap;
use regex::Regex;
use serde::{Deserialize, Serialize};

use crate::error::{parse_toml, DefinitionError};
use crate::placeholder::{self, BUILD_PLACEHOLDERS, RUN_PLACEHOLDERS, TEMPLATE_PLACEHOLDERS};
use crate::rule::Rule;
use crate::token::is_token;
use crate::Protocol;

/// One argv: program and arguments, never run through a shell.
pub type Argv = Vec<String>;

/// A validated server definition.
#[derive(Debug, Clone)]
pub struct Server {
    pub name: String,
    /// The server folder, absolute; every command runs in it.
    pub dir: PathBuf,
    /// `dir/server.toml`.
    pub manifest_path: PathBuf,
    /// The manifest's text, part of the build cache key.
    pub manifest_text: String,
    /// `<root>/scenarios/files`, the `{files}` placeholder and `FILES_DIR`.
    pub files_dir: PathBuf,
    pub language: String,
    pub framework: String,
    pub framework_version: String,
    pub description: Option<String>,
    pub toolchain: Toolchain,
    /// Build steps shared by every mode, run before the mode's own.
    pub shared_build: Vec<Argv>,
    /// In manifest order.
    pub modes: IndexMap<String, Mode>,
    pub default_response: ResponseConfig,
    pub normalized_response: ResponseConfig,
    /// The code as a publication ran it (`[responses.study]`), for the
    /// servers a publication measured; absent for the others.
    pub study_response: Option<ResponseConfig>,
    /// The scenarios the server implements, when it says (`scenarios =
    /// [...]`); the others are skipped with one line, never failed.
    pub scenarios: Option<Vec<String>>,
    /// `[db] pool = N`: the connection pool the server keeps to the
    /// database (`DB_POOL`), when it says.
    pub db_pool: Option<usize>,
    /// The protocols it serves (`protocols = [...]`), HTTP/1.1 first; a
    /// manifest that says nothing serves HTTP/1.1 only.
    pub protocols: Vec<Protocol>,
    /// Why it does not serve a protocol, as its manifest says
    /// (`[protocols_unsupported]`).
    pub protocols_unsupported: IndexMap<Protocol, String>,
}

/// The largest `[db] pool` a manifest may ask for (PostgreSQL's
/// max_connections is set above the largest pool of a run).
pub const MAX_DB_POOL: usize = 1000;

#[derive(Debug, Clone)]
pub struct Toolchain {
    /// The program as the user knows it: "dart not found on PATH".
    pub name: String,
    pub probe: Argv,
    pub version_regex: Option<Regex>,
    /// The one command that would install the toolchain here, shown when it
    /// is missing; fairbench never runs it.
    pub install: Option<String>,
}

#[derive(Debug, Clone, Default)]
pub struct Mode {
    pub name: String,
    pub description: Option<String>,
    pub build: Vec<Argv>,
    pub run: Option<Argv>,
    pub env: IndexMap<String, String>,
    pub build_env: IndexMap<String, String>,
    pub params: IndexMap<String, String>,
    /// Why this mode cannot run, when it cannot (e.g. AOT with dart:mirrors).
    pub unsupported: Option<String>,
    /// Config files in the server folder whose run placeholders are filled
    /// at each start and written to `{conf}/<file name>`: how a server that
    /// reads its port from a config file (nginx, Caddy, HAProxy) gets it.
    pub templates: Vec<String>,
}

/// The response shape a variant produces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ResponseKind {
    /// What the framework sends out of the box.
    Default,
    /// Byte-identical in shape to Go net/http's response.
    Normalized,
    /// The code as a publication ran it (docs/study.md): graded like
    /// `default`, its differences declared as known deviations.
    Study,
}

impl ResponseKind {
    pub const ALL: [ResponseKind; 3] = [
        ResponseKind::Default,
        ResponseKind::Normalized,
        ResponseKind::Study,
    ];
    /// What `check` and `servers` cover unless a response is named: every
    /// server has these two.
    pub const STANDARD: [ResponseKind; 2] = [ResponseKind::Default, ResponseKind::Normalized];

    pub fn as_str(self) -> &'static str {
        match self {
            ResponseKind::Default => "default",
            ResponseKind::Normalized => "normalized",
            ResponseKind::Study => "study",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "default" => Some(ResponseKind::Default),
            "normalized" => Some(ResponseKind::Normalized),
            "study" => Some(ResponseKind::Study),
            _ => None,
        }
    }
}

impl fmt::Display for ResponseKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, Default)]
pub struct ResponseConfig {
    pub env: IndexMap<String, String>,
    pub known_deviations: Vec<Deviation>,
}

/// Something a framework cannot be made to do like Go net/http, documented
/// in its manifest so that the check reports it as a warn with the reason.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Deviation {
    pub target: DeviationTarget,
    pub reason: String,
    /// Only in this scenario; `None`: in every scenario.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scenario: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DeviationTarget {
    /// An extra header the framework always sends (matched case-insensitively).
    Header(String),
    /// A contract rule whose failure is expected.
    Rule(Rule),
}

/// A mode × a response: what `fairbench check` starts and what a benchmark
/// case names.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct Variant {
    pub mode: String,
    pub response: ResponseKind,
}

impl fmt::Display for Variant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.mode, self.response)
    }
}

impl ResponseConfig {
    /// The known deviations that apply in `scenario`.
    pub fn deviations_for(&self, scenario: &str) -> Vec<Deviation> {
        self.known_deviations
            .iter()
            .filter(|d| d.scenario.as_deref().is_none_or(|s| s == scenario))
            .cloned()
            .collect()
    }
}

/// `DB_POOL` for a server without `[db] pool`: four connections per core
/// (docs/server-manifest.md).
pub const DB_POOL_PER_CORE: usize = 4;

impl Server {
    /// The connection pool the server is told to keep (`DB_POOL`).
    pub fn db_pool(&self, cores: usize) -> usize {
        self.db_pool
            .unwrap_or(DB_POOL_PER_CORE * cores.max(1))
            .min(MAX_DB_POOL)
    }

    /// Whether the server serves `protocol`.
    pub fn serves(&self, protocol: Protocol) -> bool {
        self.protocols.contains(&protocol)
    }

    /// Why it does not serve `protocol`: its manifest's reason, or that the
    /// manifest does not list it.
    pub fn why_not(&self, protocol: Protocol) -> String {
        match self.protocols_unsupported.get(&protocol) {
            Some(reason) => reason.clone(),
            None => format!(
                "not in its server.toml's protocols ({})",
                self.protocols
                    .iter()
                    .map(|p| p.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }

    /// Whether the server implements `scenario` (all, unless it lists them).
    pub fn implements(&self, scenario: &str) -> bool {
        self.scenarios
            .as_ref()
            .is_none_or(|list| list.iter().any(|s| s == scenario))
    }

    /// The response shape's configuration; `None` for `study` on a server
    /// no publication measured.
    pub fn try_response(&self, kind: ResponseKind) -> Option<&ResponseConfig> {
        match kind {
            ResponseKind::Default => Some(&self.default_response),
            ResponseKind::Normalized => Some(&self.normalized_response),
            ResponseKind::Study => self.study_response.as_ref(),
        }
    }

    /// Whether the server has this response shape.
    pub fn has_response(&self, kind: ResponseKind) -> bool {
        self.try_response(kind).is_some()
    }

    /// The response shape's configuration. Callers select shapes with
    /// [`Server::has_response`]; one the server lacks has no env and no
    /// deviations.
    pub fn response(&self, kind: ResponseKind) -> &ResponseConfig {
        static NONE: std::sync::LazyLock<ResponseConfig> =
            std::sync::LazyLock::new(ResponseConfig::default);
        self.try_response(kind).unwrap_or(&NONE)
    }

    /// The response shapes the server has: default, normalized, then study
    /// when its manifest defines one.
    pub fn responses(&self) -> Vec<ResponseKind> {
        ResponseKind::ALL
            .into_iter()
            .filter(|&k| self.has_response(k))
            .collect()
    }

    /// Every variant in manifest order (modes), default before normalized
    /// before study.
    pub fn variants(&self) -> Vec<Variant> {
        let responses = self.responses();
        self.modes
            .keys()
            .flat_map(|m| {
                responses.iter().map(move |&r| Variant {
                    mode: m.clone(),
                    response: r,
                })
            })
            .collect()
    }

    /// The build steps of a mode: shared ones first.
    pub fn build_steps(&self, mode: &Mode) -> Vec<Argv> {
        self.shared_build
            .iter()
            .chain(mode.build.iter())
            .cloned()
            .collect()
    }

    /// Loads and validates `dir/server.toml`. `shown` is how the manifest
    /// path appears in errors (relative to the zoo root).
    pub fn load(dir: &Path, shown: &Path) -> Result<Server, Vec<DefinitionError>> {
        let manifest_path = dir.join("server.toml");
        let text = std::fs::read_to_string(&manifest_path)
            .map_err(|e| vec![DefinitionError::file(shown, format!("cannot read: {e}"))])?;
        let raw: RawManifest = parse_toml(&text, shown).map_err(|e| vec![e])?;
        let folder = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        validate(raw, dir, &manifest_path, text, &folder, shown)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawManifest {
    name: String,
    language: String,
    framework: String,
    framework_version: String,
    #[serde(default)]
    description: Option<String>,
    toolchain: RawToolchain,
    #[serde(default)]
    build: Option<RawBuild>,
    modes: IndexMap<String, RawMode>,
    responses: RawResponses,
    #[serde(default)]
    scenarios: Option<Vec<String>>,
    #[serde(default)]
    protocols: Option<Vec<String>>,
    #[serde(default)]
    protocols_unsupported: IndexMap<String, String>,
    db: Option<RawDb>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDb {
    #[serde(default)]
    pool: Option<i64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawToolchain {
    name: String,
    probe: Argv,
    #[serde(default)]
    version_regex: Option<String>,
    #[serde(default)]
    install: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawBuild {
    #[serde(default)]
    commands: Vec<Argv>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMode {
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    build: Vec<Argv>,
    #[serde(default)]
    run: Option<Argv>,
    #[serde(default)]
    env: IndexMap<String, String>,
    #[serde(default)]
    build_env: IndexMap<String, String>,
    #[serde(default)]
    params: IndexMap<String, String>,
    #[serde(default)]
    unsupported: Option<String>,
    #[serde(default)]
    templates: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawResponses {
    default: RawResponse,
    normalized: RawResponse,
    #[serde(default)]
    study: Option<RawResponse>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawResponse {
    #[serde(default)]
    env: IndexMap<String, String>,
    #[serde(default)]
    known_deviations: Vec<RawDeviation>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDeviation {
    #[serde(default)]
    header: Option<String>,
    #[serde(default)]
    rule: Option<String>,
    reason: String,
    #[serde(default)]
    scenario: Option<String>,
}

/// Collects every problem instead of stopping at the first, so that one run
/// of `fairbench servers` shows an author everything to fix.
struct Checker<'a> {
    shown: &'a Path,
    errors: Vec<DefinitionError>,
}

impl Checker<'_> {
    fn err(&mut self, field: impl Into<String>, msg: impl Into<String>) {
        self.errors
            .push(DefinitionError::field(self.shown, field, msg));
    }

    fn non_empty(&mut self, field: &str, value: &str) {
        if value.trim().is_empty() {
            self.err(field, "expected a non-empty string");
        }
    }

    fn argv(&mut self, field: &str, argv: &Argv, allowed: &[&str]) {
        if argv.is_empty() || argv[0].trim().is_empty() {
            self.err(
                field,
                "expected a non-empty array of strings: the program, then its arguments",
            );
        }
        for (i, a) in argv.iter().enumerate() {
            if let Some(p) = placeholder::first_unknown(a, allowed) {
                self.err(
                    format!("{field}[{i}]"),
                    placeholder::unknown_message(p, allowed),
                );
            }
        }
    }

    /// A config file to fill at each start: a plain file name in the server
    /// folder, readable, with run placeholders only.
    fn template(&mut self, field: &str, dir: &Path, name: &str) {
        let plain = !name.is_empty()
            && Path::new(name).file_name().map(|f| f.to_string_lossy()) == Some(name.into());
        if !plain {
            self.err(
                field,
                format!("expected the name of a file in the server folder, found {name:?}"),
            );
            return;
        }
        match std::fs::read_to_string(dir.join(name)) {
            Err(e) => self.err(field, format!("cannot read {name}: {e}")),
            Ok(text) => {
                if let Some(p) = placeholder::first_unknown(&text, TEMPLATE_PLACEHOLDERS) {
                    self.err(
                        field,
                        format!(
                            "{name}: {}",
                            placeholder::unknown_message(p, TEMPLATE_PLACEHOLDERS)
                        ),
                    );
                }
            }
        }
    }

    fn env(&mut self, field: &str, env: &IndexMap<String, String>, allowed: &[&str]) {
        for (k, v) in env {
            if k.is_empty() || k.contains('=') || k.contains('\0') {
                self.err(
                    format!("{field}.{k}"),
                    "expected an environment variable name (non-empty, no '=')",
                );
            }
            if let Some(p) = placeholder::first_unknown(v, allowed) {
                self.err(
                    format!("{field}.{k}"),
                    placeholder::unknown_message(p, allowed),
                );
            }
        }
    }
}

fn is_mode_name(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b[0].is_ascii_alphanumeric()
        && b.iter()
            .all(|&c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-' || c == b'_')
}

fn validate(
    raw: RawManifest,
    dir: &Path,
    manifest_path: &Path,
    text: String,
    folder: &str,
    shown: &Path,
) -> Result<Server, Vec<DefinitionError>> {
    let mut c = Checker {
        shown,
        errors: Vec::new(),
    };
    if raw.name != folder {
        c.err(
            "name",
            format!(
                "expected the folder name \"{folder}\", found \"{}\"",
                raw.name
            ),
        );
    }
    c.non_empty("language", &raw.language);
    c.non_empty("framework", &raw.framework);
    c.non_empty("framework_version", &raw.framework_version);
    c.non_empty("toolchain.name", &raw.toolchain.name);
    c.argv("toolchain.probe", &raw.toolchain.probe, &[]);

    let version_regex = match &raw.toolchain.version_regex {
        None => None,
        Some(src) => match Regex::new(src) {
            Ok(re) if re.captures_len() >= 2 => Some(re),
            Ok(_) => {
                c.err(
                    "toolchain.version_regex",
                    "expected a regular expression with a capture group for the version",
                );
                None
            }
            Err(e) => {
                c.err(
                    "toolchain.version_regex",
                    format!(
                        "expected a regular expression: {}",
                        crate::error::regex_message(&e)
                    ),
                );
                None
            }
        },
    };

    if let Some(install) = &raw.toolchain.install {
        if install.trim().is_empty() || install.chars().any(char::is_control) {
            c.err(
                "toolchain.install",
                "expected one line of text: the command that installs the toolchain",
            );
        }
    }

    let shared_build = raw.build.map(|b| b.commands).unwrap_or_default();
    for (i, argv) in shared_build.iter().enumerate() {
        c.argv(&format!("build.commands[{i}]"), argv, BUILD_PLACEHOLDERS);
    }

    if raw.modes.is_empty() {
        c.err(
            "modes",
            "expected at least one mode, e.g. [modes.native] with a run command",
        );
    }
    let mut modes = IndexMap::new();
    for (name, m) in raw.modes {
        let f = format!("modes.{name}");
        if !is_mode_name(&name) {
            c.err(
                &f,
                "expected a mode name of lowercase letters, digits, '-' or '_'",
            );
        }
        for (i, argv) in m.build.iter().enumerate() {
            c.argv(&format!("{f}.build[{i}]"), argv, BUILD_PLACEHOLDERS);
        }
        match (&m.run, &m.unsupported) {
            (Some(run), _) => c.argv(&format!("{f}.run"), run, RUN_PLACEHOLDERS),
            (None, Some(_)) => {}
            (None, None) => c.err(
                format!("{f}.run"),
                "required field is missing (expected an array of strings, or `unsupported = \"reason\"`)",
            ),
        }
        if let Some(reason) = &m.unsupported {
            c.non_empty(&format!("{f}.unsupported"), reason);
        }
        for (i, t) in m.templates.iter().enumerate() {
            c.template(&format!("{f}.templates[{i}]"), dir, t);
        }
        c.env(&format!("{f}.env"), &m.env, RUN_PLACEHOLDERS);
        c.env(&format!("{f}.build_env"), &m.build_env, BUILD_PLACEHOLDERS);
        modes.insert(
            name.clone(),
            Mode {
                name,
                description: m.description,
                build: m.build,
                run: m.run,
                env: m.env,
                build_env: m.build_env,
                params: m.params,
                unsupported: m.unsupported,
                templates: m.templates,
            },
        );
    }

    let response = |kind: &str, r: RawResponse, c: &mut Checker| -> ResponseConfig {
        let f = format!("responses.{kind}");
        c.env(&format!("{f}.env"), &r.env, RUN_PLACEHOLDERS);
        let mut known = Vec::new();
        for (i, d) in r.known_deviations.into_iter().enumerate() {
            let df = format!("{f}.known_deviations[{i}]");
            c.non_empty(&format!("{df}.reason"), &d.reason);
            let target = match (d.header, d.rule) {
                (Some(h), None) => {
                    if !is_token(&h) {
                        c.err(format!("{df}.header"), "expected an HTTP header name");
                    }
                    DeviationTarget::Header(h)
                }
                (None, Some(r)) => match Rule::parse(&r) {
                    Some(rule) => DeviationTarget::Rule(rule),
                    None => {
                        c.err(
                            format!("{df}.rule"),
                            format!(
                                "unknown rule \"{r}\"; expected one of {}",
                                Rule::ALL
                                    .iter()
                                    .map(|r| r.name())
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            ),
                        );
                        continue;
                    }
                },
                _ => {
                    c.err(&df, "expected exactly one of `header` or `rule`");
                    continue;
                }
            };
            if let Some(sc) = &d.scenario {
                c.non_empty(&format!("{df}.scenario"), sc);
            }
            known.push(Deviation {
                target,
                reason: d.reason,
                scenario: d.scenario,
            });
        }
        ResponseConfig {
            env: r.env,
            known_deviations: known,
        }
    };
    let default_response = response("default", raw.responses.default, &mut c);
    let normalized_response = response("normalized", raw.responses.normalized, &mut c);
    let study_response = raw.responses.study.map(|r| response("study", r, &mut c));
    if let Some(list) = &raw.scenarios {
        if list.is_empty() {
            c.err(
                "scenarios",
                "expected the names of the scenarios the server implements, e.g. [\"static\", \"file\"] (leave the field out for all)",
            );
        }
    }
    let db_pool = match raw.db.as_ref().and_then(|d| d.pool) {
        None => None,
        Some(n) if (1..=MAX_DB_POOL as i64).contains(&n) => Some(n as usize),
        Some(n) => {
            c.err(
                "db.pool",
                format!("expected a connection pool size from 1 to {MAX_DB_POOL}, found {n}"),
            );
            None
        }
    };

    let (protocols, protocols_unsupported) =
        protocols(raw.protocols, raw.protocols_unsupported, &mut c);

    if !c.errors.is_empty() {
        return Err(c.errors);
    }
    Ok(Server {
        name: raw.name,
        dir: dir.to_path_buf(),
        manifest_path: manifest_path.to_path_buf(),
        manifest_text: text,
        // servers/<name>/ sits two levels below the root.
        files_dir: dir
            .parent()
            .and_then(Path::parent)
            .unwrap_or(dir)
            .join("scenarios")
            .join("files"),
        language: raw.language,
        framework: raw.framework,
        framework_version: raw.framework_version,
        description: raw.description,
        toolchain: Toolchain {
            name: raw.toolchain.name,
            probe: raw.toolchain.probe,
            version_regex,
            install: raw.toolchain.install,
        },
        shared_build,
        modes,
        default_response,
        normalized_response,
        study_response,
        scenarios: raw.scenarios,
        db_pool,
        protocols,
        protocols_unsupported,
    })
}

/// `protocols` (HTTP/1.1 among them: the contract, the readiness check and
/// every other server speak it) and the reasons for the others.
fn protocols(
    listed: Option<Vec<String>>,
    reasons: IndexMap<String, String>,
    c: &mut Checker,
) -> (Vec<Protocol>, IndexMap<Protocol, String>) {
    let mut served = Vec::new();
    match listed {
        None => served.push(Protocol::Http1),
        Some(list) => {
            for (i, name) in list.iter().enumerate() {
                match Protocol::parse(name) {
                    Some(p) if served.contains(&p) => c.err(
                        format!("protocols[{i}]"),
                        format!("{name:?} is listed twice"),
                    ),
                    Some(p) => served.push(p),
                    None => c.err(
                        format!("protocols[{i}]"),
                        format!(
                            "unknown protocol {name:?}; expected {}",
                            Protocol::expected()
                        ),
                    ),
                }
            }
            if !served.contains(&Protocol::Http1) {
                c.err(
                    "protocols",
                    "expected \"http/1.1\" among them: every server serves HTTP/1.1 (the contract and readiness check use it)",
                );
            }
        }
    }
    served.sort();
    let mut why = IndexMap::new();
    for (name, reason) in reasons {
        let field = format!("protocols_unsupported.{name}");
        match Protocol::parse(&name) {
            None => c.err(
                &field,
                format!(
                    "unknown protocol {name:?}; expected {}",
                    Protocol::expected()
                ),
            ),
            Some(p) if served.contains(&p) => c.err(
                &field,
                format!(
                    "{name} is in protocols: a server either serves a protocol or says why not"
                ),
            ),
            Some(p) => {
                c.non_empty(&field, &reason);
                why.insert(p, reason);
            }
        }
    }
    (served, why)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(text: &str) -> Result<Server, Vec<DefinitionError>> {
        let dir = tempfile::tempdir().unwrap();
        let sdir = dir.path().join("demo");
        std::fs::create_dir(&sdir).unwrap();
        std::fs::write(sdir.join("server.toml"), text).unwrap();
        Server::load(&sdir, Path::new("servers/demo/server.toml"))
    }

    const GOOD: &str = r#"
name = "demo"
language = "Go"
framework = "net/http"
framework_version = "stdlib"
[toolchain]
name = "go"
probe = ["go", "version"]
version_regex = 'go(\d+\.\d+(?:\.\d+)?)'
[modes.native]
build = [["go", "build", "-o", "{out}/server", "."]]
run = ["{out}/server"]
[modes.exe]
unsupported = "no such thing"
[responses.default]
[responses.normalized]
known_deviations = [{ header = "X-Powered-By", reason = "always added" }]
"#;

    #[test]
    fn good_manifest_loads_in_order() {
        let s = load(GOOD).unwrap();
        assert_eq!(s.modes.keys().collect::<Vec<_>>(), vec!["native", "exe"]);
        assert_eq!(s.variants().len(), 4);
        assert_eq!(s.variants()[1].to_string(), "native/normalized");
        assert_eq!(s.normalized_response.known_deviations.len(), 1);
        assert!(!s.has_response(ResponseKind::Study));
    }

    #[test]
    fn a_study_response_is_optional_and_adds_variants() {
        let s = load(&format!(
            "{GOOD}[responses.study]\nenv = {{ STUDY = \"1\" }}\nknown_deviations = [{{ rule = \"body\", reason = \"published body\", scenario = \"static\" }}]\n"
        ))
        .unwrap();
        assert_eq!(
            s.responses(),
            vec![
                ResponseKind::Default,
                ResponseKind::Normalized,
                ResponseKind::Study
            ]
        );
        assert_eq!(s.variants().len(), 6);
        assert_eq!(s.variants()[2].to_string(), "native/study");
        let study = s.response(ResponseKind::Study);
        assert_eq!(study.env["STUDY"], "1");
        assert_eq!(study.deviations_for("static").len(), 1);
        assert_eq!(study.deviations_for("dynamic").len(), 0);
        assert_eq!(ResponseKind::parse("study"), Some(ResponseKind::Study));
        let e = load(&format!(
            "{GOOD}[responses.study]\nknown_deviations = [{{ rule = \"nope\", reason = \"x\" }}]\n"
        ))
        .unwrap_err();
        assert_eq!(
            e[0].field.as_deref(),
            Some("responses.study.known_deviations[0].rule"),
            "{}",
            e[0]
        );
    }

    #[test]
    fn install_is_one_line_of_text() {
        // `install` is written as TOML basic-string text, escapes and all.
        let with = |install: &str| {
            GOOD.replace(
                "version_regex = 'go",
                &format!("install = \"{install}\"\nversion_regex = 'go"),
            )
        };
        let s = load(&with("apt-get install golang")).unwrap();
        assert_eq!(
            s.toolchain.install.as_deref(),
            Some("apt-get install golang")
        );
        assert_eq!(load(GOOD).unwrap().toolchain.install, None);
        for bad in ["", r"apt-get install\ngolang", r"\u001b[31mred"] {
            let e = load(&with(bad)).unwrap_err();
            assert_eq!(e[0].field.as_deref(), Some("toolchain.install"), "{}", e[0]);
            assert!(e[0].message.contains("one line of text"), "{}", e[0]);
        }
    }

    #[test]
    fn wrong_type_names_file_field_and_expectation() {
        let e =
            load(&GOOD.replace("run = [\"{out}/server\"]", "run = \"{out}/server\"")).unwrap_err();
        let msg = e[0].to_string();
        assert!(
            msg.starts_with("servers/demo/server.toml:")
                && msg.contains("field modes.native.run: expected an array"),
            "{msg}"
        );
    }

    #[test]
    fn missing_and_unknown_fields() {
        let e = load(&GOOD.replace("language = \"Go\"\n", "")).unwrap_err();
        assert_eq!(e[0].field.as_deref(), Some("language"), "{}", e[0]);
        let e =
            load(&GOOD.replace("[modes.native]\n", "[modes.native]\nbulid = []\n")).unwrap_err();
        assert_eq!(
            e[0].field.as_deref(),
            Some("modes.native.bulid"),
            "{}",
            e[0]
        );
        assert!(e[0].message.contains("unknown field"), "{}", e[0]);
    }

    #[test]
    fn semantic_errors_are_all_collected() {
        let text = GOOD
            .replace("name = \"demo\"", "name = \"other\"")
            .replace(
                "{out}/server\"]\n[modes.exe]",
                "{out}/{nope}\"]\n[modes.exe]",
            )
            .replace("header = \"X-Powered-By\"", "rule = \"no-such-rule\"");
        let e = load(&text).unwrap_err();
        let fields: Vec<_> = e.iter().map(|e| e.field.clone().unwrap()).collect();
        assert!(fields.contains(&"name".to_string()), "{fields:?}");
        assert!(
            fields.contains(&"modes.native.run[0]".to_string()),
            "{fields:?}"
        );
        assert!(
            fields.contains(&"responses.normalized.known_deviations[0].rule".to_string()),
            "{fields:?}"
        );
    }

    #[test]
    fn run_required_unless_unsupported() {
        let e = load(&GOOD.replace("run = [\"{out}/server\"]\n", "")).unwrap_err();
        assert_eq!(e[0].field.as_deref(), Some("modes.native.run"));
    }

    #[test]
    fn a_placeholder_in_the_wrong_case_is_an_error_naming_it() {
        let e = load(&GOOD.replace(
            "run = [\"{out}/server\"]",
            "run = [\"{out}/server\", \"{PORT}\"]",
        ))
        .unwrap_err();
        assert_eq!(
            e[0].field.as_deref(),
            Some("modes.native.run[1]"),
            "{}",
            e[0]
        );
        assert!(
            e[0].message.contains("{PORT}") && e[0].message.contains("use {port}"),
            "{}",
            e[0]
        );
    }

    #[test]
    fn db_pool_from_the_manifest_else_four_per_core() {
        let s = load(&format!("{GOOD}\n[db]\npool = 16\n")).unwrap();
        assert_eq!(s.db_pool(1), 16);
        assert_eq!(load(GOOD).unwrap().db_pool(3), 12);
        let e = load(&format!("{GOOD}\n[db]\npool = 0\n")).unwrap_err();
        assert_eq!(e[0].field.as_deref(), Some("db.pool"), "{}", e[0]);
        assert!(
            e[0].to_string().contains("from 1 to 1000, found 0"),
            "{}",
            e[0]
        );
    }

    #[test]
    fn scenarios_listed_and_deviations_scoped() {
        let s = load(
            &GOOD
                .replace(
                    "[toolchain]",
                    "scenarios = [\"static\", \"dynamic\"]\n[toolchain]",
                )
                .replace(
                    "reason = \"always added\" }",
                    "reason = \"always added\", scenario = \"dynamic\" }",
                ),
        )
        .unwrap();
        assert!(s.implements("static") && !s.implements("file"));
        assert!(load(GOOD).unwrap().implements("file"));
        let n = &s.normalized_response;
        assert_eq!(n.deviations_for("dynamic").len(), 1);
        assert_eq!(n.deviations_for("static").len(), 0);
        let e = load(&GOOD.replace("[toolchain]", "scenarios = []\n[toolchain]")).unwrap_err();
        assert_eq!(e[0].field.as_deref(), Some("scenarios"), "{}", e[0]);
    }

    #[test]
    fn templates_are_files_of_the_folder_with_known_placeholders() {
        let with = |name: &str, body: Option<&str>| {
            let dir = tempfile::tempdir().unwrap();
            let sdir = dir.path().join("demo");
            std::fs::create_dir(&sdir).unwrap();
            if let Some(b) = body {
                std::fs::write(sdir.join("app.conf"), b).unwrap();
            }
            let text = GOOD.replace(
                "run = [\"{out}/server\"]",
                &format!(
                    "templates = [\"{name}\"]\nrun = [\"{{out}}/server\", \"{{conf}}/app.conf\"]"
                ),
            );
            std::fs::write(sdir.join("server.toml"), text).unwrap();
            Server::load(&sdir, Path::new("servers/demo/server.toml"))
        };
        let ok = with("app.conf", Some("listen {port};\nhttp { ${x} }\n")).unwrap();
        assert_eq!(ok.modes["native"].templates, vec!["app.conf"]);
        let e = with("app.conf", Some("listen {PORT};\n")).unwrap_err();
        assert_eq!(e[0].field.as_deref(), Some("modes.native.templates[0]"));
        assert!(
            e[0].message
                .contains("app.conf: unknown placeholder {PORT}"),
            "{}",
            e[0]
        );
        let e = with("app.conf", None).unwrap_err();
        assert!(e[0].message.contains("cannot read app.conf"), "{}", e[0]);
        let e = with("../app.conf", Some("")).unwrap_err();
        assert!(
            e[0].message.contains("a file in the server folder"),
            "{}",
            e[0]
        );
    }

    #[test]
    fn protocols_default_to_http1_and_others_say_why_not() {
        let s = load(GOOD).unwrap();
        assert_eq!(s.protocols, vec![Protocol::Http1]);
        assert!(!s.serves(Protocol::H2c));
        assert!(s
            .why_not(Protocol::H2)
            .contains("not in its server.toml's protocols (http/1.1)"));
        let with =
            |extra: &str| load(&GOOD.replace("[toolchain]", &format!("{extra}\n[toolchain]")));
        let s = with("protocols = [\"h2\", \"http/1.1\", \"h2c\"]").unwrap();
        assert_eq!(s.protocols, Protocol::ALL.to_vec());
        let s = load(&format!(
            "{GOOD}[protocols_unsupported]\nh2c = \"no HTTP/2 server\"\n"
        ))
        .unwrap();
        assert_eq!(s.why_not(Protocol::H2c), "no HTTP/2 server");
        for (bad, field, needle) in [
            (
                "protocols = [\"h3\"]",
                "protocols[0]",
                "unknown protocol \"h3\"",
            ),
            (
                "protocols = [\"h2c\"]",
                "protocols",
                "\"http/1.1\" among them",
            ),
            (
                "protocols = [\"http/1.1\", \"http/1.1\"]",
                "protocols[1]",
                "listed twice",
            ),
        ] {
            let e = with(bad).unwrap_err();
            assert_eq!(e[0].field.as_deref(), Some(field), "{}", e[0]);
            assert!(e[0].message.contains(needle), "{}", e[0]);
        }
        for (table, needle) in [
            ("h2c = \"x\"", "is in protocols"),
            ("spdy = \"x\"", "unknown protocol \"spdy\""),
            ("h2 = \" \"", "non-empty"),
        ] {
            let e = load(&format!(
                "{}[protocols_unsupported]\n{table}\n",
                GOOD.replace(
                    "[toolchain]",
                    "protocols = [\"http/1.1\", \"h2c\"]\n[toolchain]"
                )
            ))
            .unwrap_err();
            assert!(
                e[0].field
                    .as_deref()
                    .unwrap()
                    .starts_with("protocols_unsupported."),
                "{}",
                e[0]
            );
            assert!(e[0].message.contains(needle), "{}", e[0]);
        }
    }

    #[test]
    fn syntax_error_has_line() {
        let e = load("name = \"demo\"\nlanguage = \n").unwrap_err();
        assert_eq!(e[0].line, Some(2), "{}", e[0]);
    }
}
