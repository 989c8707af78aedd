//! From a variant to a process spec: the run command with placeholders
//! filled and the environment of the server contract (docs/server-manifest.md).

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

use crate::manifest::{ResponseKind, Server, Socket};
use crate::placeholder;
use crate::Protocol;
use fairbench_sys::process::ServerSpec;

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
    /// `UNIX_SOCKET`: the path to listen on instead of `PORT` (which is
    /// then not given), for a server whose manifest lists `unix`.
    pub unix_socket: Option<PathBuf>,
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
    #[error("{server} cannot listen on a unix socket: {reason}")]
    Socket { server: String, reason: String },
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
    if p.unix_socket.is_some() && !server.listens(Socket::Unix) {
        return Err(LaunchError::Socket {
            server: server.name.clone(),
            reason: server.why_not_listen(Socket::Unix),
        });
    }
    let v = values(server, mode_name, response, p);

    // One listening socket: a server told UNIX_SOCKET has no PORT to
    // fall back on, so that a wrong one fails its readiness check.
    let listen = match &p.unix_socket {
        Some(_) => ("UNIX_SOCKET", v["unix_socket"].clone()),
        None => ("PORT", v["port"].clone()),
    };
    let mut env: Vec<(String, String)> = vec![
        (listen.0.into(), listen.1),
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
    // Over a unix socket there is no port: `{port}` is empty, as
    // `{unix_socket}` is over TCP.
    let port = p.port.to_string();
    v.insert(
        "port",
        p.unix_socket.as_ref().map_or(port, |_| String::new()),
    );
    let socket = p.unix_socket.as_ref().map(|x| x.display().to_string());
    v.insert("unix_socket", socket.unwrap_or_default());
    v.insert("cores", p.cores.to_string());
    v.insert("scenario", p.scenario.clone());
    v.insert("response", response.as_str().to_string());
    v.insert("mode", mode_name.to_string());
    v.insert("conf", p.conf_dir.display().to_string());
    v.insert("protocol", p.protocol.as_str().to_string());
    v.insert("protocol_tag", protocol_tag(p.protocol).to_string());
    let tls = p.tls.as_ref().filter(|_| p.protocol.tls());
    let shown = |path: Option<&PathBuf>| path.map(|x| x.display().to_string()).unwrap_or_default();
    v.insert("tls_cert", shown(tls.map(|t| &t.cert)));
    v.insert("tls_key", shown(tls.map(|t| &t.key)));
    v
}

/// The protocol spelled for a file name: a config that differs by protocol
/// (nginx's listen lines) includes `{conf}/NAME-{protocol_tag}.conf`, and
/// `http/1.1`'s slash would make that a folder.
fn protocol_tag(p: Protocol) -> &'static str {
    match p {
        Protocol::Http1 => "http1",
        Protocol::H2c => "h2c",
        Protocol::H2 => "h2",
        Protocol::H3 => "h3",
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn server(protocols: &str, unsupported: &str) -> (tempfile::TempDir, Server) {
        let dir = tempfile::tempdir().unwrap();
        let sdir = dir.path().join("demo");
        std::fs::create_dir(&sdir).unwrap();
        std::fs::write(
            sdir.join("server.toml"),
            format!(
                "name = \"demo\"\nlanguage = \"Go\"\nframework = \"x\"\nframework_version = \"1\"\n{protocols}\n\
                 [toolchain]\nname = \"go\"\nprobe = [\"go\", \"version\"]\n\
                 [modes.native]\nrun = [\"{{out}}/server\", \"--proto={{protocol}}\", \"--cert={{tls_cert}}\"]\n\
                 [responses.default]\n[responses.normalized]\n\
                 [protocols_unsupported]\n{unsupported}\n"
            ),
        )
        .unwrap();
        let s = Server::load(&sdir, std::path::Path::new("servers/demo/server.toml")).unwrap();
        (dir, s)
    }

    fn params(protocol: Protocol, tls: Option<TlsFiles>) -> LaunchParams {
        LaunchParams {
            port: 8080,
            scenario: "static".into(),
            cores: 1,
            cpus: None,
            out_dir: "/o".into(),
            conf_dir: "/c".into(),
            log_path: "/l".into(),
            stop_grace: Duration::from_secs(1),
            extra_env: Vec::new(),
            protocol,
            tls,
            unix_socket: None,
        }
    }

    fn env<'a>(spec: &'a ServerSpec, name: &str) -> Option<&'a str> {
        spec.env
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    #[test]
    fn protocol_and_certificate_reach_the_server_only_when_served() {
        let files = || TlsFiles {
            cert: "/pki/server.crt".into(),
            key: "/pki/server.key".into(),
        };
        let (_d, s) = server(
            "protocols = [\"http/1.1\", \"h2c\"]",
            "h2 = \"no TLS here\"",
        );
        let spec = super::spec(
            &s,
            "native",
            ResponseKind::Default,
            &params(Protocol::H2c, Some(files())),
        )
        .unwrap();
        assert_eq!(env(&spec, "PROTOCOL"), Some("h2c"));
        assert_eq!(env(&spec, "TLS_CERT"), None, "no certificate without TLS");
        assert_eq!(spec.argv[1..], ["--proto=h2c", "--cert="]);
        let e = super::spec(
            &s,
            "native",
            ResponseKind::Default,
            &params(Protocol::H2, Some(files())),
        )
        .unwrap_err()
        .to_string();
        assert_eq!(e, "demo does not serve h2: no TLS here");

        let (_d, s) = server("protocols = [\"http/1.1\", \"h2\"]", "");
        let spec = super::spec(
            &s,
            "native",
            ResponseKind::Default,
            &params(Protocol::H2, Some(files())),
        )
        .unwrap();
        assert_eq!(env(&spec, "PROTOCOL"), Some("h2"));
        assert_eq!(env(&spec, "TLS_CERT"), Some("/pki/server.crt"));
        assert_eq!(env(&spec, "TLS_KEY"), Some("/pki/server.key"));
        assert_eq!(spec.argv[2], "--cert=/pki/server.crt");
        let e = super::spec(
            &s,
            "native",
            ResponseKind::Default,
            &params(Protocol::H2, None),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("needs the run's certificate"), "{e}");
    }

    #[test]
    fn a_unix_socket_replaces_the_port_only_where_the_server_listens_on_one() {
        let (_d, s) = server("sockets = [\"tcp\", \"unix\"]", "");
        let mut p = params(Protocol::Http1, None);
        p.unix_socket = Some("/w/1.sock".into());
        let spec = super::spec(&s, "native", ResponseKind::Default, &p).unwrap();
        assert_eq!(env(&spec, "UNIX_SOCKET"), Some("/w/1.sock"));
        assert_eq!(env(&spec, "PORT"), None, "one listening socket");
        let tcp = super::spec(
            &s,
            "native",
            ResponseKind::Default,
            &params(Protocol::Http1, None),
        )
        .unwrap();
        assert_eq!(env(&tcp, "PORT"), Some("8080"));
        assert_eq!(env(&tcp, "UNIX_SOCKET"), None);

        let (_d, s) = server("", "");
        let e = super::spec(&s, "native", ResponseKind::Default, &p)
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "demo cannot listen on a unix socket: not in its server.toml's sockets (tcp)"
        );
    }
}
