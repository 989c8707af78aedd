//! The protocols a server may serve: HTTP/1.1, HTTP/2 in cleartext with
//! prior knowledge (h2c) and HTTP/2 over TLS chosen by ALPN (h2).

use std::fmt;

use serde::{Deserialize, Serialize};

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, Default,
)]
pub enum Protocol {
    #[default]
    #[serde(rename = "http/1.1")]
    Http1,
    #[serde(rename = "h2c")]
    H2c,
    #[serde(rename = "h2")]
    H2,
}

impl Protocol {
    pub const ALL: [Protocol; 3] = [Protocol::Http1, Protocol::H2c, Protocol::H2];

    /// As written in manifests, suites, the store and `PROTOCOL`.
    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::Http1 => "http/1.1",
            Protocol::H2c => "h2c",
            Protocol::H2 => "h2",
        }
    }

    pub fn parse(s: &str) -> Option<Protocol> {
        Protocol::ALL.into_iter().find(|p| p.as_str() == s)
    }

    /// `"http/1.1", "h2c" or "h2"`, for error messages.
    pub fn expected() -> String {
        "\"http/1.1\", \"h2c\" or \"h2\"".to_string()
    }

    pub fn is_h2(self) -> bool {
        self != Protocol::Http1
    }

    pub fn tls(self) -> bool {
        self == Protocol::H2
    }

    /// How people name it: "HTTP/1.1", "HTTP/2 (h2c)", "HTTP/2 over TLS (h2)".
    pub fn describe(self) -> &'static str {
        match self {
            Protocol::Http1 => "HTTP/1.1",
            Protocol::H2c => "HTTP/2 cleartext (h2c)",
            Protocol::H2 => "HTTP/2 over TLS (h2)",
        }
    }
}

impl fmt::Display for Protocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_default_is_http1() {
        for p in Protocol::ALL {
            assert_eq!(Protocol::parse(p.as_str()), Some(p));
            assert_eq!(
                serde_json::to_string(&p).unwrap(),
                format!("\"{}\"", p.as_str())
            );
        }
        assert_eq!(Protocol::parse("h3"), None);
        assert_eq!(Protocol::parse("HTTP/1.1"), None);
        assert_eq!(Protocol::default(), Protocol::Http1);
    }
}
