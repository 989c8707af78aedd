//! TLS client settings, built once per run with rustls and its ring
//! provider: which certificates are trusted, the server name, ALPN
//! `http/1.1`, and the session cache that lets reconnections resume.

use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::Resumption;
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, ClientConnection, DigitallySignedStruct, RootCertStore};

use crate::config_error::ConfigError;
use crate::target::Target;

/// How the server's certificate is checked.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TlsOptions {
    /// Accept any certificate (the handshake's signatures are still
    /// checked, so the connection is real TLS, only not authenticated).
    pub insecure: bool,
    /// Trust these PEM certificates instead of the system's roots. The
    /// contents, not a path: a load agent on another host gets them too.
    #[serde(default, with = "crate::hex::option_bytes_as_hex")]
    pub ca_pem: Option<Vec<u8>>,
}

/// A run's TLS client: one configuration, shared by every connection of
/// every load thread, so that a session any of them made can be resumed by
/// any other.
#[derive(Clone)]
pub(crate) struct TlsClient {
    config: Arc<ClientConfig>,
    name: ServerName<'static>,
}

impl TlsClient {
    pub fn new(target: &Target, opts: &TlsOptions) -> Result<TlsClient, ConfigError> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| ConfigError::new("URL", format!("TLS set-up failed: {e}")))?;
        let mut config = if opts.insecure {
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(AnyCertificate(provider)))
                .with_no_client_auth()
        } else {
            builder
                .with_root_certificates(roots(opts)?)
                .with_no_client_auth()
        };
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        // The default: an in-memory cache of sessions (and TLS 1.3 tickets)
        // per server name; a reconnection resumes when the server allows.
        config.resumption = Resumption::default();
        let name = ServerName::try_from(target.host.clone()).map_err(|e| {
            ConfigError::new(
                "URL",
                format!("{:?} is not a valid TLS server name: {e}", target.host),
            )
        })?;
        Ok(TlsClient {
            config: Arc::new(config),
            name,
        })
    }

    /// The same settings offering `protocol` by ALPN. HTTP/2 offers
    /// `h2` and `http/1.1` both, so that a server without h2 says so by
    /// choosing the other (rather than by ignoring the offer or refusing
    /// the handshake), and the error can say what it offered.
    pub fn for_protocol(self, protocol: crate::Protocol) -> TlsClient {
        if !protocol.is_h2() {
            return self;
        }
        let mut c = (*self.config).clone();
        c.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        TlsClient {
            config: Arc::new(c),
            name: self.name,
        }
    }

    /// A new client session, its ClientHello queued to be written.
    pub fn session(&self) -> Result<ClientConnection, rustls::Error> {
        ClientConnection::new(self.config.clone(), self.name.clone())
    }

    /// The same settings with a session cache of its own: a check made
    /// before the run must not hand the run a session to resume.
    pub fn isolated(&self) -> TlsClient {
        let mut c = (*self.config).clone();
        c.resumption = Resumption::disabled();
        TlsClient {
            config: Arc::new(c),
            name: self.name.clone(),
        }
    }
}

fn roots(opts: &TlsOptions) -> Result<RootCertStore, ConfigError> {
    match &opts.ca_pem {
        Some(pem) => ca_roots(pem),
        None => {
            // Roots that cannot be parsed are skipped; with none at all every
            // handshake fails with "unknown issuer", which says what to do.
            let mut store = RootCertStore::empty();
            let found = rustls_native_certs::load_native_certs();
            store.add_parsable_certificates(found.certs);
            Ok(store)
        }
    }
}

/// The certificates of a `--cacert` file: at least one, every one usable.
pub(crate) fn ca_roots(pem: &[u8]) -> Result<RootCertStore, ConfigError> {
    let mut store = RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(pem) {
        let cert = cert.map_err(|e| {
            ConfigError::new("cacert", format!("is not a PEM certificate file: {e}"))
        })?;
        store.add(cert).map_err(|e| {
            ConfigError::new(
                "cacert",
                format!("holds a certificate that cannot be used: {e}"),
            )
        })?;
    }
    if store.is_empty() {
        return Err(ConfigError::new(
            "cacert",
            "holds no PEM certificate (-----BEGIN CERTIFICATE-----)",
        ));
    }
    Ok(store)
}

/// `--insecure`: every certificate is accepted, whoever it names and whoever
/// signed it; the handshake's own signatures are still verified.
#[derive(Debug)]
struct AnyCertificate(Arc<CryptoProvider>);

impl ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target() -> Target {
        Target::parse("https://127.0.0.1:8443/").unwrap()
    }

    #[test]
    fn a_ca_file_without_certificates_names_the_flag() {
        let opts = TlsOptions {
            insecure: false,
            ca_pem: Some(b"not a certificate\n".to_vec()),
        };
        let e = TlsClient::new(&target(), &opts).err().unwrap();
        assert_eq!(e.field, "cacert");
        assert!(e.message.contains("no PEM certificate"), "{e}");
    }

    #[test]
    fn a_damaged_pem_certificate_names_the_flag() {
        let opts = TlsOptions {
            insecure: false,
            ca_pem: Some(b"-----BEGIN CERTIFICATE-----\n!!!\n-----END CERTIFICATE-----\n".to_vec()),
        };
        let e = TlsClient::new(&target(), &opts).err().unwrap();
        assert_eq!(e.field, "cacert", "{e}");
    }

    #[test]
    fn sessions_offer_http11_only() {
        let c = TlsClient::new(
            &target(),
            &TlsOptions {
                insecure: true,
                ca_pem: None,
            },
        )
        .unwrap();
        assert_eq!(c.config.alpn_protocols, vec![b"http/1.1".to_vec()]);
        assert!(c.session().unwrap().is_handshaking());
    }
}
