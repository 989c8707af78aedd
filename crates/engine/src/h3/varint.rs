//! QUIC's variable-length integers (RFC 9000 §16), as HTTP/3 frames and
//! stream types use them.

/// The largest value a varint holds.
pub(crate) const MAX: u64 = (1 << 62) - 1;

/// The value at the start of `buf` and its length in bytes; `None` while
/// `buf` holds only part of it.
pub(crate) fn decode(buf: &[u8]) -> Option<(u64, usize)> {
    let first = *buf.first()?;
    let len = 1usize << (first >> 6);
    if buf.len() < len {
        return None;
    }
    let mut v = u64::from(first & 0x3f);
    for &b in &buf[1..len] {
        v = (v << 8) | u64::from(b);
    }
    Some((v, len))
}

/// Appends `v` (at most [`MAX`]) in its shortest encoding.
pub(crate) fn encode(v: u64, out: &mut Vec<u8>) {
    debug_assert!(v <= MAX);
    if v < 1 << 6 {
        out.push(v as u8);
    } else if v < 1 << 14 {
        out.extend_from_slice(&(v as u16 | 0x4000).to_be_bytes());
    } else if v < 1 << 30 {
        out.extend_from_slice(&(v as u32 | 0x8000_0000).to_be_bytes());
    } else {
        out.extend_from_slice(&(v.min(MAX) | 0xc000_0000_0000_0000).to_be_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rfc_examples_decode() {
        // RFC 9000 Appendix A.1.
        let cases: [(&[u8], u64); 4] = [
            (
                &[0xc2, 0x19, 0x7c, 0x5e, 0xff, 0x14, 0xe8, 0x8c],
                151_288_809_941_952_652,
            ),
            (&[0x9d, 0x7f, 0x3e, 0x7d], 494_878_333),
            (&[0x7b, 0xbd], 15_293),
            (&[0x25], 37),
        ];
        for (bytes, v) in cases {
            assert_eq!(decode(bytes), Some((v, bytes.len())));
            let mut out = Vec::new();
            encode(v, &mut out);
            assert_eq!(out, bytes);
        }
        // The two-byte encoding of 37 is valid too.
        assert_eq!(decode(&[0x40, 0x25]), Some((37, 2)));
    }

    #[test]
    fn a_partial_varint_asks_for_more() {
        assert_eq!(decode(&[]), None);
        assert_eq!(decode(&[0x7b]), None);
        assert_eq!(decode(&[0xc2, 0x19, 0x7c]), None);
    }

    #[test]
    fn every_boundary_round_trips() {
        for v in [0, 63, 64, 16_383, 16_384, (1 << 30) - 1, 1 << 30, MAX] {
            let mut out = Vec::new();
            encode(v, &mut out);
            assert_eq!(decode(&out), Some((v, out.len())));
        }
    }
}
