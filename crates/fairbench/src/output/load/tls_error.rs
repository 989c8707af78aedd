//! rustls names a refused certificate by its enum variant
//! (`Other(OtherError(CaUsedAsEndEntity))`); people need a sentence saying
//! what is wrong with the certificate and what to do about it.

/// The error line with any rustls certificate error it holds put in words;
/// anything else is returned as it is.
pub fn in_words(message: &str, cacert: bool) -> String {
    const PREFIX: &str = "invalid peer certificate: ";
    let Some(at) = message.find(PREFIX) else {
        return message.to_string();
    };
    let (head, rest) = message.split_at(at);
    let rest = &rest[PREFIX.len()..];
    let sentence = if rest.starts_with("Other(OtherError(CaUsedAsEndEntity))") {
        format!(
            "the server's certificate is a CA certificate (basicConstraints CA:TRUE, as `openssl req -x509` makes by default){}, and a CA certificate is refused as a server's own: give the server a certificate signed by that CA, or use --insecure",
            if cacert {
                " used as the server's own while --cacert trusts it"
            } else {
                ""
            }
        )
    } else if rest.starts_with("UnknownIssuer") {
        format!(
            "the server's certificate is not signed by {} (UnknownIssuer): --cacert FILE trusts the CA that signed it; --insecure accepts any certificate",
            if cacert {
                "the CA given to --cacert"
            } else {
                "a CA this machine trusts"
            }
        )
    } else {
        return message.to_string();
    };
    format!("{head}{sentence}")
}

#[cfg(test)]
mod tests {
    use super::in_words;

    #[test]
    fn a_ca_used_as_the_server_certificate_is_a_sentence() {
        let m = in_words(
            "TLS handshake with 127.0.0.1 (127.0.0.1:8443) failed: invalid peer certificate: Other(OtherError(CaUsedAsEndEntity)) (--cacert FILE trusts the CA that signed it; --insecure accepts any certificate)",
            true,
        );
        assert!(m.starts_with("TLS handshake with 127.0.0.1 (127.0.0.1:8443) failed: the server's certificate is a CA certificate"), "{m}");
        assert!(!m.contains("OtherError"), "{m}");
    }

    #[test]
    fn other_errors_are_left_as_they_are() {
        assert_eq!(in_words("cannot connect", false), "cannot connect");
    }
}
