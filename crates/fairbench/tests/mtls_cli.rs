//! `fairbench load --cert FILE --key FILE` against nginx requiring a client
//! certificate (`ssl_verify_client on`), with TLS 1.2 and 1.3: RSA, ECDSA
//! and Ed25519 certificates accepted, sessions still resumed; no
//! certificate, or one from another CA, refused in one line; unusable
//! files refused as usage errors before anything is sent.

mod support;

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fairbench_testkit::pki::{mtls_pki, openssl_rsa_key, rsa_pkcs1, ClientKey, MtlsPki};
use support::load::{json, run, Server, HELLO};

const NGINX: &str = "/usr/sbin/nginx";

/// nginx serving `hello` over TLS on a loopback port, requiring a client
/// certificate signed by its CA; stopped when dropped.
struct Nginx {
    child: Child,
    port: u16,
    dir: tempfile::TempDir,
}

impl Nginx {
    /// `None` (and a note) where nginx is not installed, except in CI.
    fn start(pki: &MtlsPki, protocols: &str) -> Option<Nginx> {
        if !Path::new(NGINX).exists() {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "CI=true: nginx must be installed (scripts/setup-test-deps.sh)"
            );
            eprintln!("skipped: {NGINX} is not installed");
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().display();
        for (name, pem) in [
            ("ca.pem", &pki.ca_pem),
            ("server.pem", &pki.server_cert_pem),
            ("server.key", &pki.server_key_pem),
        ] {
            std::fs::write(dir.path().join(name), pem).unwrap();
        }
        let port = fairbench_sys::process::free_port().unwrap();
        let conf = format!(
            "error_log {d}/error.log info;\npid {d}/nginx.pid;\ndaemon off;\nmaster_process off;\n\
             events {{ worker_connections 256; }}\n\
             http {{\n  access_log off;\n\
               client_body_temp_path {d}/body; proxy_temp_path {d}/proxy;\n\
               fastcgi_temp_path {d}/fastcgi; uwsgi_temp_path {d}/uwsgi; scgi_temp_path {d}/scgi;\n\
               server {{\n    listen 127.0.0.1:{port} ssl;\n\
                 ssl_certificate {d}/server.pem;\n    ssl_certificate_key {d}/server.key;\n\
                 ssl_client_certificate {d}/ca.pem;\n    ssl_verify_client on;\n\
                 ssl_protocols {protocols};\n    ssl_session_cache shared:mtls:1m;\n\
                 location / {{ return 200 \"hello\\n\"; }}\n  }}\n}}\n"
        );
        let conf_path = dir.path().join("nginx.conf");
        std::fs::write(&conf_path, conf).unwrap();
        let child = Command::new(NGINX)
            .arg("-p")
            .arg(dir.path())
            .arg("-c")
            .arg(&conf_path)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let nginx = Nginx { child, port, dir };
        nginx.wait_listening();
        Some(nginx)
    }

    fn wait_listening(&self) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            if Instant::now() > deadline {
                let log = std::fs::read_to_string(self.dir.path().join("error.log"));
                panic!("nginx did not listen on {}: {log:?}", self.port);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn url(&self) -> String {
        format!("https://127.0.0.1:{}/", self.port)
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Writes `contents` as `name` in `dir`; its path.
fn file(dir: &tempfile::TempDir, name: &str, contents: &str) -> String {
    let p: PathBuf = dir.path().join(name);
    std::fs::write(&p, contents).unwrap();
    p.to_str().unwrap().to_string()
}

/// A CA, an ECDSA client certificate it signed, and their files.
struct Client {
    pki: MtlsPki,
    _dir: tempfile::TempDir,
    ca: String,
    cert: String,
    key: String,
}

impl Client {
    fn ecdsa() -> Client {
        let pki = mtls_pki("fairbench mTLS CA", &["127.0.0.1"]);
        let dir = tempfile::tempdir().unwrap();
        let ca = file(&dir, "ca.pem", &pki.ca_pem);
        let (cert_pem, key_pem) = pki.client(ClientKey::Ecdsa);
        let cert = file(&dir, "client.pem", &cert_pem);
        let key = file(&dir, "client.key", &key_pem);
        Client {
            pki,
            _dir: dir,
            ca,
            cert,
            key,
        }
    }
}

fn load(url: &str, extra: &[&str]) -> (i32, String, String) {
    let mut args = vec!["load", "--json", "-n", "40", "-c", "2", "-t", "1"];
    args.extend_from_slice(extra);
    args.push(url);
    run(&args)
}

#[test]
fn client_certificates_are_accepted_with_tls_12_and_13() {
    let pki = mtls_pki("fairbench mTLS CA", &["127.0.0.1"]);
    let dir = tempfile::tempdir().unwrap();
    let ca = file(&dir, "ca.pem", &pki.ca_pem);
    let rsa = openssl_rsa_key();
    if rsa.is_none() {
        eprintln!("no openssl: RSA client certificate not tried");
    }
    for protocols in ["TLSv1.2", "TLSv1.3"] {
        let Some(nginx) = Nginx::start(&pki, protocols) else {
            return;
        };
        let mut keys = vec![("ecdsa", ClientKey::Ecdsa), ("ed25519", ClientKey::Ed25519)];
        if let Some(rsa) = &rsa {
            keys.push(("rsa", ClientKey::Pem(rsa)));
        }
        for (kind, key) in keys {
            let (cert_pem, key_pem) = pki.client(key);
            let key_pem = match kind {
                // The traditional form, as `openssl genrsa` of OpenSSL 1.x wrote it.
                "rsa" => rsa_pkcs1(&dir, &key_pem),
                _ => key_pem,
            };
            let cert = file(&dir, "client.pem", &cert_pem);
            let key = file(&dir, "client.key", &key_pem);
            let (code, out, err) = load(
                &nginx.url(),
                &["--cacert", &ca, "--cert", &cert, "--key", &key],
            );
            assert_eq!(code, 0, "{protocols} {kind}: {err}");
            let j = json(&out);
            assert_eq!(j["ledger"]["answered"], 40, "{protocols} {kind}: {out}");
            assert_eq!(j["status_codes"]["200"], 40, "{protocols} {kind}: {out}");
            // One file holding both, as curl allows.
            let both = file(&dir, "both.pem", &format!("{cert_pem}{key_pem}"));
            let (code, out, err) = load(&nginx.url(), &["--cacert", &ca, "--cert", &both]);
            assert_eq!(code, 0, "{protocols} {kind}: {err}");
            assert_eq!(
                json(&out)["status_codes"]["200"],
                40,
                "{protocols} {kind}: {out}"
            );
        }
    }
}

#[test]
fn both_sides_of_vs_give_the_certificate() {
    let Client {
        pki,
        _dir,
        ca,
        cert,
        key,
    } = Client::ecdsa();
    let Some(nginx) = Nginx::start(&pki, "TLSv1.3") else {
        return;
    };
    let b = format!("{}b", nginx.url());
    let (code, out, err) = load(
        &nginx.url(),
        &["--cacert", &ca, "--cert", &cert, "--key", &key, "--vs", &b],
    );
    assert_eq!(code, 0, "{err}");
    let j = json(&out);
    for side in ["a_runs", "b_runs"] {
        let runs = j["vs"][side].as_array().unwrap();
        assert!(!runs.is_empty(), "{out}");
        for r in runs {
            assert_eq!(
                (r["requests"].as_u64(), r["errors"].as_u64()),
                (Some(40), Some(0)),
                "{out}"
            );
        }
    }
}

#[test]
fn sessions_are_resumed_with_a_client_certificate() {
    let Client {
        pki,
        _dir,
        ca,
        cert,
        key,
    } = Client::ecdsa();
    for protocols in ["TLSv1.2", "TLSv1.3"] {
        let Some(nginx) = Nginx::start(&pki, protocols) else {
            return;
        };
        let (code, out, err) = load(
            &nginx.url(),
            &[
                "--cacert",
                &ca,
                "--cert",
                &cert,
                "--key",
                &key,
                "--no-keepalive",
            ],
        );
        assert_eq!(code, 0, "{protocols}: {err}");
        let j = json(&out);
        assert_eq!(j["status_codes"]["200"], 40, "{protocols}: {out}");
        let s = &j["connections_stats"];
        assert_eq!(s["tls_handshakes"], 40, "{protocols}: {s}");
        // Only the first of each connection slot is a full handshake (two
        // at once); allow a few more.
        assert!(s["tls_resumed"].as_u64().unwrap() >= 30, "{protocols}: {s}");
    }
}

#[test]
fn a_refused_or_missing_certificate_is_one_line_and_exit_1() {
    let pki = mtls_pki("fairbench mTLS CA", &["127.0.0.1"]);
    let other = mtls_pki("another CA", &["127.0.0.1"]);
    let dir = tempfile::tempdir().unwrap();
    let ca = file(&dir, "ca.pem", &pki.ca_pem);
    let (cert_pem, key_pem) = other.client(ClientKey::Ecdsa);
    let cert = file(&dir, "other.pem", &cert_pem);
    let key = file(&dir, "other.key", &key_pem);
    for protocols in ["TLSv1.2", "TLSv1.3"] {
        let Some(nginx) = Nginx::start(&pki, protocols) else {
            return;
        };
        let (code, out, err) = load(&nginx.url(), &["--cacert", &ca]);
        assert_eq!(code, 1, "{protocols}: {out}{err}");
        assert_eq!(err.trim().lines().count(), 1, "{protocols}: {err}");
        assert!(
            err.contains("asked for a client certificate")
                && err.contains("--cert FILE --key FILE"),
            "{protocols}: {err}"
        );
        let (code, out, err) = load(
            &nginx.url(),
            &["--cacert", &ca, "--cert", &cert, "--key", &key],
        );
        assert_eq!(code, 1, "{protocols}: {out}{err}");
        assert_eq!(err.trim().lines().count(), 1, "{protocols}: {err}");
        assert!(
            err.contains("refused the client certificate given by --cert"),
            "{protocols}: {err}"
        );
    }
}

#[test]
fn unusable_certificate_and_key_files_are_usage_errors() {
    let pki = mtls_pki("fairbench mTLS CA", &["127.0.0.1"]);
    let dir = tempfile::tempdir().unwrap();
    let (cert_pem, key_pem) = pki.client(ClientKey::Ecdsa);
    let (_, other_key) = pki.client(ClientKey::Ecdsa);
    let cert = file(&dir, "client.pem", &cert_pem);
    let key = file(&dir, "client.key", &key_pem);
    let garbage = file(&dir, "garbage.pem", "hello\n");
    let wrong = file(&dir, "wrong.key", &other_key);
    let url = "https://127.0.0.1:1/";
    for (args, needle) in [
        (vec!["--key", key.as_str()], "--cert"),
        (
            vec!["--cert", cert.as_str()],
            "--cert: holds a certificate but no private key",
        ),
        (
            vec!["--cert", garbage.as_str(), "--key", key.as_str()],
            "--cert: holds no PEM certificate",
        ),
        (
            vec!["--cert", cert.as_str(), "--key", garbage.as_str()],
            "--key: holds no unencrypted PEM private key",
        ),
        (
            vec!["--cert", cert.as_str(), "--key", wrong.as_str()],
            "--key: the private key does not belong to the --cert certificate",
        ),
        (
            vec!["--cert", "/nonexistent/c.pem", "--key", key.as_str()],
            "--cert: cannot read /nonexistent/c.pem",
        ),
    ] {
        let mut all = vec!["load"];
        all.extend_from_slice(&args);
        all.push(url);
        let (code, _, err) = run(&all);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
    }
    // Plain http:// has no use for them.
    let (code, _, err) = run(&[
        "load",
        "--cert",
        &cert,
        "--key",
        &key,
        "http://127.0.0.1:1/",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("https:// URLs only"), "{err}");
}

#[test]
fn a_server_refusing_in_the_handshake_is_one_line_too() {
    // rustls refuses by an alert, with TLS 1.3 only after the client's
    // handshake is done: the check before the run waits for it.
    let pki = mtls_pki("fairbench mTLS CA", &["127.0.0.1"]);
    let other = mtls_pki("another CA", &["127.0.0.1"]);
    let srv = Server::tls(HELLO, &pki.requiring_client());
    let dir = tempfile::tempdir().unwrap();
    let ca = file(&dir, "ca.pem", &pki.ca_pem);
    let (code, out, err) = load(&srv.url(), &["--cacert", &ca]);
    assert_eq!(code, 1, "{out}{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("asked for a client certificate and refused the connection without one")
            && err.contains("CertificateRequired"),
        "{err}"
    );
    let (cert_pem, key_pem) = other.client(ClientKey::Ecdsa);
    let cert = file(&dir, "other.pem", &cert_pem);
    let key = file(&dir, "other.key", &key_pem);
    let (code, out, err) = load(
        &srv.url(),
        &["--cacert", &ca, "--cert", &cert, "--key", &key],
    );
    assert_eq!(code, 1, "{out}{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("refused the client certificate given by --cert"),
        "{err}"
    );
    let (cert_pem, key_pem) = pki.client(ClientKey::Ed25519);
    let cert = file(&dir, "client.pem", &cert_pem);
    let key = file(&dir, "client.key", &key_pem);
    let (code, out, err) = load(
        &srv.url(),
        &["--cacert", &ca, "--cert", &cert, "--key", &key],
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(json(&out)["status_codes"]["200"], 40, "{out}");
}
