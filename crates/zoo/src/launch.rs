//! From a variant to a process spec: the run command with placeholders
//! filled and the environment of the server contract (docs/server-manifest.md).

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

use crate::manifest::{ResponseKind, Server};
use crate::placeholder;
use crate::process::ServerSpec;
use crate::protocol::Protocol;

/// What varies per start of a server.
#[derive(Debug, Clone)]
pub struct LaunchParams {
    pub port: u16,
    pub scenario: String,
    /// `CORES`: how many workers the server should use.
    pub cores: usize,
    /// CPUs to pin to; when given, `cores` should be its length.
    pub cpus: Option<Vec<usize>>,
    /// The mode's build output (`BuildOutcome::out_dir`).
    pub out_dir: PathBuf,
    /// `{conf}`: where the mode's templates are written for this start.
    pub conf_dir: PathBuf,
    pub log_path: PathBuf,
    pub stop_grace: Duration,
    /// Added last, overriding everything else (e.g. a test's marker).
    pub extra_env: Vec<(String, String)>,
    /// `PROTOCOL`: what the server is to serve on `port`.
    pub protocol: Protocol,
    /// `TLS_CERT` and `TLS_KEY` (PEM files, the chain then the key) for h2
    /// over TLS: the run CA's certificate (crate::pki).
    pub tls: Option<TlsFiles>,
}

#[derive(Debug, Clone)]
pub struct TlsFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
}

#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    #[error("no mode named {0}")]
    UnknownMode(String),
    #[error("mode {mode} is unsupported: {reason}")]
    Unsupported { mode: String, reason: String },
    #[error("{file}: {message}")]
    Template { file: String, message: String },
    #[error("{server} does not serve {protocol}: {reason}")]
    Protocol {
        server: String,
        protocol: Protocol,
        reason: String,
    },
    #[error("{0} over TLS needs the run's certificate, and none was made")]
    NoCertificate(Protocol),
}

/// The process spec for `mode`/`response` of `server`.
pub fn spec(
    server: &Server,
    mode_name: &str,
    response: ResponseKind,
    p: &LaunchParams,
) -> Result<ServerSpec, LaunchError> {
    let mode = server
        .modes
        .get(mode_name)
        .ok_or_else(|| LaunchError::UnknownMode(mode_name.to_string()))?;
    let run = match (&mode.run, &mode.unsupported) {
        (Some(run), None) => run,
        (_, reason) => {
            return Err(LaunchError::Unsupported {
                mode: mode_name.to_string(),
                reason: reason.clone().unwrap_or_default(),
            })
        }
    };
    if !server.serves(p.protocol) {
        return Err(LaunchError::Protocol {
            server: server.name.clone(),
            protocol: p.protocol,
            reason: server.why_not(p.protocol),
        });
    }
    if p.protocol.tls() && p.tls.is_none() {
        return Err(LaunchError::NoCertificate(p.protocol));
    }
    let v = values(server, mode_name, response, p);

    let mut env: Vec<(String, String)> = vec![
        ("PORT".into(), v["port"].clone()),
        ("SCENARIO".into(), v["scenario"].clone()),
        ("CORES".into(), v["cores"].clone()),
        ("RESPONSE".into(), v["response"].clone()),
        ("MODE".into(), v["mode"].clone()),
        ("FILES_DIR".into(), v["files"].clone()),
        ("PROTOCOL".into(), v["protocol"].clone()),
    ];
    if p.protocol.tls() {
        env.push(("TLS_CERT".into(), v["tls_cert"].clone()));
        env.push(("TLS_KEY".into(), v["tls_key"].clone()));
    }
    let sub = |(k, val): (&String, &String)| (k.clone(), placeholder::substitute(val, &v));
    env.extend(mode.env.iter().map(sub));
    env.extend(server.response(response).env.iter().map(sub));
    env.extend(p.extra_env.iter().cloned());

    let mut spec = ServerSpec::new(
        run.iter().map(|a| placeholder::substitute(a, &v)).collect(),
        server.dir.clone(),
        p.log_path.clone(),
    );
    spec.env = env;
    spec.cpus = p.cpus.clone();
    spec.stop_grace = p.stop_grace;
    Ok(spec)
}

/// Every placeholder's value for one start.
fn values<'a>(
    server: &Server,
    mode_name: &str,
    response: ResponseKind,
    p: &LaunchParams,
) -> HashMap<&'a str, String> {
    let mut v: HashMap<&str, String> = HashMap::new();
    v.insert("dir", server.dir.display().to_string());
    v.insert("out", p.out_dir.display().to_string());
    v.insert("files", server.files_dir.display().to_string());
    v.insert("port", p.port.to_string());
    v.insert("cores", p.cores.to_string());
    v.insert("scenario", p.scenario.clone());
    v.insert("response", response.as_str().to_string());
    v.insert("mode", mode_name.to_string());
    v.insert("conf", p.conf_dir.display().to_string());
    v.insert("protocol", p.protocol.as_str().to_string());
    let tls = |f: fn(&TlsFiles) -> &PathBuf| {
        p.tls
            .as_ref()
            .filter(|_| p.protocol.tls())
            .map(|t| f(t).display().to_string())
            .unwrap_or_default()
    };
    v.insert("tls_cert", tls(|t| &t.cert));
    v.insert("tls_key", tls(|t| &t.key));
    v
}

/// Writes the mode's templates, placeholders filled, to `p.conf_dir`: the
/// config files a server reads its port (and cores, scenario, ...) from.
/// Nothing is written for a mode without templates.
pub fn render_templates(
    server: &Server,
    mode_name: &str,
    response: ResponseKind,
    p: &LaunchParams,
) -> Result<(), LaunchError> {
    let Some(mode) = server.modes.get(mode_name) else {
        return Err(LaunchError::UnknownMode(mode_name.to_string()));
    };
    if mode.templates.is_empty() {
        return Ok(());
    }
    let v = values(server, mode_name, response, p);
    let failed = |file: &str, e: std::io::Error| LaunchError::Template {
        file: file.to_string(),
        message: e.to_string(),
    };
    std::fs::create_dir_all(&p.conf_dir)
        .map_err(|e| failed(&p.conf_dir.display().to_string(), e))?;
    for name in &mode.templates {
        let text = std::fs::read_to_string(server.dir.join(name)).map_err(|e| failed(name, e))?;
        std::fs::write(p.conf_dir.join(name), placeholder::substitute(&text, &v))
            .map_err(|e| failed(name, e))?;
    }
    Ok(())
}
