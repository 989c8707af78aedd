//! A manifest as written (the `Raw*` shapes serde reads) and its
//! validation into a [`Server`]: every field checked, every mistake named
//! with its file and field.

use std::path::Path;

use indexmap::IndexMap;
use regex::Regex;
use serde::Deserialize;

use super::{
    Argv, Deviation, DeviationTarget, Mode, ResponseConfig, ResponseKind, Server, Toolchain,
    Workers, MAX_DB_POOL,
};
use crate::error::DefinitionError;
use crate::placeholder::{self, BUILD_PLACEHOLDERS, RUN_PLACEHOLDERS, TEMPLATE_PLACEHOLDERS};
use crate::rule::Rule;
use crate::token::is_token;
use crate::Protocol;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawManifest {
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
    #[serde(default)]
    scenarios_unsupported: IndexMap<String, String>,
    #[serde(default)]
    sockets: Option<Vec<String>>,
    #[serde(default)]
    sockets_unsupported: IndexMap<String, String>,
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
    #[serde(default, rename = "post2012-exists")]
    post2012_exists: Option<RawResponse>,
    #[serde(default, rename = "post2012-session")]
    post2012_session: Option<RawResponse>,
    #[serde(default, rename = "post2012-local")]
    post2012_local: Option<RawResponse>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawResponse {
    #[serde(default)]
    env: IndexMap<String, String>,
    #[serde(default)]
    workers: Option<String>,
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

pub(super) fn validate(
    mut raw: RawManifest,
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
    identity(&raw, folder, &mut c);
    let toolchain = toolchain(raw.toolchain, &mut c);
    let shared_build = shared_build(raw.build, &mut c);
    let modes = modes(raw.modes, dir, &mut c);
    let optional = raw.responses.optional();
    let default_response = response("default", raw.responses.default, &mut c);
    let normalized_response = response("normalized", raw.responses.normalized, &mut c);
    let optional_responses = optional_responses(optional, &mut c);
    scenarios(raw.scenarios.as_deref(), &mut c);
    scenarios_unsupported(raw.scenarios.as_deref(), &raw.scenarios_unsupported, &mut c);
    let db_pool = db_pool(raw.db.as_ref(), &mut c);
    let (protocols, protocols_unsupported) =
        protocols(raw.protocols, raw.protocols_unsupported, &mut c);
    let mut socket_errs = Vec::new();
    let (sockets, sockets_unsupported) =
        super::sockets::sockets(raw.sockets, raw.sockets_unsupported, &mut socket_errs);
    for (field, msg) in socket_errs {
        c.err(field, msg);
    }

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
        toolchain,
        shared_build,
        modes,
        default_response,
        normalized_response,
        optional_responses,
        scenarios: raw.scenarios,
        scenarios_unsupported: raw.scenarios_unsupported,
        db_pool,
        protocols,
        protocols_unsupported,
        sockets,
        sockets_unsupported,
    })
}

/// What names the server: `name` (its folder's), the language and the
/// framework with its version.
fn identity(raw: &RawManifest, folder: &str, c: &mut Checker) {
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
}

/// `[toolchain]`: its name, the probe that finds its version, and the one
/// line that would install it.
fn toolchain(raw: RawToolchain, c: &mut Checker) -> Toolchain {
    c.non_empty("toolchain.name", &raw.name);
    c.argv("toolchain.probe", &raw.probe, &[]);
    let version_regex = version_regex(raw.version_regex.as_deref(), c);
    if let Some(install) = &raw.install {
        if install.trim().is_empty() || install.chars().any(char::is_control) {
            c.err(
                "toolchain.install",
                "expected one line of text: the command that installs the toolchain",
            );
        }
    }
    Toolchain {
        name: raw.name,
        probe: raw.probe,
        version_regex,
        install: raw.install,
    }
}

/// `toolchain.version_regex`: a regular expression whose first group is
/// the version.
fn version_regex(src: Option<&str>, c: &mut Checker) -> Option<Regex> {
    let src = src?;
    match Regex::new(src) {
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
    }
}

/// `[build] commands`: the steps every mode shares.
fn shared_build(raw: Option<RawBuild>, c: &mut Checker) -> Vec<Argv> {
    let shared_build = raw.map(|b| b.commands).unwrap_or_default();
    for (i, argv) in shared_build.iter().enumerate() {
        c.argv(&format!("build.commands[{i}]"), argv, BUILD_PLACEHOLDERS);
    }
    shared_build
}

/// `[modes.*]`, at least one, in manifest order.
fn modes(raw: IndexMap<String, RawMode>, dir: &Path, c: &mut Checker) -> IndexMap<String, Mode> {
    if raw.is_empty() {
        c.err(
            "modes",
            "expected at least one mode, e.g. [modes.native] with a run command",
        );
    }
    let mut modes = IndexMap::new();
    for (name, m) in raw {
        modes.insert(name.clone(), mode(name, m, dir, c));
    }
    modes
}

/// One `[modes.<name>]`: its commands, templates and environments.
fn mode(name: String, m: RawMode, dir: &Path, c: &mut Checker) -> Mode {
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
    }
}

impl RawResponses {
    /// The shapes a manifest may leave out, as given, in
    /// [`ResponseKind::OPTIONAL`]'s order.
    fn optional(&mut self) -> Vec<(ResponseKind, RawResponse)> {
        let given = [
            (ResponseKind::Study, self.study.take()),
            (ResponseKind::Post2012Exists, self.post2012_exists.take()),
            (ResponseKind::Post2012Session, self.post2012_session.take()),
            (ResponseKind::Post2012Local, self.post2012_local.take()),
        ];
        given
            .into_iter()
            .filter_map(|(k, r)| r.map(|r| (k, r)))
            .collect()
    }
}

fn optional_responses(
    given: Vec<(ResponseKind, RawResponse)>,
    c: &mut Checker,
) -> IndexMap<ResponseKind, ResponseConfig> {
    given
        .into_iter()
        .map(|(k, r)| (k, response(k.as_str(), r, c)))
        .collect()
}

/// `[responses.<kind>]`: its environment, known deviations and workers.
fn response(kind: &str, r: RawResponse, c: &mut Checker) -> ResponseConfig {
    let f = format!("responses.{kind}");
    c.env(&format!("{f}.env"), &r.env, RUN_PLACEHOLDERS);
    let mut known = Vec::new();
    for (i, d) in r.known_deviations.into_iter().enumerate() {
        let df = format!("{f}.known_deviations[{i}]");
        if let Some(deviation) = deviation(&df, d, c) {
            known.push(deviation);
        }
    }
    let workers = match r.workers.as_deref() {
        None => Workers::Cores,
        Some(w) => Workers::parse(w).unwrap_or_else(|| {
            c.err(
                format!("{f}.workers"),
                format!("expected \"env\", \"one\" or \"cores\", got {w:?}"),
            );
            Workers::Cores
        }),
    };
    ResponseConfig {
        env: r.env,
        known_deviations: known,
        workers,
    }
}

/// One known deviation (field `df`): a header or a rule, with its reason;
/// none when it names neither, both, or an unknown rule.
fn deviation(df: &str, d: RawDeviation, c: &mut Checker) -> Option<Deviation> {
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
                return None;
            }
        },
        _ => {
            c.err(df, "expected exactly one of `header` or `rule`");
            return None;
        }
    };
    if let Some(sc) = &d.scenario {
        c.non_empty(&format!("{df}.scenario"), sc);
    }
    Some(Deviation {
        target,
        reason: d.reason,
        scenario: d.scenario,
    })
}

/// `scenarios`, when listed: not empty (leaving it out means all).
fn scenarios(list: Option<&[String]>, c: &mut Checker) {
    if list.is_some_and(|l| l.is_empty()) {
        c.err(
            "scenarios",
            "expected the names of the scenarios the server implements, e.g. [\"static\", \"file\"] (leave the field out for all)",
        );
    }
}

/// `[scenarios_unsupported]`: a reason for each, and none a scenario the
/// server also lists as implemented.
fn scenarios_unsupported(
    listed: Option<&[String]>,
    reasons: &IndexMap<String, String>,
    c: &mut Checker,
) {
    for (name, reason) in reasons {
        let field = format!("scenarios_unsupported.{name}");
        if listed.is_some_and(|l| l.contains(name)) {
            c.err(
                &field,
                format!(
                    "{name} is in scenarios: a server either implements a scenario or says why not"
                ),
            );
        } else {
            c.non_empty(&field, reason);
        }
    }
}

/// `[db] pool`, when given: from 1 to [`MAX_DB_POOL`].
fn db_pool(db: Option<&RawDb>, c: &mut Checker) -> Option<usize> {
    match db.and_then(|d| d.pool) {
        None => None,
        Some(n) if (1..=MAX_DB_POOL as i64).contains(&n) => Some(n as usize),
        Some(n) => {
            c.err(
                "db.pool",
                format!("expected a connection pool size from 1 to {MAX_DB_POOL}, found {n}"),
            );
            None
        }
    }
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
