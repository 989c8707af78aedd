//! `servers/<name>/server.toml`: parsing and validation into [`Server`].
//! The format is documented in docs/server-manifest.md.

use std::fmt;
use std::path::{Path, PathBuf};

use indexmap::IndexMap;
use regex::Regex;
use serde::{Deserialize, Serialize};

use crate::error::{parse_toml, DefinitionError};
use crate::rule::Rule;
use crate::Protocol;

mod parse;
mod sockets;
use parse::{validate, RawManifest};
pub use sockets::Socket;

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
    /// The code as a publication ran it (`[responses.study]`, and the 2012
    /// post's `[responses.post2012-*]`), for the servers a publication
    /// measured; absent for the others.
    pub optional_responses: IndexMap<ResponseKind, ResponseConfig>,
    /// The scenarios the server implements, when it says (`scenarios =
    /// [...]`); the others are skipped with one line, never failed.
    pub scenarios: Option<Vec<String>>,
    /// Why it does not implement a scenario, as its manifest says
    /// (`[scenarios_unsupported]`): skipped with that reason, never failed.
    pub scenarios_unsupported: IndexMap<String, String>,
    /// `[db] pool = N`: the connection pool the server keeps to the
    /// database (`DB_POOL`), when it says.
    pub db_pool: Option<usize>,
    /// The protocols it serves (`protocols = [...]`), HTTP/1.1 first; a
    /// manifest that says nothing serves HTTP/1.1 only.
    pub protocols: Vec<Protocol>,
    /// Why it does not serve a protocol, as its manifest says
    /// (`[protocols_unsupported]`).
    pub protocols_unsupported: IndexMap<Protocol, String>,
    /// Where it can be told to listen (`sockets = [...]`): TCP always, a
    /// unix domain socket (`UNIX_SOCKET`) when it says so.
    pub sockets: Vec<Socket>,
    /// Why it cannot listen on a socket, as its manifest says
    /// (`[sockets_unsupported]`).
    pub sockets_unsupported: IndexMap<Socket, String>,
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
    /// The 2012 static-file post's three hand-written Dart handlers
    /// (docs/study.md): a file-exists check in both the route matcher and
    /// the responder; the path kept in the session; the path in a local
    /// variable. Graded like `default`, as `study` is.
    #[serde(rename = "post2012-exists")]
    Post2012Exists,
    #[serde(rename = "post2012-session")]
    Post2012Session,
    #[serde(rename = "post2012-local")]
    Post2012Local,
}

impl ResponseKind {
    pub const ALL: [ResponseKind; 6] = [
        ResponseKind::Default,
        ResponseKind::Normalized,
        ResponseKind::Study,
        ResponseKind::Post2012Exists,
        ResponseKind::Post2012Session,
        ResponseKind::Post2012Local,
    ];
    /// The shapes a manifest may leave out: a publication's own code, for
    /// the servers it measured.
    pub const OPTIONAL: [ResponseKind; 4] = [
        ResponseKind::Study,
        ResponseKind::Post2012Exists,
        ResponseKind::Post2012Session,
        ResponseKind::Post2012Local,
    ];
    /// What `check` and `servers` cover unless a response is named: every
    /// server has these two.
    pub const STANDARD: [ResponseKind; 2] = [ResponseKind::Default, ResponseKind::Normalized];

    pub fn as_str(self) -> &'static str {
        match self {
            ResponseKind::Default => "default",
            ResponseKind::Normalized => "normalized",
            ResponseKind::Study => "study",
            ResponseKind::Post2012Exists => "post2012-exists",
            ResponseKind::Post2012Session => "post2012-session",
            ResponseKind::Post2012Local => "post2012-local",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        ResponseKind::ALL.into_iter().find(|k| k.as_str() == s)
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
    /// How many workers (isolates, processes, threads, GOMAXPROCS) the
    /// response runs, whatever a suite's `workers` asks.
    pub workers: Workers,
}

/// What a server's response does with WORKERS (a suite's `workers`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Workers {
    /// It runs as many as CORES and reads no WORKERS (the default).
    #[default]
    Cores,
    /// It runs as many as WORKERS says when given, else as CORES.
    Env,
    /// It runs one, whatever it is told (the study's Dart servers).
    One,
}

impl Workers {
    pub fn parse(s: &str) -> Option<Workers> {
        match s {
            "cores" => Some(Workers::Cores),
            "env" => Some(Workers::Env),
            "one" => Some(Workers::One),
            _ => None,
        }
    }

    /// How many it runs when told `cores` and asked `workers`.
    pub fn runs(self, cores: usize, workers: Option<usize>) -> usize {
        match (self, workers) {
            (Workers::One, _) => 1,
            (Workers::Env, Some(w)) => w,
            _ => cores,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Workers::Cores => "cores",
            Workers::Env => "env",
            Workers::One => "one",
        }
    }
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

    /// Whether the server can be told to listen on `socket`.
    pub fn listens(&self, socket: Socket) -> bool {
        self.sockets.contains(&socket)
    }

    /// Why it cannot listen on `socket`: its manifest's reason, or that
    /// the manifest does not list it.
    pub fn why_not_listen(&self, socket: Socket) -> String {
        match self.sockets_unsupported.get(&socket) {
            Some(reason) => reason.clone(),
            None => format!(
                "not in its server.toml's sockets ({})",
                self.sockets
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }

    /// Whether the server implements `scenario` (all, unless it lists them).
    pub fn implements(&self, scenario: &str) -> bool {
        !self.scenarios_unsupported.contains_key(scenario)
            && self
                .scenarios
                .as_ref()
                .is_none_or(|list| list.iter().any(|s| s == scenario))
    }

    /// The response shape's configuration; `None` for `study` on a server
    /// no publication measured.
    pub fn try_response(&self, kind: ResponseKind) -> Option<&ResponseConfig> {
        match kind {
            ResponseKind::Default => Some(&self.default_response),
            ResponseKind::Normalized => Some(&self.normalized_response),
            other => self.optional_responses.get(&other),
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
    /// and the 2012 post's handlers when its manifest defines them.
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

#[cfg(test)]
mod tests;
