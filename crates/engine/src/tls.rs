//! TLS client settings, built once per run with rustls and its ring
//! provider: which certificates are trusted, the client certificate given
//! to servers that ask for one, the server name, ALPN `http/1.1`, and the
//! session cache that lets reconnections resume.

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::{ResolvesClientCert, Resumption};
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::pem::{self, PemObject};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::sign::CertifiedKey;
use rustls::{
    ClientConfig, ClientConnection, DigitallySignedStruct, ProtocolVersion, RootCertStore,
};

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
    /// The client certificate (chain) given to a server that asks for one,
    /// PEM contents (`--cert`).
    #[serde(default, with = "crate::hex::option_bytes_as_hex")]
    pub cert_pem: Option<Vec<u8>>,
    /// The private key of `cert_pem`, PEM contents (`--key`); without it,
    /// the key is taken from `cert_pem` (one file holding both, as curl
    /// allows).
    #[serde(default, with = "crate::hex::option_bytes_as_hex")]
    pub key_pem: Option<Vec<u8>>,
}

impl TlsOptions {
    /// The client certificate and key read as they will be used: checked
    /// before the run, so that a bad file is a usage error rather than a
    /// failed run.
    pub fn check_client_cert(&self) -> Result<(), ConfigError> {
        let provider = rustls::crypto::ring::default_provider();
        client_key(self, &provider).map(|_| ())
    }
}

/// The longest the check before the run waits for a TLS 1.3 server's
/// verdict on the client's certificate: servers that ask for one send their
/// verdict (a ticket or an alert) at once.
const VERDICT_WAIT: Duration = Duration::from_secs(1);

/// A run's TLS client: one configuration, shared by every connection of
/// every load thread, so that a session any of them made can be resumed by
/// any other.
#[derive(Clone)]
pub(crate) struct TlsClient {
    config: Arc<ClientConfig>,
    name: ServerName<'static>,
    client_cert: Arc<ClientCert>,
}

impl TlsClient {
    pub fn new(target: &Target, opts: &TlsOptions) -> Result<TlsClient, ConfigError> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| ConfigError::new("URL", format!("TLS set-up failed: {e}")))?;
        let client_cert = Arc::new(ClientCert {
            key: client_key(opts, &provider)?,
            asked: AtomicBool::new(false),
        });
        let builder = if opts.insecure {
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(AnyCertificate(provider)))
        } else {
            builder.with_root_certificates(roots(opts)?)
        };
        let mut config = builder.with_client_cert_resolver(client_cert.clone());
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
            client_cert,
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
            client_cert: self.client_cert,
        }
    }

    /// The same settings for QUIC (`h3`): TLS 1.3, which is all QUIC
    /// speaks, offering only `h3` by ALPN; the certificate checks
    /// (`--insecure`, `--cacert`, a client certificate) are these.
    pub fn quic(&self) -> Result<Arc<quinn_proto::crypto::rustls::QuicClientConfig>, String> {
        let mut c = (*self.config).clone();
        c.alpn_protocols = vec![b"h3".to_vec()];
        quinn_proto::crypto::rustls::QuicClientConfig::try_from(c)
            .map(Arc::new)
            .map_err(|e| format!("QUIC's TLS set-up failed: {e}"))
    }

    /// [`TlsClient::quic`] with 0-RTT: early data enabled, and sessions
    /// kept in `store` (which decides which tickets a connection resumes).
    pub fn quic_early(
        &self,
        store: Arc<dyn rustls::client::ClientSessionStore>,
    ) -> Result<Arc<quinn_proto::crypto::rustls::QuicClientConfig>, String> {
        let mut c = (*self.config).clone();
        c.alpn_protocols = vec![b"h3".to_vec()];
        c.enable_early_data = true;
        c.resumption = Resumption::store(store);
        quinn_proto::crypto::rustls::QuicClientConfig::try_from(c)
            .map(Arc::new)
            .map_err(|e| format!("QUIC's TLS set-up failed: {e}"))
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
            client_cert: self.client_cert.clone(),
        }
    }

    /// Whether a server has asked this client for a certificate (whether
    /// or not it was given one).
    pub fn certificate_asked(&self) -> bool {
        self.client_cert.asked.load(Ordering::Relaxed)
    }

    /// Whether this client has a certificate to give.
    pub fn has_certificate(&self) -> bool {
        self.client_cert.key.is_some()
    }

    /// With TLS 1.3 a server that asked for a client certificate refuses
    /// it (or its absence) only after the client's handshake is done, by an
    /// alert where its first session ticket would be: this waits (at most
    /// `wait`) for whichever comes first, so that a refusal is known before
    /// the run rather than as every request failing.
    pub fn await_verdict(
        &self,
        conn: &mut ClientConnection,
        tcp: &mut std::net::TcpStream,
        wait: Duration,
    ) -> io::Result<()> {
        if !self.certificate_asked() || conn.protocol_version() != Some(ProtocolVersion::TLSv1_3) {
            return Ok(());
        }
        tcp.set_read_timeout(Some(wait.min(VERDICT_WAIT)))?;
        let read = conn.complete_io(tcp);
        tcp.set_read_timeout(Some(wait))?;
        match read {
            Err(e)
                if !matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                Err(e)
            }
            // A server that sends no ticket says nothing: it accepted.
            _ => Ok(()),
        }
    }

    /// A handshake refused by an alert from a server that asked for a
    /// client certificate, in words naming the flags; `None` for any other
    /// error.
    pub fn refusal(&self, e: &io::Error) -> Option<String> {
        let tls = e.get_ref()?.downcast_ref::<rustls::Error>()?;
        let rustls::Error::AlertReceived(alert) = tls else {
            return None;
        };
        if !self.certificate_asked() {
            return None;
        }
        Some(if self.has_certificate() {
            format!("the server refused the client certificate given by --cert (alert {alert:?}): is it signed by a CA the server trusts (nginx: ssl_client_certificate), valid today and meant for client authentication?")
        } else {
            format!("the server asked for a client certificate and refused the connection without one (alert {alert:?}): --cert FILE --key FILE give one")
        })
    }
}

/// The client certificate, given to any server that asks (the server's
/// hints are not consulted: there is only one to give), noting that one
/// asked. With TLS 1.3 a server that refuses the client's certificate (or
/// its absence) says so only after the client's handshake is done, so the
/// check before the run waits for that verdict when a server asked.
#[derive(Debug)]
struct ClientCert {
    key: Option<Arc<CertifiedKey>>,
    asked: AtomicBool,
}

impl ResolvesClientCert for ClientCert {
    fn resolve(
        &self,
        _root_hint_subjects: &[&[u8]],
        _sigschemes: &[rustls::SignatureScheme],
    ) -> Option<Arc<CertifiedKey>> {
        self.asked.store(true, Ordering::Relaxed);
        self.key.clone()
    }

    fn has_certs(&self) -> bool {
        self.key.is_some()
    }
}

/// The `--cert` chain with the `--key` key (or the key in the `--cert`
/// file), checked to belong together.
fn client_key(
    opts: &TlsOptions,
    provider: &CryptoProvider,
) -> Result<Option<Arc<CertifiedKey>>, ConfigError> {
    let Some(cert_pem) = &opts.cert_pem else {
        return match opts.key_pem {
            Some(_) => Err(ConfigError::new(
                "key",
                "needs --cert FILE, the certificate the key belongs to",
            )),
            None => Ok(None),
        };
    };
    let chain = CertificateDer::pem_slice_iter(cert_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| ConfigError::new("cert", format!("is not a PEM certificate file: {e}")))?;
    if chain.is_empty() {
        return Err(ConfigError::new(
            "cert",
            "holds no PEM certificate (-----BEGIN CERTIFICATE-----)",
        ));
    }
    let (field, key_pem) = match &opts.key_pem {
        Some(k) => ("key", k),
        None => ("cert", cert_pem),
    };
    let key = PrivateKeyDer::from_pem_slice(key_pem).map_err(|e| match e {
        pem::Error::NoItemsFound if field == "cert" => ConfigError::new(
            "cert",
            "holds a certificate but no private key: --key FILE gives the key",
        ),
        pem::Error::NoItemsFound => ConfigError::new(
            "key",
            "holds no unencrypted PEM private key (-----BEGIN PRIVATE KEY-----, RSA PRIVATE KEY or EC PRIVATE KEY)",
        ),
        e => ConfigError::new(field, format!("is not a PEM private key file: {e}")),
    })?;
    let key = CertifiedKey::from_der(chain, key, provider).map_err(|e| match e {
        rustls::Error::InconsistentKeys(_) => ConfigError::new(
            field,
            "the private key does not belong to the --cert certificate (their public keys differ)",
        ),
        e => ConfigError::new(field, format!("cannot be used: {e}")),
    })?;
    Ok(Some(Arc::new(key)))
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
            ..Default::default()
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
            ..Default::default()
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
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(c.config.alpn_protocols, vec![b"http/1.1".to_vec()]);
        assert!(c.session().unwrap().is_handshaking());
    }

    fn with_client(cert: &str, key: Option<&str>) -> TlsOptions {
        TlsOptions {
            insecure: true,
            cert_pem: Some(cert.as_bytes().to_vec()),
            key_pem: key.map(|k| k.as_bytes().to_vec()),
            ..Default::default()
        }
    }

    #[test]
    fn a_client_certificate_is_given_with_its_key_or_from_one_file() {
        let pki = fairbench_testkit::pki::mtls_pki("CA", &["127.0.0.1"]);
        for kind in [
            fairbench_testkit::pki::ClientKey::Ecdsa,
            fairbench_testkit::pki::ClientKey::Ed25519,
        ] {
            let (cert, key) = pki.client(kind);
            let c = TlsClient::new(&target(), &with_client(&cert, Some(&key))).unwrap();
            assert!(c.has_certificate() && !c.certificate_asked());
            let both = format!("{key}{cert}");
            let c = TlsClient::new(&target(), &with_client(&both, None)).unwrap();
            assert!(c.has_certificate());
        }
        let plain = TlsOptions {
            insecure: true,
            ..Default::default()
        };
        assert!(!TlsClient::new(&target(), &plain).unwrap().has_certificate());
    }

    #[test]
    fn client_certificate_mistakes_name_the_flag() {
        let pki = fairbench_testkit::pki::mtls_pki("CA", &["127.0.0.1"]);
        let (cert, key) = pki.client(fairbench_testkit::pki::ClientKey::Ecdsa);
        let (_, other_key) = pki.client(fairbench_testkit::pki::ClientKey::Ecdsa);
        let key_alone = TlsOptions {
            key_pem: Some(key.clone().into_bytes()),
            ..Default::default()
        };
        for (opts, field, needle) in [
            (with_client(&cert, None), "cert", "no private key"),
            (
                with_client("hello", Some(&key)),
                "cert",
                "no PEM certificate",
            ),
            (
                with_client(&cert, Some("hello")),
                "key",
                "no unencrypted PEM private key",
            ),
            (
                with_client(&cert, Some(&other_key)),
                "key",
                "does not belong",
            ),
            (key_alone, "key", "needs --cert"),
        ] {
            let e = opts.check_client_cert().err().unwrap();
            assert_eq!(e.field, field, "{e}");
            assert!(e.message.contains(needle), "{e}");
        }
    }

    #[test]
    fn old_documents_without_a_client_certificate_still_parse() {
        let o: TlsOptions = serde_json::from_str(r#"{"insecure":true}"#).unwrap();
        assert_eq!(o.cert_pem, None);
        assert_eq!(o.key_pem, None);
    }
}
