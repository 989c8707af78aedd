//! Every request of a run, serialised before it starts into one buffer, in
//! the order they go out: the hot path only picks the next one.

use crate::config::LoadConfig;
use crate::config_error::ConfigError;
use crate::request::RequestSpec;

#[derive(Debug, Clone, Copy)]
pub(crate) struct Entry {
    pub start: usize,
    pub end: usize,
    /// HTTP/2: where the header block ends and the body begins (`end` over
    /// HTTP/1.1, whose bytes are the whole request).
    pub body: usize,
    /// Index into the run's target names (0 without a mix).
    pub target: u16,
    /// May be sent again when its connection was lost before any byte of
    /// its answer came (RFC 9110 §9.2.2).
    pub idempotent: bool,
}

/// Encodes a request's head for the wire.
pub(crate) type HeadEncoder =
    fn(&RequestSpec, &crate::target::Target) -> Result<Vec<u8>, ConfigError>;

pub(crate) struct RequestPool {
    bytes: Vec<u8>,
    entries: Vec<Entry>,
}

impl RequestPool {
    /// The configuration's requests: its mix, or its one request, as
    /// HTTP/1.1 bytes, or as HTTP/2 header blocks each followed by its body
    /// (see [`crate::h2::request`]). The list
    /// is repeated until it holds `pipeline` entries, so that the requests
    /// a connection sends back to back are one contiguous slice (one write).
    pub fn build(cfg: &LoadConfig) -> Result<RequestPool, ConfigError> {
        Self::build_encoded(cfg, None)
    }

    /// The same, each request's head made by `encode` (HTTP/3's QPACK
    /// field section, which the caller names: this module stays below the
    /// protocols) and followed by its body.
    pub fn build_encoded(
        cfg: &LoadConfig,
        encode: Option<HeadEncoder>,
    ) -> Result<RequestPool, ConfigError> {
        let h2 = cfg.protocol.is_h2();
        // (bytes, where the body starts, target, idempotent)
        let wire = |spec: &RequestSpec,
                    target: &crate::target::Target|
         -> Result<(Vec<u8>, usize), ConfigError> {
            if let Some(encode) = encode {
                // The method is checked as HTTP/1.1 checks it.
                spec.serialize(target)?;
                let mut w = encode(spec, target)?;
                let n = w.len();
                w.extend_from_slice(&spec.body);
                return Ok((w, n));
            }
            if !h2 {
                let w = spec.serialize(target)?;
                let n = w.len();
                return Ok((w, n));
            }
            // The method is checked as HTTP/1.1 checks it.
            spec.serialize(target)?;
            let mut w = crate::h2::request::encode(spec, target)?;
            if w.len() > crate::h2::frame::DEFAULT_MAX_FRAME {
                return Err(ConfigError::new(
                    "header",
                    format!(
                        "the request's HTTP/2 header block is {} bytes, more than one frame's {}",
                        w.len(),
                        crate::h2::frame::DEFAULT_MAX_FRAME
                    ),
                ));
            }
            let n = w.len();
            w.extend_from_slice(&spec.body);
            Ok((w, n))
        };
        let mut one = Vec::new();
        let wires: Vec<(Vec<u8>, usize, u16, bool)> = match &cfg.mix {
            None => {
                let (w, body) = wire(&cfg.request, &cfg.target)?;
                one.push((w, body, 0, cfg.request.is_idempotent()));
                one
            }
            Some(mix) => {
                mix.validate()?;
                let mut target = cfg.target.clone();
                mix.requests
                    .iter()
                    .map(|r| {
                        let spec = RequestSpec {
                            method: r.method.clone(),
                            headers: r.headers.clone(),
                            body: r.body.clone(),
                        };
                        target.path.clone_from(&r.path);
                        let (w, body) = wire(&spec, &target)?;
                        Ok((w, body, r.target, spec.is_idempotent()))
                    })
                    .collect::<Result<_, ConfigError>>()?
            }
        };
        let copies = cfg.pipeline.div_ceil(wires.len()).max(1);
        let total: usize = wires.iter().map(|w| w.0.len()).sum::<usize>() * copies;
        let mut pool = RequestPool {
            bytes: Vec::with_capacity(total),
            entries: Vec::with_capacity(wires.len() * copies),
        };
        for _ in 0..copies {
            for (w, body, target, idempotent) in &wires {
                let start = pool.bytes.len();
                pool.bytes.extend_from_slice(w);
                pool.entries.push(Entry {
                    start,
                    end: pool.bytes.len(),
                    body: start + body,
                    target: *target,
                    idempotent: *idempotent,
                });
            }
        }
        Ok(pool)
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    #[inline]
    pub fn entry(&self, e: u32) -> Entry {
        self.entries[e as usize]
    }

    #[inline]
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mix::{MixRequest, RequestMix};
    use crate::target::Target;

    fn mix(paths: &[&str]) -> RequestMix {
        RequestMix {
            names: vec!["a".into(), "b".into()],
            requests: paths
                .iter()
                .enumerate()
                .map(|(i, p)| MixRequest {
                    target: (i % 2) as u16,
                    method: if i == 1 { "POST" } else { "GET" }.into(),
                    path: p.to_string(),
                    headers: vec![("X-I".into(), i.to_string())],
                    body: Vec::new(),
                })
                .collect(),
        }
    }

    #[test]
    fn each_request_is_its_own_slice_in_order() {
        let mut cfg = LoadConfig::new(Target::parse("http://127.0.0.1:8080/ignored").unwrap());
        cfg.mix = Some(mix(&["/x/1", "/y?z=2", "/x/3"]));
        let p = RequestPool::build(&cfg).unwrap();
        assert_eq!(p.len(), 3);
        let text = |e: u32| {
            let en = p.entry(e);
            String::from_utf8(p.bytes()[en.start..en.end].to_vec()).unwrap()
        };
        assert!(text(0).starts_with("GET /x/1 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nX-I: 0\r\n"));
        assert!(text(1).starts_with("POST /y?z=2 HTTP/1.1\r\n"));
        assert!(text(1).contains("Content-Length: 0\r\n"));
        assert_eq!((p.entry(1).target, p.entry(2).target), (1, 0));
        assert!(p.entry(0).idempotent && !p.entry(1).idempotent);
        assert_eq!(p.entry(1).start, p.entry(0).end);
    }

    #[test]
    fn a_short_list_is_repeated_to_the_pipeline_depth() {
        let mut cfg = LoadConfig::new(Target::parse("http://127.0.0.1:8080/").unwrap());
        cfg.pipeline = 5;
        let p = RequestPool::build(&cfg).unwrap();
        assert_eq!(p.len(), 5);
        assert_eq!(p.entry(4).end, p.bytes().len());
    }

    #[test]
    fn head_mixed_with_get_is_refused() {
        let mut cfg = LoadConfig::new(Target::parse("http://127.0.0.1:8080/").unwrap());
        let mut m = mix(&["/a", "/b"]);
        m.requests[1].method = "HEAD".into();
        cfg.mix = Some(m);
        let e = RequestPool::build(&cfg).err().unwrap();
        assert!(e.message.contains("HEAD"), "{e}");
    }
}
