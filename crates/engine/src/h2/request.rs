//! A request's HTTP/2 header block, encoded once before the run.
//!
//! HPACK (RFC 7541) without the dynamic table: every field is a static-table
//! index or a literal "without indexing", never Huffman-coded. Such a block
//! leaves the server's decoder table as it found it, so the same bytes are
//! valid as every request of every connection: the hot path copies them,
//! as the HTTP/1.1 path copies its prepared request. What this costs is a
//! few bytes per request on the wire (the server decodes literals, which is
//! no more work than a table look-up), never a decoder state to keep.

use crate::config_error::ConfigError;
use crate::request::RequestSpec;
use crate::target::Target;

/// Header fields that HTTP/2 forbids (RFC 9113 §8.2.2); `host` becomes
/// `:authority`.
const CONNECTION_SPECIFIC: [&str; 6] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "upgrade",
    "te",
];

/// Static-table indices of names (RFC 7541 Appendix A) a request uses.
fn static_name(name: &str) -> Option<u8> {
    Some(match name {
        ":authority" => 1,
        ":method" => 2,
        ":path" => 4,
        ":scheme" => 6,
        "accept-charset" => 15,
        "accept-encoding" => 16,
        "accept-language" => 17,
        "accept" => 19,
        "authorization" => 23,
        "cache-control" => 24,
        "content-length" => 28,
        "content-type" => 31,
        "cookie" => 32,
        "user-agent" => 58,
        _ => return None,
    })
}

/// The header block of `spec` sent to `target`.
pub fn encode(spec: &RequestSpec, target: &Target) -> Result<Vec<u8>, ConfigError> {
    let mut out = Vec::with_capacity(64);
    // :method GET / POST, :scheme http / https and :path / are whole
    // static-table entries.
    match spec.method.as_str() {
        "GET" => out.push(0x80 | 2),
        "POST" => out.push(0x80 | 3),
        m => literal(&mut out, ":method", m),
    }
    out.push(0x80 | if target.tls { 7 } else { 6 });
    let authority = spec
        .headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("host"))
        .map_or(target.host_header.as_str(), |(_, v)| v.as_str());
    literal(&mut out, ":authority", authority);
    if target.path == "/" {
        out.push(0x80 | 4);
    } else {
        literal(&mut out, ":path", &target.path);
    }
    for (k, v) in &spec.headers {
        let name = k.to_ascii_lowercase();
        if name == "host" {
            continue;
        }
        if CONNECTION_SPECIFIC.contains(&name.as_str()) {
            return Err(ConfigError::new(
                "header",
                format!(
                    "{k:?} is a connection-specific header, which HTTP/2 forbids (RFC 9113 §8.2.2)"
                ),
            ));
        }
        literal(&mut out, &name, v);
    }
    let has_length = spec
        .headers
        .iter()
        .any(|(k, _)| k.eq_ignore_ascii_case("content-length"));
    if !has_length
        && (!spec.body.is_empty() || matches!(spec.method.as_str(), "POST" | "PUT" | "PATCH"))
    {
        literal(&mut out, "content-length", &spec.body.len().to_string());
    }
    Ok(out)
}

/// A literal field without indexing (RFC 7541 §6.2.2), its name indexed
/// when the static table has it.
fn literal(out: &mut Vec<u8>, name: &str, value: &str) {
    match static_name(name) {
        Some(i) => integer(out, 0x00, 4, i as usize),
        None => {
            out.push(0x00);
            string(out, name.as_bytes());
        }
    }
    string(out, value.as_bytes());
}

/// A string literal, not Huffman-coded (RFC 7541 §5.2).
fn string(out: &mut Vec<u8>, s: &[u8]) {
    integer(out, 0x00, 7, s.len());
    out.extend_from_slice(s);
}

/// An integer with an `n`-bit prefix after the bits `first` (RFC 7541 §5.1).
fn integer(out: &mut Vec<u8>, first: u8, n: u32, mut v: usize) {
    let max = (1usize << n) - 1;
    if v < max {
        out.push(first | v as u8);
        return;
    }
    out.push(first | max as u8);
    v -= max;
    while v >= 128 {
        out.push((v % 128) as u8 | 0x80);
        v /= 128;
    }
    out.push(v as u8);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(block: &[u8]) -> Vec<(String, String)> {
        let mut d = super::super::hpack::Decoder::new();
        let mut fields = Vec::new();
        d.decode(block, |k, v| {
            fields.push((
                String::from_utf8_lossy(k).into_owned(),
                String::from_utf8_lossy(v).into_owned(),
            ))
        })
        .unwrap();
        fields
    }

    #[test]
    fn a_get_decodes_to_its_pseudo_headers_and_fields() {
        let t = Target::parse("http://127.0.0.1:8080/x?y=1").unwrap();
        let spec = RequestSpec {
            headers: vec![
                ("Accept".into(), "text/plain".into()),
                ("X-Long".into(), "v".repeat(300)),
            ],
            ..Default::default()
        };
        let block = encode(&spec, &t).unwrap();
        let f = decode(&block);
        assert_eq!(f[0], (":method".into(), "GET".into()));
        assert_eq!(f[1], (":scheme".into(), "http".into()));
        assert_eq!(f[2], (":authority".into(), "127.0.0.1:8080".into()));
        assert_eq!(f[3], (":path".into(), "/x?y=1".into()));
        assert_eq!(f[4], ("accept".into(), "text/plain".into()));
        assert_eq!(f[5], ("x-long".into(), "v".repeat(300)));
        // Decoding it again gives the same: it left no table state behind.
        let mut d = super::super::hpack::Decoder::new();
        let mut n = 0;
        d.decode(&block, |_, _| n += 1).unwrap();
        d.decode(&block, |_, _| n += 1).unwrap();
        assert_eq!(n, 12);
    }

    #[test]
    fn a_post_gets_its_length_and_host_becomes_the_authority() {
        let t = Target::parse("https://127.0.0.1:8443/").unwrap();
        let spec = RequestSpec {
            method: "PUT".into(),
            headers: vec![("Host".into(), "example".into())],
            body: b"hello".to_vec(),
        };
        let f = decode(&encode(&spec, &t).unwrap());
        assert!(f.contains(&(":method".into(), "PUT".into())));
        assert!(f.contains(&(":scheme".into(), "https".into())));
        assert!(f.contains(&(":authority".into(), "example".into())));
        assert!(f.contains(&("content-length".into(), "5".into())));
        assert!(!f.iter().any(|(k, _)| k == "host"));
        let bad = RequestSpec {
            headers: vec![("Connection".into(), "close".into())],
            ..Default::default()
        };
        let e = encode(&bad, &t).unwrap_err();
        assert_eq!(e.field, "header");
    }
}
