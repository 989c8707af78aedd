//! Which HTTP a run speaks.

use std::fmt;
use std::str::FromStr;

/// The protocol every connection of a run speaks. Spelled as ALPN spells
/// them ("http/1.1", "h2"), and "h2c" for HTTP/2 over cleartext TCP, which
/// fairbench starts with prior knowledge (RFC 9113 §3.3): no `Upgrade`
/// round trip, which only the first request of a connection would pay.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Default,
    serde::Serialize,
    serde::Deserialize,
)]
pub enum Protocol {
    #[default]
    #[serde(rename = "http/1.1")]
    Http1,
    /// HTTP/2 over plain TCP (`http://` URLs), prior knowledge.
    #[serde(rename = "h2c")]
    H2c,
    /// HTTP/2 over TLS (`https://` URLs), chosen by ALPN.
    #[serde(rename = "h2")]
    H2,
    /// HTTP/3 over QUIC (`https://` URLs, UDP), ALPN `h3`.
    #[serde(rename = "h3")]
    H3,
}

impl Protocol {
    pub const ALL: [Protocol; 4] = [Protocol::Http1, Protocol::H2c, Protocol::H2, Protocol::H3];

    /// As written in URLs' ALPN, manifests, suites, the store and a
    /// server's `PROTOCOL`.
    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::Http1 => "http/1.1",
            Protocol::H2c => "h2c",
            Protocol::H2 => "h2",
            Protocol::H3 => "h3",
        }
    }

    /// The protocol spelled exactly so (see [`Protocol::as_str`]); for
    /// the case-insensitive spelling of the command line, `parse()`.
    pub fn parse(s: &str) -> Option<Protocol> {
        Protocol::ALL.into_iter().find(|p| p.as_str() == s)
    }

    /// `"http/1.1", "h2c", "h2" or "h3"`, for error messages.
    pub fn expected() -> String {
        "\"http/1.1\", \"h2c\", \"h2\" or \"h3\"".to_string()
    }

    /// HTTP/2, with or without TLS.
    pub fn is_h2(self) -> bool {
        matches!(self, Protocol::H2c | Protocol::H2)
    }

    /// Requests go as streams, many in flight on one connection (a
    /// profile's `streams`, `--streams`): HTTP/2 and HTTP/3.
    pub fn multiplexes(self) -> bool {
        matches!(self, Protocol::H2c | Protocol::H2 | Protocol::H3)
    }

    /// HTTP/2 or HTTP/3: a status code without a line, lower-case fields,
    /// none connection-specific, the body framed by frames (DATA) rather
    /// than by Content-Length or chunks.
    pub fn is_framed(self) -> bool {
        matches!(self, Protocol::H2c | Protocol::H2 | Protocol::H3)
    }

    /// A server serving it needs a certificate (h2 over TLS, h3).
    pub fn tls(self) -> bool {
        matches!(self, Protocol::H2 | Protocol::H3)
    }

    /// How people name it: "HTTP/1.1", "HTTP/2 cleartext (h2c)", "HTTP/2
    /// over TLS (h2)".
    pub fn describe(self) -> &'static str {
        match self {
            Protocol::Http1 => "HTTP/1.1",
            Protocol::H2c => "HTTP/2 cleartext (h2c)",
            Protocol::H2 => "HTTP/2 over TLS (h2)",
            Protocol::H3 => "HTTP/3 over QUIC (h3)",
        }
    }

    /// Whether it runs over TLS (`https://`); HTTP/1.1 goes either way.
    pub fn needs_tls(self) -> Option<bool> {
        match self {
            Protocol::Http1 => None,
            Protocol::H2c => Some(false),
            Protocol::H2 | Protocol::H3 => Some(true),
        }
    }

    /// HTTP/2 for a URL: h2 over TLS for `https://`, h2c for `http://`.
    pub fn h2_for(tls: bool) -> Protocol {
        if tls {
            Protocol::H2
        } else {
            Protocol::H2c
        }
    }
}

impl fmt::Display for Protocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Protocol {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "http/1.1" => Ok(Protocol::Http1),
            "h2c" => Ok(Protocol::H2c),
            "h2" => Ok(Protocol::H2),
            "h3" => Ok(Protocol::H3),
            _ => Err(format!(
                "unknown protocol {s:?}: expected {}",
                Protocol::expected()
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings_round_trip_in_text_and_json() {
        for p in Protocol::ALL {
            assert_eq!(p.to_string().parse::<Protocol>(), Ok(p));
            let json = serde_json::to_string(&p).unwrap();
            assert_eq!(json, format!("\"{p}\""));
            assert_eq!(serde_json::from_str::<Protocol>(&json).unwrap(), p);
        }
        assert_eq!("H2C".parse::<Protocol>(), Ok(Protocol::H2c));
        let e = "http/2".parse::<Protocol>().unwrap_err();
        assert!(e.contains("\"h2c\""), "{e}");
        // The exact spelling of manifests and suites.
        for p in Protocol::ALL {
            assert_eq!(Protocol::parse(p.as_str()), Some(p));
        }
        assert_eq!(Protocol::parse("HTTP/1.1"), None);
        assert_eq!(Protocol::parse("h3"), Some(Protocol::H3));
        assert_eq!("H3".parse::<Protocol>(), Ok(Protocol::H3));
        assert!(e.contains("\"h3\""), "{e}");
        assert_eq!(Protocol::H3.to_string(), "h3");
        assert_eq!(serde_json::to_string(&Protocol::H3).unwrap(), "\"h3\"");
        assert!(!Protocol::H3.is_h2() && Protocol::H3.tls());
        assert!(Protocol::H3.is_framed() && Protocol::H2c.is_framed());
        assert!(!Protocol::Http1.is_framed());
        assert!(Protocol::H3.multiplexes() && !Protocol::Http1.multiplexes());
        assert_eq!(Protocol::default(), Protocol::Http1);
    }
}
