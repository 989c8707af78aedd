//! QPACK (RFC 9204) as a client that announces a zero-capacity dynamic
//! table: field sections refer to the static table only, so a section
//! decodes on its own, at once, with no encoder stream to wait for. A
//! section that needs the dynamic table (a non-zero Required Insert Count,
//! a dynamic or post-base reference) is `QPACK_DECOMPRESSION_FAILED`, a
//! connection error (§2.2.3); so is anything on the server's encoder
//! stream but setting the capacity to zero (`QPACK_ENCODER_STREAM_ERROR`).
//!
//! The request's section is encoded once before the run, as HTTP/2's
//! header block is (see `crate::h2::request`): static-table entries where
//! they match, literals otherwise, never Huffman-coded nor indexed, so the
//! same bytes serve every request of every connection.

use super::frame::{H3Error, QPACK_DECOMPRESSION_FAILED, QPACK_ENCODER_STREAM_ERROR};
use super::table::{self, STATIC};
use crate::config_error::ConfigError;
use crate::request::RequestSpec;
use crate::target::Target;

/// Header fields that HTTP/3 forbids (RFC 9114 §4.2); `host` becomes
/// `:authority`.
const CONNECTION_SPECIFIC: [&str; 6] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "upgrade",
    "te",
];

fn failed(why: impl Into<String>) -> H3Error {
    H3Error::new(QPACK_DECOMPRESSION_FAILED, why)
}

/// An integer with an `n`-bit prefix (RFC 9204 §4.1.1, as RFC 7541
/// §5.1) at the start of `p`, and the bytes it took.
fn integer(p: &[u8], n: u32) -> Result<(u64, usize), H3Error> {
    let max = (1u64 << n) - 1;
    let first = *p
        .first()
        .ok_or_else(|| failed("a field section ends inside an integer"))?;
    let mut v = u64::from(first) & max;
    if v < max {
        return Ok((v, 1));
    }
    let mut shift = 0u32;
    for (k, &b) in p[1..].iter().enumerate() {
        if shift > 56 {
            return Err(failed("an integer of a field section is too large"));
        }
        v += u64::from(b & 0x7f) << shift;
        shift += 7;
        if b & 0x80 == 0 {
            return Ok((v, k + 2));
        }
    }
    Err(failed("a field section ends inside an integer"))
}

/// A string literal whose length has an `n`-bit prefix after its Huffman
/// bit, appended to `out`; returns the bytes it took.
fn string(p: &[u8], n: u32, out: &mut Vec<u8>) -> Result<usize, H3Error> {
    let huffman = p.first().is_some_and(|b| b & (1 << n) != 0);
    let (len, a) = integer(p, n)?;
    let end = (a as u64)
        .checked_add(len)
        .filter(|&e| e <= p.len() as u64)
        .ok_or_else(|| failed("a field section ends inside a string"))? as usize;
    let raw = &p[a..end];
    if huffman {
        crate::h2::huffman::decode(raw, out)
            .map_err(|e| failed(format!("a Huffman-coded string is invalid ({e:?})")))?;
    } else {
        out.extend_from_slice(raw);
    }
    Ok(end)
}

fn static_entry(index: u64) -> Result<(&'static str, &'static str), H3Error> {
    STATIC.get(index as usize).copied().ok_or_else(|| {
        failed(format!(
            "static table index {index} is beyond its 99 entries"
        ))
    })
}

/// Decodes one field section, handing each field line to `f` as (name,
/// value). `scratch` is reused between calls.
pub(crate) fn decode(
    block: &[u8],
    scratch: &mut Vec<u8>,
    mut f: impl FnMut(&[u8], &[u8]),
) -> Result<(), H3Error> {
    let (required, a) = integer(block, 8)?;
    if required != 0 {
        return Err(failed(format!(
            "a field section needs {required} dynamic-table insertions, but the client announced a table of capacity 0"
        )));
    }
    // Delta Base: meaningless with no dynamic table, but it must be there.
    let (_, b) = integer(&block[a..], 7)?;
    let mut p = &block[a + b..];
    while let Some(&first) = p.first() {
        scratch.clear();
        if first & 0x80 != 0 {
            // Indexed field line (§4.5.2).
            if first & 0x40 == 0 {
                return Err(failed("an indexed field line refers to the dynamic table"));
            }
            let (i, n) = integer(p, 6)?;
            let (name, value) = static_entry(i)?;
            f(name.as_bytes(), value.as_bytes());
            p = &p[n..];
        } else if first & 0x40 != 0 {
            // Literal field line with name reference (§4.5.4).
            if first & 0x10 == 0 {
                return Err(failed("a literal field line names a dynamic-table entry"));
            }
            let (i, n) = integer(p, 4)?;
            let (name, _) = static_entry(i)?;
            let m = string(&p[n..], 7, scratch)?;
            f(name.as_bytes(), scratch);
            p = &p[n + m..];
        } else if first & 0x20 != 0 {
            // Literal field line with literal name (§4.5.6).
            let n = string(p, 3, scratch)?;
            let split = scratch.len();
            let m = string(&p[n..], 7, scratch)?;
            let (name, value) = scratch.split_at(split);
            f(name, value);
            p = &p[n + m..];
        } else {
            // Post-base forms (§4.5.3, §4.5.5): dynamic table only.
            return Err(failed(
                "a field line refers to a post-base dynamic-table entry",
            ));
        }
    }
    Ok(())
}

/// Reads what the server's encoder stream sent (whole instructions only;
/// returns the bytes taken). With a zero-capacity table, setting the
/// capacity to zero is the only instruction it may send.
pub(crate) fn encoder_instructions(p: &[u8]) -> Result<usize, H3Error> {
    let mut at = 0;
    while at < p.len() {
        if p[at] & 0xe0 != 0x20 {
            return Err(H3Error::new(
                QPACK_ENCODER_STREAM_ERROR,
                "the server inserts into a dynamic table whose capacity the client set to 0",
            ));
        }
        let (cap, n) = match integer(&p[at..], 5) {
            Ok(v) => v,
            // An instruction not yet whole.
            Err(_) if p.len() - at < 10 => return Ok(at),
            Err(e) => return Err(H3Error::new(QPACK_ENCODER_STREAM_ERROR, e.why)),
        };
        if cap != 0 {
            return Err(H3Error::new(
                QPACK_ENCODER_STREAM_ERROR,
                format!("the server set a dynamic table capacity of {cap}, above the 0 the client allows"),
            ));
        }
        at += n;
    }
    Ok(at)
}

/// The `:status` of a response's field section, and whether it had one.
pub(crate) fn status(block: &[u8], scratch: &mut Vec<u8>) -> Result<u16, H3Error> {
    let mut status: Option<u16> = None;
    let mut seen = false;
    decode(block, scratch, |k, v| {
        if k == b":status" && !seen {
            seen = true;
            status = std::str::from_utf8(v)
                .ok()
                .filter(|s| s.len() == 3)
                .and_then(|s| s.parse().ok());
        }
    })?;
    status.ok_or_else(|| {
        H3Error::new(
            super::frame::H3_MESSAGE_ERROR,
            "a response's field section has no valid :status",
        )
    })
}

/// Appends an integer with an `n`-bit prefix after the bits `first`.
fn put_integer(out: &mut Vec<u8>, first: u8, n: u32, mut v: usize) {
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

/// A field line: a whole static entry, a literal value with the name
/// indexed, or a literal name and value.
fn field(out: &mut Vec<u8>, name: &str, value: &str) {
    if let Some(i) = table::find(name, value) {
        put_integer(out, 0xc0, 6, i);
        return;
    }
    match table::find_name(name) {
        Some(i) => put_integer(out, 0x50, 4, i),
        None => {
            put_integer(out, 0x20, 3, name.len());
            out.extend_from_slice(name.as_bytes());
        }
    }
    put_integer(out, 0x00, 7, value.len());
    out.extend_from_slice(value.as_bytes());
}

/// The field section of `spec` sent to `target`.
pub(crate) fn encode(spec: &RequestSpec, target: &Target) -> Result<Vec<u8>, ConfigError> {
    // Required Insert Count 0, Delta Base 0.
    let mut out = vec![0x00, 0x00];
    field(&mut out, ":method", &spec.method);
    field(&mut out, ":scheme", "https");
    let authority = spec
        .headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("host"))
        .map_or(target.host_header.as_str(), |(_, v)| v.as_str());
    field(&mut out, ":authority", authority);
    field(&mut out, ":path", &target.path);
    for (k, v) in &spec.headers {
        let name = k.to_ascii_lowercase();
        if name == "host" {
            continue;
        }
        if CONNECTION_SPECIFIC.contains(&name.as_str()) {
            return Err(ConfigError::new(
                "header",
                format!(
                    "{k:?} is a connection-specific header, which HTTP/3 forbids (RFC 9114 §4.2)"
                ),
            ));
        }
        field(&mut out, &name, v);
    }
    let has_length = spec
        .headers
        .iter()
        .any(|(k, _)| k.eq_ignore_ascii_case("content-length"));
    if !has_length
        && (!spec.body.is_empty() || matches!(spec.method.as_str(), "POST" | "PUT" | "PATCH"))
    {
        field(&mut out, "content-length", &spec.body.len().to_string());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::h3::frame::{H3_MESSAGE_ERROR, QPACK_DECOMPRESSION_FAILED};

    fn fields(block: &[u8]) -> Result<Vec<(String, String)>, H3Error> {
        let mut out = Vec::new();
        decode(block, &mut Vec::new(), |k, v| {
            out.push((
                String::from_utf8_lossy(k).into_owned(),
                String::from_utf8_lossy(v).into_owned(),
            ))
        })?;
        Ok(out)
    }

    fn pair(k: &str, v: &str) -> (String, String) {
        (k.to_string(), v.to_string())
    }

    #[test]
    fn rfc_9204_b1_literal_with_a_static_name_reference() {
        // Appendix B.1: stream 0, the only example with no dynamic table.
        let block = [
            0x00, 0x00, 0x51, 0x0b, 0x2f, 0x69, 0x6e, 0x64, 0x65, 0x78, 0x2e, 0x68, 0x74, 0x6d,
            0x6c,
        ];
        assert_eq!(fields(&block).unwrap(), [pair(":path", "/index.html")]);
    }

    #[test]
    fn rfc_9204_b2_to_b4_need_the_dynamic_table_so_fail() {
        // Appendix B.2 stream 4 (Required Insert Count 2, post-base refs),
        // B.3 stream 8 and B.4 stream 8 (Required Insert Count 4 and 5): a
        // client that announced capacity 0 cannot decode them.
        for block in [
            &[0x03, 0x81, 0x10, 0x11][..],
            &[0x05, 0x00, 0x80, 0xc1, 0x81][..],
            &[0x06, 0x00, 0x80, 0xc1, 0x81, 0x82][..],
        ] {
            let e = fields(block).unwrap_err();
            assert_eq!(e.code, QPACK_DECOMPRESSION_FAILED, "{block:?}");
        }
        // With a zero Required Insert Count, dynamic references fail too.
        for block in [
            &[0x00, 0x00, 0x80][..],       // indexed, dynamic
            &[0x00, 0x00, 0x10][..],       // indexed, post-base
            &[0x00, 0x00, 0x40, 0x00][..], // literal, dynamic name
            &[0x00, 0x00, 0x00, 0x00][..], // literal, post-base name
        ] {
            assert_eq!(fields(block).unwrap_err().code, QPACK_DECOMPRESSION_FAILED);
        }
    }

    #[test]
    fn static_entries_literal_names_and_huffman_values_decode() {
        let mut block = vec![0x00, 0x00, 0xc0 | 25]; // :status 200
                                                     // content-type (index 44 of name) with a Huffman-coded value:
                                                     // "www.example.com" from RFC 7541 C.4.1.
        block.extend([0x5f, 44 - 15, 0x8c]);
        block.extend([
            0xf1, 0xe3, 0xc2, 0xe5, 0xf2, 0x3a, 0x6b, 0xa0, 0xab, 0x90, 0xf4, 0xff,
        ]);
        // A literal name and value: "x-a: b".
        block.extend([0x23, b'x', b'-', b'a', 0x01, b'b']);
        // An index beyond 63 (:status 500, index 71) takes two bytes.
        block.extend([0xff, 71 - 63]);
        assert_eq!(
            fields(&block).unwrap(),
            [
                pair(":status", "200"),
                pair("content-type", "www.example.com"),
                pair("x-a", "b"),
                pair(":status", "500"),
            ]
        );
        assert_eq!(status(&block, &mut Vec::new()).unwrap(), 200);
    }

    #[test]
    fn a_section_without_a_valid_status_is_a_message_error() {
        assert_eq!(
            status(&[0x00, 0x00], &mut Vec::new()).unwrap_err().code,
            H3_MESSAGE_ERROR
        );
        let bad = [0x00, 0x00, 0x5f, 24 - 15, 0x02, b'2', b'0'];
        let e = status(&bad, &mut Vec::new()).unwrap_err();
        assert!(e.code == H3_MESSAGE_ERROR || e.code == QPACK_DECOMPRESSION_FAILED);
    }

    #[test]
    fn truncated_and_out_of_range_sections_fail() {
        for block in [
            &[][..],
            &[0x00][..],
            &[0x00, 0x00, 0xff][..],       // index continues past the end
            &[0x00, 0x00, 0xff, 0x7f][..], // static index 63 + 127: beyond
            &[0x00, 0x00, 0x51, 0x05, b'a'][..], // value shorter than its length
            &[0x00, 0x00, 0x51, 0x81, 0xff][..], // Huffman EOS padding
            &[
                0x00, 0x00, 0x27, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f,
            ][..],
        ] {
            assert_eq!(
                fields(block).unwrap_err().code,
                QPACK_DECOMPRESSION_FAILED,
                "{block:?}"
            );
        }
    }

    #[test]
    fn the_encoder_stream_may_only_set_a_zero_capacity() {
        assert_eq!(encoder_instructions(&[]).unwrap(), 0);
        assert_eq!(encoder_instructions(&[0x20, 0x20]).unwrap(), 2);
        // A partial capacity instruction waits for more.
        assert_eq!(encoder_instructions(&[0x20, 0x3f]).unwrap(), 1);
        let e = encoder_instructions(&[0x3f, 0xe1, 0x1f]).unwrap_err();
        assert_eq!(e.code, QPACK_ENCODER_STREAM_ERROR);
        // Insert with name reference (RFC 9204 B.2's encoder stream).
        let e = encoder_instructions(&[0xc0, 0x0f]).unwrap_err();
        assert_eq!(e.code, QPACK_ENCODER_STREAM_ERROR);
    }

    #[test]
    fn a_request_encodes_to_static_entries_and_literals() {
        let t = Target::parse("https://127.0.0.1:8443/").unwrap();
        let block = encode(&RequestSpec::default(), &t).unwrap();
        assert_eq!(&block[..4], [0x00, 0x00, 0xc0 | 17, 0xc0 | 23]);
        assert_eq!(block.last(), Some(&(0xc0 | 1)));
        assert_eq!(
            fields(&block).unwrap(),
            [
                pair(":method", "GET"),
                pair(":scheme", "https"),
                pair(":authority", "127.0.0.1:8443"),
                pair(":path", "/"),
            ]
        );
        let t = Target::parse("https://localhost:8443/long/path?q=1").unwrap();
        let spec = RequestSpec {
            method: "PATCH".into(),
            headers: vec![
                ("Host".into(), "h.example".into()),
                ("User-Agent".into(), "fb".into()),
                ("X-Long".into(), "v".repeat(300)),
            ],
            body: b"abc".to_vec(),
        };
        let f = fields(&encode(&spec, &t).unwrap()).unwrap();
        assert_eq!(f[0], pair(":method", "PATCH"));
        assert_eq!(f[2], pair(":authority", "h.example"));
        assert_eq!(f[3], pair(":path", "/long/path?q=1"));
        assert!(f.contains(&pair("user-agent", "fb")));
        assert!(f.contains(&pair("x-long", &"v".repeat(300))));
        assert!(f.contains(&pair("content-length", "3")));
        let bad = RequestSpec {
            headers: vec![("Connection".into(), "close".into())],
            ..Default::default()
        };
        assert_eq!(encode(&bad, &t).unwrap_err().field, "header");
    }

    #[test]
    fn no_input_makes_the_decoder_panic() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut scratch = Vec::new();
        for round in 0..5000 {
            let len = (seed % 48) as usize;
            let mut bytes = Vec::with_capacity(len + 2);
            if round % 2 == 0 {
                bytes.extend([0x00, 0x00]);
            }
            for _ in 0..len {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                bytes.push(seed as u8);
            }
            let _ = decode(&bytes, &mut scratch, |_, _| {});
            let _ = status(&bytes, &mut scratch);
            let _ = encoder_instructions(&bytes);
        }
    }
}
