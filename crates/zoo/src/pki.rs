//! The certificate authority made for one check or run, and the server
//! certificate it signs: what a server serving h2 over TLS is given
//! (`TLS_CERT`, `TLS_KEY`) and what fairbench's clients trust. Nothing is
//! added to the system's roots and nothing outlives the run: the folder is
//! removed when the [`RunPki`] is dropped.

use std::path::{Path, PathBuf};

use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair};

/// The names every run certificate is valid for: the loopback addresses the
/// check and the load generator use.
pub const LOOPBACK_NAMES: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

pub struct RunPki {
    /// The CA certificate, PEM: what clients trust.
    pub ca_pem: String,
    /// The server's certificate chain (leaf then CA) and key, PEM files.
    pub cert_path: PathBuf,
    pub key_path: PathBuf,
    /// The CA certificate as a file, for servers or tools that want a path.
    pub ca_path: PathBuf,
    /// The names the server certificate is valid for.
    pub names: Vec<String>,
    _dir: tempfile::TempDir,
}

impl RunPki {
    /// A new CA and a server certificate for the loopback names and
    /// `extra_names` (e.g. a namespace's address), written to a new folder
    /// under `parent`.
    pub fn create(parent: &Path, extra_names: &[String]) -> Result<RunPki, String> {
        let fail = |what: &str, e: &dyn std::fmt::Display| format!("run CA: {what}: {e}");
        std::fs::create_dir_all(parent).map_err(|e| fail(&parent.display().to_string(), &e))?;
        let dir = tempfile::Builder::new()
            .prefix("tls-")
            .tempdir_in(parent)
            .map_err(|e| fail(&parent.display().to_string(), &e))?;

        let ca_key = KeyPair::generate().map_err(|e| fail("CA key", &e))?;
        let mut ca_params =
            CertificateParams::new(Vec::<String>::new()).map_err(|e| fail("CA", &e))?;
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(DnType::CommonName, "fairbench run CA");
        let ca = CertifiedIssuer::self_signed(ca_params, ca_key).map_err(|e| fail("CA", &e))?;

        let mut names: Vec<String> = LOOPBACK_NAMES.iter().map(|s| s.to_string()).collect();
        for n in extra_names {
            if !names.contains(n) {
                names.push(n.clone());
            }
        }
        // rcgen turns the names that parse as IP addresses into IP SANs.
        let key = KeyPair::generate().map_err(|e| fail("server key", &e))?;
        let mut params =
            CertificateParams::new(names.clone()).map_err(|e| fail("server certificate", &e))?;
        params
            .distinguished_name
            .push(DnType::CommonName, "fairbench server");
        let cert = params
            .signed_by(&key, &ca)
            .map_err(|e| fail("server certificate", &e))?;

        let ca_pem = ca.pem();
        let write = |name: &str, text: &str| -> Result<PathBuf, String> {
            let p = dir.path().join(name);
            std::fs::write(&p, text).map_err(|e| fail(&p.display().to_string(), &e))?;
            Ok(p)
        };
        let cert_path = write("server.crt", &format!("{}{}", cert.pem(), ca_pem))?;
        let key_path = write("server.key", &key.serialize_pem())?;
        let ca_path = write("ca.crt", &ca_pem)?;
        Ok(RunPki {
            ca_pem,
            cert_path,
            key_path,
            ca_path,
            names,
            _dir: dir,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_a_chain_a_key_and_the_ca_and_removes_them_when_dropped() {
        let parent = tempfile::tempdir().unwrap();
        let pki = RunPki::create(parent.path(), &["10.200.0.2".into()]).unwrap();
        let chain = std::fs::read_to_string(&pki.cert_path).unwrap();
        assert_eq!(chain.matches("BEGIN CERTIFICATE").count(), 2);
        assert!(chain.ends_with(&pki.ca_pem));
        assert!(std::fs::read_to_string(&pki.key_path)
            .unwrap()
            .contains("PRIVATE KEY"));
        assert_eq!(std::fs::read_to_string(&pki.ca_path).unwrap(), pki.ca_pem);
        assert_eq!(pki.names.len(), 4);
        let dir = pki.cert_path.parent().unwrap().to_path_buf();
        drop(pki);
        assert!(!dir.exists());
    }
}
