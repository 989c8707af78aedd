//! The one certificate authority the tests make: a CA for the test and a
//! certificate it signs (valid, expired, for another name), or the classic
//! mistake of a self-signed CA certificate served as the server's own; and
//! the rustls server settings that use it. For mutual TLS, a CA that signs
//! a server's certificate and clients' as PEM files, for a real server
//! (nginx) to be given.

use std::sync::Arc;

use rcgen::{
    date_time_ymd, BasicConstraints, CertificateParams, CertifiedIssuer, DnType,
    ExtendedKeyUsagePurpose, IsCa, KeyPair,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::ServerConfig;

/// A CA made for the test and the server settings of a certificate it
/// signed (offering `http/1.1` by ALPN).
pub struct Pki {
    /// The CA certificate, PEM: what `--cacert` is given.
    pub ca_pem: String,
    pub server: Arc<ServerConfig>,
}

/// A certificate for `names`, signed by a CA of its own; `expired` makes it
/// valid only in the year 2000.
pub fn pki(names: &[&str], expired: bool) -> Pki {
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "fairbench test CA");
    let ca = CertifiedIssuer::self_signed(ca_params, ca_key).unwrap();
    let key = KeyPair::generate().unwrap();
    let mut params =
        CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>()).unwrap();
    if expired {
        params.not_before = date_time_ymd(2000, 1, 1);
        params.not_after = date_time_ymd(2000, 12, 31);
    }
    let cert = params.signed_by(&key, &ca).unwrap();
    Pki {
        ca_pem: ca.pem(),
        server: server_config(cert.der().to_vec(), &key),
    }
}

/// The mistake of a first TLS set-up: one self-signed CA certificate (as
/// `openssl req -x509` makes by default) served as the server's own, and
/// the same file given to --cacert.
pub fn ca_as_server(names: &[&str]) -> Pki {
    let mut params =
        CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let key = KeyPair::generate().unwrap();
    let cert = params.self_signed(&key).unwrap();
    Pki {
        ca_pem: cert.pem(),
        server: server_config(cert.der().to_vec(), &key),
    }
}

impl Pki {
    /// The server's settings offering `protocols` by ALPN instead.
    pub fn alpn(&self, protocols: &[&[u8]]) -> Arc<ServerConfig> {
        let mut c = (*self.server).clone();
        c.alpn_protocols = protocols.iter().map(|p| p.to_vec()).collect();
        Arc::new(c)
    }
}

fn server_config(cert_der: Vec<u8>, key: &KeyPair) -> Arc<ServerConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![CertificateDer::from(cert_der)],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
        )
        .unwrap();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Arc::new(config)
}

/// Writes `pem` as the file `--cacert` is given, in `dir`.
pub fn write_ca(dir: &tempfile::TempDir, pem: &str) -> String {
    let p = dir.path().join("ca.pem");
    std::fs::write(&p, pem).unwrap();
    p.to_str().unwrap().to_string()
}

/// The key of a client certificate: made here, or read from PEM (RSA,
/// which rcgen with ring cannot generate: see [`openssl_rsa_key`]).
pub enum ClientKey<'a> {
    Ecdsa,
    Ed25519,
    Pem(&'a str),
}

/// A CA that signed a server's certificate and signs clients' (what
/// nginx's `ssl_client_certificate` is given), all PEM.
pub struct MtlsPki {
    pub ca_pem: String,
    pub server_cert_pem: String,
    pub server_key_pem: String,
    ca: CertifiedIssuer<'static, KeyPair>,
}

/// A CA named `ca_name` and a server certificate it signed for `names`.
pub fn mtls_pki(ca_name: &str, names: &[&str]) -> MtlsPki {
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, ca_name);
    let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate().unwrap()).unwrap();
    let key = KeyPair::generate().unwrap();
    let params =
        CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>()).unwrap();
    let cert = params.signed_by(&key, &ca).unwrap();
    MtlsPki {
        ca_pem: ca.pem(),
        server_cert_pem: cert.pem(),
        server_key_pem: key.serialize_pem(),
        ca,
    }
}

impl MtlsPki {
    /// A client certificate this CA signed, and its key: (certificate PEM,
    /// key PEM, PKCS#8 unless given otherwise).
    pub fn client(&self, key: ClientKey<'_>) -> (String, String) {
        let key = match key {
            ClientKey::Ecdsa => KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap(),
            ClientKey::Ed25519 => KeyPair::generate_for(&rcgen::PKCS_ED25519).unwrap(),
            ClientKey::Pem(pem) => KeyPair::from_pem(pem).unwrap(),
        };
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params
            .distinguished_name
            .push(DnType::CommonName, "fairbench test client");
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        let cert = params.signed_by(&key, &self.ca).unwrap();
        (cert.pem(), key.serialize_pem())
    }

    /// The rustls server settings of this CA's server certificate,
    /// requiring a client certificate it signed: a server that refuses in
    /// the handshake (by an alert), where nginx refuses in HTTP.
    pub fn requiring_client(&self) -> Pki {
        use rustls::pki_types::pem::PemObject;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut roots = rustls::RootCertStore::empty();
        roots
            .add(CertificateDer::from_pem_slice(self.ca_pem.as_bytes()).unwrap())
            .unwrap();
        let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
            Arc::new(roots),
            provider.clone(),
        )
        .build()
        .unwrap();
        let mut config = ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_client_cert_verifier(verifier)
            .with_single_cert(
                vec![CertificateDer::from_pem_slice(self.server_cert_pem.as_bytes()).unwrap()],
                PrivateKeyDer::from_pem_slice(self.server_key_pem.as_bytes()).unwrap(),
            )
            .unwrap();
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Pki {
            ca_pem: self.ca_pem.clone(),
            server: Arc::new(config),
        }
    }
}

/// A 2048-bit RSA key as `openssl genrsa` makes it (PKCS#8 PEM); `None`
/// where openssl is not installed.
pub fn openssl_rsa_key() -> Option<String> {
    let out = std::process::Command::new("openssl")
        .args(["genrsa", "2048"])
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8(out.stdout).unwrap())
}

/// The same RSA key in the traditional PKCS#1 form (`BEGIN RSA PRIVATE
/// KEY`, as OpenSSL 1.x wrote it), by openssl.
pub fn rsa_pkcs1(dir: &tempfile::TempDir, pkcs8: &str) -> String {
    let input = dir.path().join("rsa-pkcs8.key");
    std::fs::write(&input, pkcs8).unwrap();
    let out = std::process::Command::new("openssl")
        .args(["rsa", "-traditional", "-in"])
        .arg(&input)
        .stderr(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "openssl rsa -traditional failed");
    String::from_utf8(out.stdout).unwrap()
}
