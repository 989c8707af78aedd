//! HPACK decoding of the server's header blocks (RFC 7541), by a crate.
//!
//! Every block a connection receives is decoded, in order, even those of
//! streams already given up on: the server's encoder indexes into a table
//! the decoder must keep in step. Only `:status` is kept.

pub(crate) struct Decoder {
    inner: loona_hpack::Decoder<'static>,
}

impl Decoder {
    pub fn new() -> Decoder {
        Decoder {
            inner: loona_hpack::Decoder::new(),
        }
    }

    /// Decodes `block`, calling `field(name, value)` for each field.
    pub fn decode(&mut self, block: &[u8], mut field: impl FnMut(&[u8], &[u8])) -> Result<(), String> {
        self.inner
            .decode_with_cb(block, |k, v| field(&k, &v))
            .map_err(|e| format!("{e:?}"))
    }
}
