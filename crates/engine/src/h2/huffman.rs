//! HPACK's Huffman code (RFC 7541 §5.2, Appendix B), decoded four bits at a
//! time by a state machine built once, at compile time.
//!
//! A state is a node of the code tree (its 256 inner nodes, the root 0);
//! each of its 16 steps says where four more bits lead and which symbol, if
//! any, they completed. The shortest code is five bits long, so four bits
//! complete at most one symbol. A decoded string costs two table look-ups
//! per byte (the table is 12 KiB: it stays in the cache), and nothing is
//! rebuilt per string.

/// Each symbol's code (right-aligned) and its length in bits: the bytes
/// 0..=255, then EOS (256). RFC 7541 Appendix B.
const CODES: [(u32, u8); 257] = [
    (0x1ff8, 13),
    (0x7fffd8, 23),
    (0xfffffe2, 28),
    (0xfffffe3, 28),
    (0xfffffe4, 28),
    (0xfffffe5, 28),
    (0xfffffe6, 28),
    (0xfffffe7, 28),
    (0xfffffe8, 28),
    (0xffffea, 24),
    (0x3ffffffc, 30),
    (0xfffffe9, 28),
    (0xfffffea, 28),
    (0x3ffffffd, 30),
    (0xfffffeb, 28),
    (0xfffffec, 28),
    (0xfffffed, 28),
    (0xfffffee, 28),
    (0xfffffef, 28),
    (0xffffff0, 28),
    (0xffffff1, 28),
    (0xffffff2, 28),
    (0x3ffffffe, 30),
    (0xffffff3, 28),
    (0xffffff4, 28),
    (0xffffff5, 28),
    (0xffffff6, 28),
    (0xffffff7, 28),
    (0xffffff8, 28),
    (0xffffff9, 28),
    (0xffffffa, 28),
    (0xffffffb, 28),
    (0x14, 6),
    (0x3f8, 10),
    (0x3f9, 10),
    (0xffa, 12),
    (0x1ff9, 13),
    (0x15, 6),
    (0xf8, 8),
    (0x7fa, 11),
    (0x3fa, 10),
    (0x3fb, 10),
    (0xf9, 8),
    (0x7fb, 11),
    (0xfa, 8),
    (0x16, 6),
    (0x17, 6),
    (0x18, 6),
    (0x0, 5),
    (0x1, 5),
    (0x2, 5),
    (0x19, 6),
    (0x1a, 6),
    (0x1b, 6),
    (0x1c, 6),
    (0x1d, 6),
    (0x1e, 6),
    (0x1f, 6),
    (0x5c, 7),
    (0xfb, 8),
    (0x7ffc, 15),
    (0x20, 6),
    (0xffb, 12),
    (0x3fc, 10),
    (0x1ffa, 13),
    (0x21, 6),
    (0x5d, 7),
    (0x5e, 7),
    (0x5f, 7),
    (0x60, 7),
    (0x61, 7),
    (0x62, 7),
    (0x63, 7),
    (0x64, 7),
    (0x65, 7),
    (0x66, 7),
    (0x67, 7),
    (0x68, 7),
    (0x69, 7),
    (0x6a, 7),
    (0x6b, 7),
    (0x6c, 7),
    (0x6d, 7),
    (0x6e, 7),
    (0x6f, 7),
    (0x70, 7),
    (0x71, 7),
    (0x72, 7),
    (0xfc, 8),
    (0x73, 7),
    (0xfd, 8),
    (0x1ffb, 13),
    (0x7fff0, 19),
    (0x1ffc, 13),
    (0x3ffc, 14),
    (0x22, 6),
    (0x7ffd, 15),
    (0x3, 5),
    (0x23, 6),
    (0x4, 5),
    (0x24, 6),
    (0x5, 5),
    (0x25, 6),
    (0x26, 6),
    (0x27, 6),
    (0x6, 5),
    (0x74, 7),
    (0x75, 7),
    (0x28, 6),
    (0x29, 6),
    (0x2a, 6),
    (0x7, 5),
    (0x2b, 6),
    (0x76, 7),
    (0x2c, 6),
    (0x8, 5),
    (0x9, 5),
    (0x2d, 6),
    (0x77, 7),
    (0x78, 7),
    (0x79, 7),
    (0x7a, 7),
    (0x7b, 7),
    (0x7ffe, 15),
    (0x7fc, 11),
    (0x3ffd, 14),
    (0x1ffd, 13),
    (0xffffffc, 28),
    (0xfffe6, 20),
    (0x3fffd2, 22),
    (0xfffe7, 20),
    (0xfffe8, 20),
    (0x3fffd3, 22),
    (0x3fffd4, 22),
    (0x3fffd5, 22),
    (0x7fffd9, 23),
    (0x3fffd6, 22),
    (0x7fffda, 23),
    (0x7fffdb, 23),
    (0x7fffdc, 23),
    (0x7fffdd, 23),
    (0x7fffde, 23),
    (0xffffeb, 24),
    (0x7fffdf, 23),
    (0xffffec, 24),
    (0xffffed, 24),
    (0x3fffd7, 22),
    (0x7fffe0, 23),
    (0xffffee, 24),
    (0x7fffe1, 23),
    (0x7fffe2, 23),
    (0x7fffe3, 23),
    (0x7fffe4, 23),
    (0x1fffdc, 21),
    (0x3fffd8, 22),
    (0x7fffe5, 23),
    (0x3fffd9, 22),
    (0x7fffe6, 23),
    (0x7fffe7, 23),
    (0xffffef, 24),
    (0x3fffda, 22),
    (0x1fffdd, 21),
    (0xfffe9, 20),
    (0x3fffdb, 22),
    (0x3fffdc, 22),
    (0x7fffe8, 23),
    (0x7fffe9, 23),
    (0x1fffde, 21),
    (0x7fffea, 23),
    (0x3fffdd, 22),
    (0x3fffde, 22),
    (0xfffff0, 24),
    (0x1fffdf, 21),
    (0x3fffdf, 22),
    (0x7fffeb, 23),
    (0x7fffec, 23),
    (0x1fffe0, 21),
    (0x1fffe1, 21),
    (0x3fffe0, 22),
    (0x1fffe2, 21),
    (0x7fffed, 23),
    (0x3fffe1, 22),
    (0x7fffee, 23),
    (0x7fffef, 23),
    (0xfffea, 20),
    (0x3fffe2, 22),
    (0x3fffe3, 22),
    (0x3fffe4, 22),
    (0x7ffff0, 23),
    (0x3fffe5, 22),
    (0x3fffe6, 22),
    (0x7ffff1, 23),
    (0x3ffffe0, 26),
    (0x3ffffe1, 26),
    (0xfffeb, 20),
    (0x7fff1, 19),
    (0x3fffe7, 22),
    (0x7ffff2, 23),
    (0x3fffe8, 22),
    (0x1ffffec, 25),
    (0x3ffffe2, 26),
    (0x3ffffe3, 26),
    (0x3ffffe4, 26),
    (0x7ffffde, 27),
    (0x7ffffdf, 27),
    (0x3ffffe5, 26),
    (0xfffff1, 24),
    (0x1ffffed, 25),
    (0x7fff2, 19),
    (0x1fffe3, 21),
    (0x3ffffe6, 26),
    (0x7ffffe0, 27),
    (0x7ffffe1, 27),
    (0x3ffffe7, 26),
    (0x7ffffe2, 27),
    (0xfffff2, 24),
    (0x1fffe4, 21),
    (0x1fffe5, 21),
    (0x3ffffe8, 26),
    (0x3ffffe9, 26),
    (0xffffffd, 28),
    (0x7ffffe3, 27),
    (0x7ffffe4, 27),
    (0x7ffffe5, 27),
    (0xfffec, 20),
    (0xfffff3, 24),
    (0xfffed, 20),
    (0x1fffe6, 21),
    (0x3fffe9, 22),
    (0x1fffe7, 21),
    (0x1fffe8, 21),
    (0x7ffff3, 23),
    (0x3fffea, 22),
    (0x3fffeb, 22),
    (0x1ffffee, 25),
    (0x1ffffef, 25),
    (0xfffff4, 24),
    (0xfffff5, 24),
    (0x3ffffea, 26),
    (0x7ffff4, 23),
    (0x3ffffeb, 26),
    (0x7ffffe6, 27),
    (0x3ffffec, 26),
    (0x3ffffed, 26),
    (0x7ffffe7, 27),
    (0x7ffffe8, 27),
    (0x7ffffe9, 27),
    (0x7ffffea, 27),
    (0x7ffffeb, 27),
    (0xffffffe, 28),
    (0x7ffffec, 27),
    (0x7ffffed, 27),
    (0x7ffffee, 27),
    (0x7ffffef, 27),
    (0x7fffff0, 27),
    (0x3ffffee, 26),
    (0x3fffffff, 30),
];

/// End of string: a code a string may never contain (§5.2).
const EOS: u16 = 256;

/// Four more bits from a state.
#[derive(Clone, Copy)]
struct Step {
    next: u8,
    sym: u8,
    flags: u8,
}

/// The step completed a symbol: `sym`.
const EMIT: u8 = 1;
/// The step completed EOS: the string is malformed.
const FAIL: u8 = 2;

struct Machine {
    steps: [[Step; 16]; 256],
    /// States a string may end in: the root, or up to seven one-bits from
    /// it (padding is the start of EOS, shorter than a byte).
    accept: [bool; 256],
}

static MACHINE: Machine = build();

/// What is wrong with a Huffman-coded string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HuffmanError {
    /// It contains the EOS symbol.
    Eos,
    /// It ends in padding that is not the start of EOS or is longer than
    /// seven bits.
    Padding,
}

/// Decodes `src`, appending the bytes to `out`.
pub(crate) fn decode(src: &[u8], out: &mut Vec<u8>) -> Result<(), HuffmanError> {
    // At most 8/5 of a symbol per bit: one reservation, no growth inside.
    out.reserve(src.len() * 8 / 5 + 1);
    let mut state = 0usize;
    for &b in src {
        for nibble in [b >> 4, b & 0x0f] {
            let s = MACHINE.steps[state][nibble as usize];
            if s.flags & FAIL != 0 {
                return Err(HuffmanError::Eos);
            }
            if s.flags & EMIT != 0 {
                out.push(s.sym);
            }
            state = s.next as usize;
        }
    }
    if MACHINE.accept[state] {
        Ok(())
    } else {
        Err(HuffmanError::Padding)
    }
}

/// The code tree's inner nodes: each child is an inner node's id or
/// `LEAF | symbol`.
const LEAF: u16 = 0x8000;
const NONE: u16 = 0xffff;

const fn build() -> Machine {
    let mut child = [[NONE; 2]; 256];
    let mut nodes = 1;
    let mut s = 0;
    while s < CODES.len() {
        let (code, len) = CODES[s];
        let mut node = 0;
        let mut b = len as u32;
        while b > 1 {
            b -= 1;
            let bit = ((code >> b) & 1) as usize;
            if child[node][bit] == NONE {
                assert!(nodes < 256, "the code has 256 inner nodes");
                child[node][bit] = nodes as u16;
                nodes += 1;
            }
            assert!(
                child[node][bit] & LEAF == 0,
                "no code is a prefix of another"
            );
            node = child[node][bit] as usize;
        }
        let bit = (code & 1) as usize;
        assert!(child[node][bit] == NONE, "no code is a prefix of another");
        child[node][bit] = LEAF | s as u16;
        s += 1;
    }
    // A complete code: every inner node has both children.
    assert!(nodes == 256);
    let mut n = 0;
    while n < 256 {
        assert!(child[n][0] != NONE && child[n][1] != NONE);
        n += 1;
    }
    let mut accept = [false; 256];
    let mut node = 0;
    let mut depth = 0;
    accept[0] = true;
    while depth < 7 {
        node = child[node][1] as usize;
        accept[node] = true;
        depth += 1;
    }
    let mut steps = [[Step {
        next: 0,
        sym: 0,
        flags: 0,
    }; 16]; 256];
    let mut n = 0;
    while n < 256 {
        let mut nibble = 0;
        while nibble < 16 {
            let mut node = n;
            let mut step = Step {
                next: 0,
                sym: 0,
                flags: 0,
            };
            let mut k = 4;
            while k > 0 {
                k -= 1;
                let c = child[node][(nibble >> k) & 1];
                if c & LEAF == 0 {
                    node = c as usize;
                } else if c & !LEAF == EOS {
                    step.flags = FAIL;
                    node = 0;
                    break;
                } else {
                    step.flags = EMIT;
                    step.sym = (c & !LEAF) as u8;
                    node = 0;
                }
            }
            step.next = node as u8;
            steps[n][nibble] = step;
            nibble += 1;
        }
        n += 1;
    }
    Machine { steps, accept }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `s` Huffman-coded, padded with the start of EOS.
    fn encode(s: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        let (mut acc, mut bits) = (0u64, 0u32);
        for &b in s {
            let (code, len) = CODES[b as usize];
            acc = (acc << len) | code as u64;
            bits += len as u32;
            while bits >= 8 {
                bits -= 8;
                out.push((acc >> bits) as u8);
            }
        }
        if bits > 0 {
            out.push(((acc << (8 - bits)) as u8) | (0xff >> bits));
        }
        out
    }

    fn decoded(src: &[u8]) -> Result<Vec<u8>, HuffmanError> {
        let mut out = Vec::new();
        decode(src, &mut out).map(|()| out)
    }

    #[test]
    fn rfc_7541_examples_decode() {
        // C.4.1, C.4.2, C.6.1.
        let cases: [(&str, &str); 5] = [
            ("f1e3c2e5f23a6ba0ab90f4ff", "www.example.com"),
            ("a8eb10649cbf", "no-cache"),
            ("25a849e95ba97d7f", "custom-key"),
            (
                "d07abe941054d444a8200595040b8166e082a62d1bff",
                "Mon, 21 Oct 2013 20:13:21 GMT",
            ),
            (
                "9d29ad171863c78f0b97c8e9ae82ae43d3",
                "https://www.example.com",
            ),
        ];
        for (hex, text) in cases {
            let bytes: Vec<u8> = (0..hex.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
                .collect();
            assert_eq!(decoded(&bytes).unwrap(), text.as_bytes(), "{text}");
            assert_eq!(encode(text.as_bytes()), bytes, "{text}");
        }
    }

    #[test]
    fn every_byte_and_every_padding_length_round_trips() {
        let all: Vec<u8> = (0..=255).collect();
        assert_eq!(decoded(&encode(&all)).unwrap(), all);
        for b in 0..=255u8 {
            for n in 1..6 {
                let s = vec![b; n];
                assert_eq!(decoded(&encode(&s)).unwrap(), s, "{b} × {n}");
            }
        }
        assert_eq!(decoded(&[]).unwrap(), b"");
    }

    #[test]
    fn eos_and_bad_padding_are_errors() {
        // EOS itself (30 one-bits), padded: the symbol is forbidden.
        assert_eq!(decoded(&[0xff, 0xff, 0xff, 0xff]), Err(HuffmanError::Eos));
        // A whole byte of padding after a symbol: longer than seven bits.
        // 'a' is 00011 (5 bits): 00011111 then 11111111.
        assert_eq!(decoded(&[0x1f, 0xff]), Err(HuffmanError::Padding));
        assert_eq!(decoded(&[0x1f]).unwrap(), b"a");
        // Padding with a zero bit in it: not the start of EOS.
        assert_eq!(decoded(&[0x1e]), Err(HuffmanError::Padding));
        // '\0' (13 bits) then three bits of padding; then cut after its
        // first byte.
        assert_eq!(decoded(&[0xff, 0xc7]).unwrap(), b"\0");
        assert_eq!(decoded(&[0xff]), Err(HuffmanError::Padding));
    }
}
