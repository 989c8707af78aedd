//! The request, serialised once before the run and then only copied.

use crate::config_error::ConfigError;
use crate::target::Target;

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct RequestSpec {
    pub method: String,
    /// Extra headers as `(name, value)`; a user-supplied Host replaces ours.
    pub headers: Vec<(String, String)>,
    #[serde(with = "crate::hex::bytes_as_hex")]
    pub body: Vec<u8>,
}

impl Default for RequestSpec {
    fn default() -> Self {
        RequestSpec {
            method: "GET".into(),
            headers: Vec::new(),
            body: Vec::new(),
        }
    }
}

impl RequestSpec {
    /// Parses a `-H "Name: value"` argument.
    pub fn parse_header(raw: &str) -> Result<(String, String), ConfigError> {
        let (name, value) = raw.split_once(':').ok_or_else(|| {
            ConfigError::new(
                "header",
                format!("{raw:?} is not of the form \"Name: value\""),
            )
        })?;
        let name = name.trim();
        if name.is_empty() || !name.bytes().all(is_token_byte) {
            return Err(ConfigError::new(
                "header",
                format!("{name:?} is not a valid header name"),
            ));
        }
        let value = value.trim();
        if value.bytes().any(|b| b == b'\r' || b == b'\n') {
            return Err(ConfigError::new(
                "header",
                "header values cannot contain CR or LF",
            ));
        }
        Ok((name.to_string(), value.to_string()))
    }

    /// The bytes sent on the wire for one request.
    pub fn serialize(&self, target: &Target) -> Result<Vec<u8>, ConfigError> {
        if self.method.is_empty() || !self.method.bytes().all(is_token_byte) {
            return Err(ConfigError::new(
                "method",
                format!("{:?} is not a valid HTTP method", self.method),
            ));
        }
        let mut out = Vec::with_capacity(128 + self.body.len());
        out.extend_from_slice(self.method.as_bytes());
        out.push(b' ');
        let proxy = target.forward_proxy();
        if proxy.is_some() {
            // Absolute form: the proxy learns the target from the request.
            out.extend_from_slice(b"http://");
            out.extend_from_slice(target.host_header.as_bytes());
        }
        out.extend_from_slice(target.path.as_bytes());
        out.extend_from_slice(b" HTTP/1.1\r\n");
        let has = |n: &str| self.headers.iter().any(|(k, _)| k.eq_ignore_ascii_case(n));
        // A header the user gave wins over the proxy URL's credentials, as
        // in curl: one Proxy-Authorization, never two.
        if let Some(auth) = proxy.and_then(crate::proxy::Proxy::authorization) {
            if !has("proxy-authorization") {
                out.extend_from_slice(b"Proxy-Authorization: ");
                out.extend_from_slice(auth.as_bytes());
                out.extend_from_slice(b"\r\n");
            }
        }
        if !has("host") {
            out.extend_from_slice(b"Host: ");
            out.extend_from_slice(target.host_header.as_bytes());
            out.extend_from_slice(b"\r\n");
        }
        for (k, v) in &self.headers {
            out.extend_from_slice(k.as_bytes());
            out.extend_from_slice(b": ");
            out.extend_from_slice(v.as_bytes());
            out.extend_from_slice(b"\r\n");
        }
        if (!self.body.is_empty() || matches!(self.method.as_str(), "POST" | "PUT" | "PATCH"))
            && !has("content-length")
        {
            out.extend_from_slice(format!("Content-Length: {}\r\n", self.body.len()).as_bytes());
        }
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(&self.body);
        Ok(out)
    }

    /// HEAD responses carry framing headers but no body (RFC 9110 §9.3.2).
    pub fn expects_no_body(&self) -> bool {
        self.method.eq_ignore_ascii_case("HEAD")
    }

    /// Safe to send again when the connection was lost before any byte of
    /// its answer came (RFC 9110 §9.2.2).
    pub fn is_idempotent(&self) -> bool {
        ["GET", "HEAD", "PUT", "DELETE", "OPTIONS", "TRACE"]
            .iter()
            .any(|m| self.method.eq_ignore_ascii_case(m))
    }
}

fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn get_has_host_and_no_length() {
        let t = Target::parse("http://127.0.0.1:8080/x").unwrap();
        let r = RequestSpec::default().serialize(&t).unwrap();
        assert_eq!(r, b"GET /x HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n");
    }

    #[test]
    fn post_body_gets_content_length() {
        let t = Target::parse("http://[::1]:80/p").unwrap();
        let spec = RequestSpec {
            method: "POST".into(),
            headers: vec![("X-A".into(), "1".into())],
            body: b"hello".to_vec(),
        };
        let r = String::from_utf8(spec.serialize(&t).unwrap()).unwrap();
        assert_eq!(
            r,
            "POST /p HTTP/1.1\r\nHost: [::1]\r\nX-A: 1\r\nContent-Length: 5\r\n\r\nhello"
        );
    }

    #[test]
    fn user_host_header_wins() {
        let t = Target::parse("http://127.0.0.1:8080/").unwrap();
        let spec = RequestSpec {
            headers: vec![("host".into(), "example".into())],
            ..Default::default()
        };
        let r = String::from_utf8(spec.serialize(&t).unwrap()).unwrap();
        assert_eq!(r.matches("ost:").count(), 1);
        assert!(r.contains("host: example\r\n"));
    }

    #[test]
    fn through_a_forwarding_proxy_the_users_proxy_authorization_wins() {
        let proxy = crate::proxy::Proxy::parse("http://u:p@127.0.0.1:3128").unwrap();
        let t = Target::parse_proxied("http://127.0.0.1:8080/x", proxy).unwrap();
        let from_url = String::from_utf8(RequestSpec::default().serialize(&t).unwrap()).unwrap();
        assert!(
            from_url.starts_with("GET http://127.0.0.1:8080/x HTTP/1.1\r\n")
                && from_url.contains("Proxy-Authorization: Basic dTpw\r\n"),
            "{from_url}"
        );
        let spec = RequestSpec {
            headers: vec![("proxy-authorization".into(), "Bearer t".into())],
            ..Default::default()
        };
        let r = String::from_utf8(spec.serialize(&t).unwrap()).unwrap();
        assert_eq!(
            r.to_ascii_lowercase()
                .matches("proxy-authorization:")
                .count(),
            1,
            "{r}"
        );
        assert!(r.contains("proxy-authorization: Bearer t\r\n"), "{r}");
    }

    #[test]
    fn bad_headers_are_rejected() {
        assert!(RequestSpec::parse_header("nocolon").is_err());
        assert!(RequestSpec::parse_header("bad name: x").is_err());
        assert_eq!(
            RequestSpec::parse_header("Accept:  text/plain ").unwrap(),
            ("Accept".into(), "text/plain".into())
        );
    }
}
