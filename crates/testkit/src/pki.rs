//! The one certificate authority the tests make: a CA for the test and a
//! certificate it signs (valid, expired, for another name), or the classic
//! mistake of a self-signed CA certificate served as the server's own; and
//! the rustls server settings that use it.

use std::sync::Arc;

use rcgen::{
    date_time_ymd, BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair,
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
