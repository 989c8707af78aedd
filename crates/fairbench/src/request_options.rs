//! What a load sends and how it connects, whoever asks for it: `load`'s
//! flags and a suite's `[[service]]` keys are two spellings of the same
//! options, turned into the engine's settings here once, so that a service
//! suite can never honour an option differently from `load`.
//!
//! The load model (connections, rate, duration) is not here: `load` takes
//! it from its flags, a suite from its `[[load]]` profiles.

use std::path::PathBuf;

use fairbench_engine::route::{ConnectTo, Resolve, Routes};
use fairbench_engine::{
    ConfigError, LoadConfig, Protocol, RequestSpec, StatusSet, Target, TlsOptions,
};
use serde::Serialize;

/// How the caller spells an option in an error: `--cert` for `load`'s
/// flags, `cert` for a service's key.
pub type Spell<'a> = &'a dyn Fn(&str) -> String;

/// The request body, as given or to be read.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Body {
    #[default]
    None,
    Text(String),
    File(PathBuf),
}

/// The options of one load's requests and connections.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RequestOptions {
    pub method: String,
    /// `Name: value`, as `-H` takes them.
    pub headers: Vec<String>,
    pub body: Body,
    /// A targets file (docs/targets.md): each target says its method.
    pub targets: Option<PathBuf>,
    /// Templated requests prepared ahead, and the seed they are drawn from.
    pub pool: usize,
    pub seed: u64,
    /// h2 by ALPN over TLS, h2c with prior knowledge otherwise.
    pub http2: bool,
    /// HTTP/3 over QUIC to an `https://` URL (`--http3`, a service's
    /// `http3`).
    pub http3: bool,
    pub streams: Option<usize>,
    pub insecure: bool,
    pub cacert: Option<PathBuf>,
    pub cert: Option<PathBuf>,
    pub key: Option<PathBuf>,
    /// As `--connect-to` and `--resolve` take them (curl's forms).
    pub connect_to: Vec<String>,
    pub resolve: Vec<String>,
    /// A unix domain socket the server listens on: the URL then names the
    /// Host header and path only.
    pub unix_socket: Option<PathBuf>,
    /// An HTTP proxy's URL (docs/limits.md, "Proxies").
    pub proxy: Option<String>,
    /// The statuses counted as answers, e.g. `200-399` or `2xx`.
    pub expect_status: String,
}

/// `load`'s defaults, which a service's missing keys take too.
impl Default for RequestOptions {
    fn default() -> Self {
        RequestOptions {
            method: "GET".into(),
            headers: Vec::new(),
            body: Body::None,
            targets: None,
            pool: crate::mix::DEFAULT_POOL,
            seed: 1,
            http2: false,
            http3: false,
            streams: None,
            insecure: false,
            cacert: None,
            cert: None,
            key: None,
            connect_to: Vec::new(),
            resolve: Vec::new(),
            unix_socket: None,
            proxy: None,
            expect_status: DEFAULT_EXPECT_STATUS.into(),
        }
    }
}

/// The statuses `load` counts as answers unless told otherwise.
pub const DEFAULT_EXPECT_STATUS: &str = "200-399";

impl RequestOptions {
    /// The `connect_to` and `resolve` rules, parsed.
    pub fn routes(&self, spell: Spell) -> Result<Routes, String> {
        if self.unix_socket.is_some() && !(self.connect_to.is_empty() && self.resolve.is_empty()) {
            return Err(format!(
                "{}: connections to a unix socket are not routed (leave {} and {} out)",
                spell("unix-socket"),
                spell("connect-to"),
                spell("resolve")
            ));
        }
        let connect_to = self
            .connect_to
            .iter()
            .map(|s| ConnectTo::parse(s).map_err(|e| format!("{} {e}", spell("connect-to"))))
            .collect::<Result<_, _>>()?;
        let resolve = self
            .resolve
            .iter()
            .map(|s| Resolve::parse(s).map_err(|e| format!("{} {e}", spell("resolve"))))
            .collect::<Result<_, _>>()?;
        Ok(Routes {
            connect_to,
            resolve,
        })
    }

    /// The target `url` names: over the unix socket, through the proxy, or
    /// as `routes` send it.
    pub fn target(&self, url: &str, routes: &Routes, spell: Spell) -> Result<Target, String> {
        let named = |e: ConfigError| engine_error(&e, spell);
        if let Some(path) = &self.unix_socket {
            return unix_target(url, path, spell);
        }
        let Some(raw) = &self.proxy else {
            return Target::parse_routed(url, routes).map_err(named);
        };
        if !routes.is_empty() {
            return Err(format!(
                "{}: not with {} or {} (the proxy decides where connections go)",
                spell("proxy"),
                spell("connect-to"),
                spell("resolve")
            ));
        }
        let proxy = fairbench_engine::proxy::Proxy::parse(raw).map_err(named)?;
        Target::parse_proxied(url, proxy).map_err(named)
    }

    /// Sets what the requests are and how connections are made on `cfg`,
    /// whose target `url` is already parsed: every option checked before
    /// anything is sent, each error naming its option.
    pub fn apply(&self, url: &str, cfg: &mut LoadConfig, spell: Spell) -> Result<(), String> {
        let named = |e: ConfigError| engine_error(&e, spell);
        cfg.expect_status = StatusSet::parse(&self.expect_status).map_err(named)?;
        cfg.tls = self.tls(cfg.target.tls, spell)?;
        if self.http2 {
            cfg.protocol = Protocol::h2_for(cfg.target.tls);
        }
        if self.http3 {
            cfg.protocol = Protocol::H3;
        }
        cfg.streams = self.streams.unwrap_or(fairbench_engine::DEFAULT_STREAMS);
        let mut headers = Vec::new();
        for h in &self.headers {
            headers.push(RequestSpec::parse_header(h).map_err(named)?);
        }
        let body = match &self.body {
            Body::None => Vec::new(),
            Body::Text(t) => t.clone().into_bytes(),
            Body::File(p) => std::fs::read(p)
                .map_err(|e| format!("{}: cannot read {}: {e}", spell("body-file"), p.display()))?,
        };
        if self.targets.is_some() && self.method != "GET" {
            return Err(format!(
                "{}: with {} each target says its method (method = \"POST\")",
                spell("method"),
                spell("targets")
            ));
        }
        cfg.request = RequestSpec {
            method: self.method.clone(),
            headers,
            body,
        };
        cfg.mix = crate::mix::for_load(
            url,
            self.targets.as_deref(),
            &cfg.request,
            self.pool,
            self.seed,
        )
        .map_err(|e| match &self.targets {
            Some(_) => format!("{}: {e}", spell("targets")),
            None => e,
        })?;
        // Serialising also validates the method.
        cfg.request.serialize(&cfg.target).map_err(named)?;
        Ok(())
    }

    /// The TLS options, the client certificate checked before anything is
    /// sent.
    fn tls(&self, https: bool, spell: Spell) -> Result<TlsOptions, String> {
        if self.cacert.is_some() && self.insecure {
            return Err(format!(
                "{} and {}: choose one ({} accepts any certificate)",
                spell("cacert"),
                spell("insecure"),
                spell("insecure")
            ));
        }
        let tls = TlsOptions {
            insecure: self.insecure,
            ca_pem: read_pem(&self.cacert, &spell("cacert"))?,
            cert_pem: read_pem(&self.cert, &spell("cert"))?,
            key_pem: read_pem(&self.key, &spell("key"))?,
        };
        tls.check_client_cert()
            .map_err(|e| engine_error(&e, spell))?;
        if self.cert.is_some() && !https {
            return Err(format!(
                "{} and {}: apply to https:// URLs only",
                spell("cert"),
                spell("key")
            ));
        }
        Ok(tls)
    }
}

/// The target of `url` over the unix domain socket at `path`: a socket
/// that is not there is a mistake before anything runs, not a run of
/// failed connects.
pub fn unix_target(url: &str, path: &std::path::Path, spell: Spell) -> Result<Target, String> {
    use std::os::unix::fs::FileTypeExt;
    let name = spell("unix-socket");
    match std::fs::metadata(path) {
        Ok(m) if m.file_type().is_socket() => {
            fairbench_engine::Target::parse_unix(url, path).map_err(|e| engine_error(&e, spell))
        }
        Ok(_) => Err(format!(
            "{name}: {} is not a socket (expected the path a server listens on)",
            path.display()
        )),
        Err(e) => Err(format!("{name}: {}: {e}", path.display())),
    }
}

/// The contents of a certificate or key file, when one is given.
fn read_pem(path: &Option<PathBuf>, name: &str) -> Result<Option<Vec<u8>>, String> {
    path.as_ref()
        .map(|p| std::fs::read(p).map_err(|e| format!("{name}: cannot read {}: {e}", p.display())))
        .transpose()
}

/// The engine names its settings like `load`'s long flags; the caller's
/// spelling of the same option replaces that name.
pub fn engine_error(e: &ConfigError, spell: Spell) -> String {
    if e.field == "URL" {
        e.to_string()
    } else {
        format!("{}: {}", spell(&e.field), e.message)
    }
}

/// A routing rule that applies to none of `urls` is a mistake (a typo in a
/// host or a port), not something to ignore. Checked before any name is
/// looked up: such a rule is why a name would not resolve.
pub fn check_routes_used(urls: &[&str], routes: &Routes, spell: Spell) -> Result<(), String> {
    let pairs: Vec<(String, u16)> = urls
        .iter()
        .filter_map(|u| fairbench_engine::route::routed_by(&url::Url::parse(u).ok()?))
        .collect();
    let pairs: Vec<(&str, u16)> = pairs.iter().map(|(h, p)| (h.as_str(), *p)).collect();
    match routes.unused(&pairs).first() {
        Some(rule) => Err(format!(
            "{}: applies to no URL of this load ({})",
            respell(rule, spell),
            pairs
                .iter()
                .map(|(h, p)| format!("{h}:{p}"))
                .collect::<Vec<_>>()
                .join(", ")
        )),
        None => Ok(()),
    }
}

/// A rule as the engine prints it (`--connect-to A:1:B:2`), spelled as the
/// caller names the option.
fn respell(rule: &str, spell: Spell) -> String {
    for flag in ["connect-to", "resolve"] {
        if let Some(r) = rule.strip_prefix(&format!("--{flag} ")) {
            return format!("{} {r}", spell(flag));
        }
    }
    rule.to_string()
}
