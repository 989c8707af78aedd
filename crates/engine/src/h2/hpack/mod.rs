//! HPACK decoding of the server's header blocks (RFC 7541).
//!
//! Every block a connection receives is decoded, in order, even those of
//! streams already given up on: the server's encoder indexes into a table
//! the decoder must keep in step. Written for the hot path: a field is
//! handed to the caller as slices (of the block, the static table, the
//! dynamic table or a buffer the decoder reuses), Huffman strings are
//! decoded by a table built at compile time (see [`super::huffman`]), and
//! an entry evicted from the dynamic table lends its buffer to the next
//! one, so a steady stream of like answers seldom allocates. Anything malformed
//! is an error, never a panic: the connection then ends with
//! `COMPRESSION_ERROR`.

use std::collections::VecDeque;
use std::fmt;

use super::huffman::{self, HuffmanError};

/// The dynamic table's size limit the client allows: HTTP/2's default
/// `SETTINGS_HEADER_TABLE_SIZE`, which the client never changes.
pub(crate) const TABLE_LIMIT: usize = 4096;

/// An entry's size beyond its name and value (§4.1).
const ENTRY_OVERHEAD: usize = 32;

/// The static table (RFC 7541 Appendix A); index 1 is the first entry.
const STATIC: [(&[u8], &[u8]); 61] = [
    (b":authority", b""),
    (b":method", b"GET"),
    (b":method", b"POST"),
    (b":path", b"/"),
    (b":path", b"/index.html"),
    (b":scheme", b"http"),
    (b":scheme", b"https"),
    (b":status", b"200"),
    (b":status", b"204"),
    (b":status", b"206"),
    (b":status", b"304"),
    (b":status", b"400"),
    (b":status", b"404"),
    (b":status", b"500"),
    (b"accept-charset", b""),
    (b"accept-encoding", b"gzip, deflate"),
    (b"accept-language", b""),
    (b"accept-ranges", b""),
    (b"accept", b""),
    (b"access-control-allow-origin", b""),
    (b"age", b""),
    (b"allow", b""),
    (b"authorization", b""),
    (b"cache-control", b""),
    (b"content-disposition", b""),
    (b"content-encoding", b""),
    (b"content-language", b""),
    (b"content-length", b""),
    (b"content-location", b""),
    (b"content-range", b""),
    (b"content-type", b""),
    (b"cookie", b""),
    (b"date", b""),
    (b"etag", b""),
    (b"expect", b""),
    (b"expires", b""),
    (b"from", b""),
    (b"host", b""),
    (b"if-match", b""),
    (b"if-modified-since", b""),
    (b"if-none-match", b""),
    (b"if-range", b""),
    (b"if-unmodified-since", b""),
    (b"last-modified", b""),
    (b"link", b""),
    (b"location", b""),
    (b"max-forwards", b""),
    (b"proxy-authenticate", b""),
    (b"proxy-authorization", b""),
    (b"range", b""),
    (b"referer", b""),
    (b"refresh", b""),
    (b"retry-after", b""),
    (b"server", b""),
    (b"set-cookie", b""),
    (b"strict-transport-security", b""),
    (b"transfer-encoding", b""),
    (b"user-agent", b""),
    (b"vary", b""),
    (b"via", b""),
    (b"www-authenticate", b""),
];

/// Why a header block does not decode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HpackError {
    /// The block ends inside a representation.
    Truncated,
    /// An integer longer than any this decoder accepts (above 2²⁸).
    IntegerTooLarge,
    /// Index 0, or one beyond both tables.
    BadIndex(usize),
    /// A dynamic table size update above what the client allows.
    TableSizeAboveLimit(usize),
    /// A dynamic table size update after the block's first field.
    LateTableSizeUpdate,
    Huffman(HuffmanError),
}

impl fmt::Display for HpackError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HpackError::Truncated => f.write_str("it ends inside a field"),
            HpackError::IntegerTooLarge => f.write_str("an integer above 2^28"),
            HpackError::BadIndex(i) => write!(f, "index {i}, in neither table"),
            HpackError::TableSizeAboveLimit(n) => write!(
                f,
                "a dynamic table size update to {n}, above the {TABLE_LIMIT} the client allows"
            ),
            HpackError::LateTableSizeUpdate => {
                f.write_str("a dynamic table size update after a field")
            }
            HpackError::Huffman(HuffmanError::Eos) => f.write_str("a Huffman string holding EOS"),
            HpackError::Huffman(HuffmanError::Padding) => {
                f.write_str("a Huffman string with bad padding")
            }
        }
    }
}

/// One dynamic table entry: its name and value in one buffer.
struct Entry {
    bytes: Vec<u8>,
    name_len: usize,
}

impl Entry {
    fn name(&self) -> &[u8] {
        &self.bytes[..self.name_len]
    }
    fn value(&self) -> &[u8] {
        &self.bytes[self.name_len..]
    }
    fn size(&self) -> usize {
        self.bytes.len() + ENTRY_OVERHEAD
    }
}

/// The dynamic table (§2.3.2, §4): newest entry first.
struct Table {
    entries: VecDeque<Entry>,
    size: usize,
    max: usize,
    /// An evicted entry's buffer, for the next one.
    spare: Vec<u8>,
}

impl Table {
    fn get(&self, index: usize) -> Result<(&[u8], &[u8]), HpackError> {
        if index == 0 {
            return Err(HpackError::BadIndex(0));
        }
        if index <= STATIC.len() {
            return Ok(STATIC[index - 1]);
        }
        self.entries
            .get(index - STATIC.len() - 1)
            .map(|e| (e.name(), e.value()))
            .ok_or(HpackError::BadIndex(index))
    }

    fn evict_to(&mut self, max: usize) {
        while self.size > max {
            let Some(e) = self.entries.pop_back() else {
                break;
            };
            self.size -= e.size();
            if e.bytes.capacity() > self.spare.capacity() {
                self.spare = e.bytes;
            }
        }
    }

    fn resize(&mut self, max: usize) {
        self.max = max;
        self.evict_to(max);
    }

    /// Adds a field. Its name may be an entry's that the insertion evicts
    /// (§4.4): `name` and `value` are the decoder's own copies.
    fn insert(&mut self, name: &[u8], value: &[u8]) {
        let size = name.len() + value.len() + ENTRY_OVERHEAD;
        if size > self.max {
            // Larger than the whole table: it empties the table (§4.4).
            self.evict_to(0);
            return;
        }
        self.evict_to(self.max - size);
        let mut bytes = std::mem::take(&mut self.spare);
        bytes.clear();
        bytes.extend_from_slice(name);
        bytes.extend_from_slice(value);
        self.entries.push_front(Entry {
            bytes,
            name_len: name.len(),
        });
        self.size += size;
    }
}

pub(crate) struct Decoder {
    table: Table,
    /// A field's name and value when they are not slices of something
    /// else (Huffman-decoded, or to be inserted).
    name: Vec<u8>,
    value: Vec<u8>,
}

/// Where a string of the block is: `raw` bytes, Huffman-coded or not.
struct Str<'a> {
    raw: &'a [u8],
    huffman: bool,
}

impl Decoder {
    pub fn new() -> Decoder {
        Decoder {
            table: Table {
                entries: VecDeque::new(),
                size: 0,
                max: TABLE_LIMIT,
                spare: Vec::new(),
            },
            name: Vec::new(),
            value: Vec::new(),
        }
    }

    /// Decodes `block`, calling `field(name, value)` for each field, in
    /// order.
    pub fn decode(
        &mut self,
        block: &[u8],
        mut field: impl FnMut(&[u8], &[u8]),
    ) -> Result<(), HpackError> {
        let mut pos = 0;
        let mut fields = 0usize;
        while pos < block.len() {
            let b = block[pos];
            if b & 0x80 != 0 {
                // Indexed field (§6.1).
                let i = integer(block, &mut pos, 7)?;
                let (n, v) = self.table.get(i)?;
                field(n, v);
            } else if b & 0xc0 == 0x40 {
                // Literal with incremental indexing (§6.2.1): decoded into
                // the decoder's own buffers, then inserted.
                let i = integer(block, &mut pos, 6)?;
                self.name.clear();
                if i == 0 {
                    let s = string(block, &mut pos)?;
                    into(&s, &mut self.name)?;
                } else {
                    let (n, _) = self.table.get(i)?;
                    self.name.extend_from_slice(n);
                }
                let s = string(block, &mut pos)?;
                self.value.clear();
                into(&s, &mut self.value)?;
                field(&self.name, &self.value);
                self.table.insert(&self.name, &self.value);
            } else if b & 0xe0 == 0x20 {
                // Dynamic table size update (§6.3): only before the first
                // field (§4.2).
                if fields > 0 {
                    return Err(HpackError::LateTableSizeUpdate);
                }
                let max = integer(block, &mut pos, 5)?;
                if max > TABLE_LIMIT {
                    return Err(HpackError::TableSizeAboveLimit(max));
                }
                self.table.resize(max);
                continue;
            } else {
                // Literal without indexing (0000) or never indexed (0001)
                // (§6.2.2, §6.2.3): nothing is kept; Huffman strings are
                // decoded into the buffers, others handed on as they are.
                let i = integer(block, &mut pos, 4)?;
                let name_str = if i == 0 {
                    Some(string(block, &mut pos)?)
                } else {
                    None
                };
                let value_str = string(block, &mut pos)?;
                let name: &[u8] = match &name_str {
                    None => self.table.get(i)?.0,
                    Some(s) => view(s, &mut self.name)?,
                };
                let value = view(&value_str, &mut self.value)?;
                field(name, value);
            }
            fields += 1;
        }
        // A rare huge field is not kept for the connection's lifetime.
        for b in [&mut self.name, &mut self.value] {
            if b.capacity() > 64 * 1024 {
                *b = Vec::new();
            }
        }
        Ok(())
    }
}

/// An integer with an `n`-bit prefix at `block[*pos]` (§5.1).
fn integer(block: &[u8], pos: &mut usize, n: u32) -> Result<usize, HpackError> {
    let max = (1usize << n) - 1;
    let first = *block.get(*pos).ok_or(HpackError::Truncated)? as usize & max;
    *pos += 1;
    if first < max {
        return Ok(first);
    }
    let mut v = max;
    let mut shift = 0;
    loop {
        let b = *block.get(*pos).ok_or(HpackError::Truncated)?;
        *pos += 1;
        if shift > 21 {
            // A fifth continuation byte: beyond 2²⁸, more than any length
            // or index a block of at most 1 MiB can hold.
            return Err(HpackError::IntegerTooLarge);
        }
        v += ((b & 0x7f) as usize) << shift;
        if b & 0x80 == 0 {
            return Ok(v);
        }
        shift += 7;
    }
}

/// A string literal at `block[*pos]` (§5.2), not yet decoded.
fn string<'a>(block: &'a [u8], pos: &mut usize) -> Result<Str<'a>, HpackError> {
    let huffman = *block.get(*pos).ok_or(HpackError::Truncated)? & 0x80 != 0;
    let len = integer(block, pos, 7)?;
    let raw = block
        .get(*pos..pos.saturating_add(len))
        .ok_or(HpackError::Truncated)?;
    *pos += len;
    Ok(Str { raw, huffman })
}

/// Appends the string's bytes to `out`.
fn into(s: &Str, out: &mut Vec<u8>) -> Result<(), HpackError> {
    if s.huffman {
        huffman::decode(s.raw, out).map_err(HpackError::Huffman)
    } else {
        out.extend_from_slice(s.raw);
        Ok(())
    }
}

/// The string's bytes: the block's own when not Huffman-coded, else
/// decoded into `buf`.
fn view<'a>(s: &Str<'a>, buf: &'a mut Vec<u8>) -> Result<&'a [u8], HpackError> {
    if !s.huffman {
        return Ok(s.raw);
    }
    buf.clear();
    huffman::decode(s.raw, buf).map_err(HpackError::Huffman)?;
    Ok(buf)
}

#[cfg(test)]
mod tests;
