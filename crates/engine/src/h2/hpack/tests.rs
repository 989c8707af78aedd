//! The unit tests of `hpack`.

use super::*;

fn hex(s: &str) -> Vec<u8> {
    let s: String = s.split_whitespace().collect();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn fields(d: &mut Decoder, block: &[u8]) -> Result<Vec<(String, String)>, HpackError> {
    let mut f = Vec::new();
    d.decode(block, |n, v| {
        f.push((
            String::from_utf8(n.to_vec()).unwrap(),
            String::from_utf8(v.to_vec()).unwrap(),
        ))
    })?;
    Ok(f)
}

fn pairs(p: &[(&str, &str)]) -> Vec<(String, String)> {
    p.iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect()
}

/// The dynamic table, newest first, and its size.
fn table(d: &Decoder) -> (Vec<(String, String)>, usize) {
    let e = d
        .table
        .entries
        .iter()
        .map(|e| {
            (
                String::from_utf8(e.name().to_vec()).unwrap(),
                String::from_utf8(e.value().to_vec()).unwrap(),
            )
        })
        .collect();
    (e, d.table.size)
}

#[test]
fn rfc_7541_c2_single_representations() {
    // C.2.1: literal with indexing, new name.
    let mut d = Decoder::new();
    let b = hex("400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572");
    assert_eq!(
        fields(&mut d, &b).unwrap(),
        pairs(&[("custom-key", "custom-header")])
    );
    assert_eq!(table(&d), (pairs(&[("custom-key", "custom-header")]), 55));
    // C.2.2: literal without indexing, indexed name.
    let mut d = Decoder::new();
    let b = hex("040c 2f73 616d 706c 652f 7061 7468");
    assert_eq!(
        fields(&mut d, &b).unwrap(),
        pairs(&[(":path", "/sample/path")])
    );
    assert_eq!(table(&d).1, 0);
    // C.2.3: never indexed, new name.
    let b = hex("1008 7061 7373 776f 7264 0673 6563 7265 74");
    assert_eq!(
        fields(&mut d, &b).unwrap(),
        pairs(&[("password", "secret")])
    );
    assert_eq!(table(&d).1, 0);
    // C.2.4: indexed.
    assert_eq!(
        fields(&mut d, &[0x82]).unwrap(),
        pairs(&[(":method", "GET")])
    );
}

/// C.3 (plain) and C.4 (Huffman): three requests on one connection.
#[test]
fn rfc_7541_c3_c4_requests() {
    let first = pairs(&[
        (":method", "GET"),
        (":scheme", "http"),
        (":path", "/"),
        (":authority", "www.example.com"),
    ]);
    let second = pairs(&[
        (":method", "GET"),
        (":scheme", "http"),
        (":path", "/"),
        (":authority", "www.example.com"),
        ("cache-control", "no-cache"),
    ]);
    let third = pairs(&[
        (":method", "GET"),
        (":scheme", "https"),
        (":path", "/index.html"),
        (":authority", "www.example.com"),
        ("custom-key", "custom-value"),
    ]);
    let plain = [
        hex("8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d"),
        hex("8286 84be 5808 6e6f 2d63 6163 6865"),
        hex("8287 85bf 400a 6375 7374 6f6d 2d6b 6579 0c63 7573 746f 6d2d 7661 6c75 65"),
    ];
    let huff = [
        hex("8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff"),
        hex("8286 84be 5886 a8eb 1064 9cbf"),
        hex("8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf"),
    ];
    for blocks in [plain, huff] {
        let mut d = Decoder::new();
        assert_eq!(fields(&mut d, &blocks[0]).unwrap(), first);
        assert_eq!(table(&d), (pairs(&[(":authority", "www.example.com")]), 57));
        assert_eq!(fields(&mut d, &blocks[1]).unwrap(), second);
        assert_eq!(table(&d).1, 110);
        assert_eq!(fields(&mut d, &blocks[2]).unwrap(), third);
        assert_eq!(
            table(&d),
            (
                pairs(&[
                    ("custom-key", "custom-value"),
                    ("cache-control", "no-cache"),
                    (":authority", "www.example.com"),
                ]),
                164
            )
        );
    }
}

/// C.5 (plain) and C.6 (Huffman): three responses with a 256-byte
/// table, so that entries are evicted.
#[test]
fn rfc_7541_c5_c6_responses_with_evictions() {
    let first = pairs(&[
        (":status", "302"),
        ("cache-control", "private"),
        ("date", "Mon, 21 Oct 2013 20:13:21 GMT"),
        ("location", "https://www.example.com"),
    ]);
    let second = pairs(&[
        (":status", "307"),
        ("cache-control", "private"),
        ("date", "Mon, 21 Oct 2013 20:13:21 GMT"),
        ("location", "https://www.example.com"),
    ]);
    let third = pairs(&[
        (":status", "200"),
        ("cache-control", "private"),
        ("date", "Mon, 21 Oct 2013 20:13:22 GMT"),
        ("location", "https://www.example.com"),
        ("content-encoding", "gzip"),
        (
            "set-cookie",
            "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1",
        ),
    ]);
    let plain = [
        hex(
            "4803 3330 3258 0770 7269 7661 7465 611d 4d6f 6e2c 2032 3120 4f63 7420
             3230 3133 2032 303a 3133 3a32 3120 474d 546e 1768 7474 7073 3a2f 2f77
             7777 2e65 7861 6d70 6c65 2e63 6f6d",
        ),
        hex("4803 3330 37c1 c0bf"),
        hex(
            "88c1 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a 3133 3a32
             3220 474d 54c0 5a04 677a 6970 7738 666f 6f3d 4153 444a 4b48 514b 425a
             584f 5157 454f 5049 5541 5851 5745 4f49 553b 206d 6178 2d61 6765 3d33
             3630 303b 2076 6572 7369 6f6e 3d31",
        ),
    ];
    let huff = [
        hex(
            "4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81
             66e0 82a6 2d1b ff6e 919d 29ad 1718 63c7 8f0b 97c8 e9ae 82ae 43d3",
        ),
        hex("4883 640e ffc1 c0bf"),
        hex(
            "88c1 6196 d07a be94 1054 d444 a820 0595 040b 8166 e084 a62d 1bff c05a
             839b d9ab 77ad 94e7 821d d7f2 e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36
             72c1 ab27 0fb5 291f 9587 3160 65c0 03ed 4ee5 b106 3d50 07",
        ),
    ];
    for blocks in [plain, huff] {
        let mut d = Decoder::new();
        d.table.resize(256);
        assert_eq!(fields(&mut d, &blocks[0]).unwrap(), first);
        assert_eq!(table(&d).1, 222);
        assert_eq!(fields(&mut d, &blocks[1]).unwrap(), second);
        // ":status 302" was evicted for ":status 307".
        assert_eq!(
            table(&d),
            (
                pairs(&[
                    (":status", "307"),
                    ("location", "https://www.example.com"),
                    ("date", "Mon, 21 Oct 2013 20:13:21 GMT"),
                    ("cache-control", "private"),
                ]),
                222
            )
        );
        assert_eq!(fields(&mut d, &blocks[2]).unwrap(), third);
        assert_eq!(
            table(&d),
            (
                pairs(&[
                    (
                        "set-cookie",
                        "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1"
                    ),
                    ("content-encoding", "gzip"),
                    ("date", "Mon, 21 Oct 2013 20:13:22 GMT"),
                ]),
                215
            )
        );
    }
}

#[test]
fn size_updates_resize_and_an_entry_may_name_the_one_it_evicts() {
    let mut d = Decoder::new();
    // Table of 50 bytes; "ab: c" is 35 bytes.
    let mut b = vec![0x3f, 50 - 31];
    b.extend_from_slice(&[0x40, 2, b'a', b'b', 1, b'c']);
    assert_eq!(fields(&mut d, &b).unwrap(), pairs(&[("ab", "c")]));
    assert_eq!(table(&d), (pairs(&[("ab", "c")]), 35));
    // A literal indexing the name of entry 62 ("ab"), whose insertion
    // evicts that very entry.
    let b = [0x40 | 62, 1, b'd'];
    assert_eq!(fields(&mut d, &b).unwrap(), pairs(&[("ab", "d")]));
    assert_eq!(table(&d), (pairs(&[("ab", "d")]), 35));
    // An entry larger than the table empties it.
    let mut b = vec![0x40, 1, b'x', 20];
    b.extend_from_slice(&[b'y'; 20]);
    fields(&mut d, &b).unwrap();
    assert_eq!(table(&d), (vec![], 0));
    // Size 0 then back to the limit, both at the start of a block.
    let b = [0x20, 0x3f, 0xe1, 0x1f, 0x40, 1, b'k', 1, b'v'];
    assert_eq!(fields(&mut d, &b).unwrap(), pairs(&[("k", "v")]));
    assert_eq!(d.table.max, TABLE_LIMIT);
    assert_eq!(
        fields(&mut d, &[0xbe]).unwrap(),
        pairs(&[("k", "v")]),
        "index 62 is the newest entry"
    );
}

#[test]
fn malformed_blocks_are_errors() {
    let cases: Vec<(Vec<u8>, HpackError)> = vec![
        // Index 0, and beyond both tables (static 61, dynamic empty).
        (vec![0x80], HpackError::BadIndex(0)),
        (vec![0xbe], HpackError::BadIndex(62)),
        (vec![0x7f, 0x00, 0x01, b'v'], HpackError::BadIndex(63)),
        // Integers cut short, and too long.
        (vec![0xff], HpackError::Truncated),
        (vec![0xff, 0x80], HpackError::Truncated),
        (
            vec![0xff, 0xff, 0xff, 0xff, 0xff, 0x01],
            HpackError::IntegerTooLarge,
        ),
        // A string longer than what is left.
        (vec![0x04, 0x05, b'/', b'a'], HpackError::Truncated),
        (vec![0x40, 0x03, b'a'], HpackError::Truncated),
        (vec![0x04], HpackError::Truncated),
        (vec![0x40, 0x01, b'a'], HpackError::Truncated),
        // Huffman: EOS; padding of a whole byte.
        (
            vec![0x04, 0x84, 0xff, 0xff, 0xff, 0xff],
            HpackError::Huffman(HuffmanError::Eos),
        ),
        (
            vec![0x04, 0x82, 0x1f, 0xff],
            HpackError::Huffman(HuffmanError::Padding),
        ),
        (
            vec![0x40, 0x81, 0x1e, 0x01, b'v'],
            HpackError::Huffman(HuffmanError::Padding),
        ),
        // Size updates above the limit, or after a field.
        (
            vec![0x3f, 0xe2, 0x1f],
            HpackError::TableSizeAboveLimit(4097),
        ),
        (vec![0x88, 0x20], HpackError::LateTableSizeUpdate),
    ];
    for (block, want) in cases {
        let mut d = Decoder::new();
        assert_eq!(d.decode(&block, |_, _| {}), Err(want), "{block:02x?}");
    }
}

#[test]
fn no_input_panics() {
    // Every block of up to three bytes from a small alphabet, and every
    // prefix of the RFC's blocks: each decodes or is an error.
    let alphabet = [
        0x00, 0x01, 0x0f, 0x10, 0x1f, 0x20, 0x3f, 0x40, 0x41, 0x7f, 0x80, 0x81, 0x82, 0xbe, 0xbf,
        0xff,
    ];
    for &a in &alphabet {
        for &b in &alphabet {
            for &c in &alphabet {
                let mut d = Decoder::new();
                let _ = d.decode(&[a, b, c], |_, _| {});
                let _ = d.decode(&[c, b, a], |_, _| {});
            }
        }
    }
    let block = hex(
        "4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81
                     66e0 82a6 2d1b ff6e 919d 29ad 1718 63c7 8f0b 97c8 e9ae 82ae 43d3",
    );
    for cut in 0..block.len() {
        let mut d = Decoder::new();
        let _ = d.decode(&block[..cut], |_, _| {});
    }
}

#[test]
fn a_steady_stream_of_indexed_answers_reuses_the_evicted_buffers() {
    let mut d = Decoder::new();
    // An nginx-like answer: :status 200, then "server" and "date"
    // inserted (incremental indexing, indexed names) at every answer.
    let mut n = 0;
    for k in 0..1000 {
        let date = format!("Thu, 26 Nov 2026 13:{:02}:{:02} GMT", k / 60 % 60, k % 60);
        let mut b = vec![0x88, 0x40 | 54, 5];
        b.extend_from_slice(b"nginx");
        b.push(0x40 | 33);
        b.push(date.len() as u8);
        b.extend_from_slice(date.as_bytes());
        let mut status = None;
        d.decode(&b, |name, value| {
            n += 1;
            if name == b":status" {
                status = Some(value.to_vec());
            }
        })
        .unwrap();
        assert_eq!(status.as_deref(), Some(&b"200"[..]));
        assert!(d.table.size <= TABLE_LIMIT);
    }
    assert_eq!(n, 3000);
    let (entries, size) = table(&d);
    assert_eq!(entries[0].0, "date");
    assert_eq!(
        size,
        entries.len() * 32
            + entries
                .iter()
                .map(|(a, b)| a.len() + b.len())
                .sum::<usize>()
    );
}
