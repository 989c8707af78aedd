//! Latency histograms: one configuration everywhere, and one lossless
//! encoding for everything that travels or is stored.
//!
//! Every histogram is HdrHistogram at microsecond resolution with 3
//! significant digits, auto-resizing. Because the configuration is the same
//! everywhere, a value lands in the same bucket whichever histogram records
//! it, so adding histograms (threads of one generator, generators of one
//! load, intervals of one run) is exact: the sum is bucket for bucket the
//! histogram one recorder would have made. The encoding is HdrHistogram's V2
//! with DEFLATE, which round-trips exactly; in JSON it travels as hex.

use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::hex::{hex, unhex};

/// Microsecond resolution, 3 significant digits. The upper bound only sizes
/// the initial allocation: histograms auto-resize, so a pathological latency
/// is recorded rather than dropped.
pub fn new_histogram() -> Histogram<u64> {
    let mut h = Histogram::new_with_bounds(1, 60_000_000, 3).expect("static bounds are valid");
    h.auto(true);
    h
}

/// Records a duration in nanoseconds as microseconds (at least 1).
#[inline]
pub fn record_ns(h: &mut Histogram<u64>, ns: u64) {
    let us = (ns / 1_000).max(1);
    // With auto-resize on, recording only fails on overflow of u64 counts.
    let _ = h.record(us);
}

/// A histogram in its V2 + DEFLATE encoding: a few hundred bytes where the
/// decoded form takes ~100 KiB, so what is kept for later stays encoded.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Encoded(pub Vec<u8>);

impl Encoded {
    pub fn of(h: &Histogram<u64>) -> Encoded {
        let mut out = Vec::new();
        // Serialising into a Vec fails only for histograms too large to
        // encode, which ours (bounded by auto-resize to u64) are not.
        let _ = V2DeflateSerializer::new().serialize(h, &mut out);
        Encoded(out)
    }

    pub fn decode(&self) -> Result<Histogram<u64>, String> {
        let mut h: Histogram<u64> = Deserializer::new()
            .deserialize(&mut &self.0[..])
            .map_err(|e| format!("malformed histogram: {e:?}"))?;
        h.auto(true);
        Ok(h)
    }
}

impl Serialize for Encoded {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&hex(&self.0))
    }
}

impl<'de> Deserialize<'de> for Encoded {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        unhex(&s)
            .map(Encoded)
            .ok_or_else(|| serde::de::Error::custom("a histogram is not valid hex"))
    }
}

/// `#[serde(with = "histogram::as_hex")]` for a histogram field.
pub mod as_hex {
    use super::*;

    pub fn serialize<S: serde::Serializer>(h: &Histogram<u64>, s: S) -> Result<S::Ok, S::Error> {
        Encoded::of(h).serialize(s)
    }

    pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Histogram<u64>, D::Error> {
        Encoded::deserialize(d)?
            .decode()
            .map_err(serde::de::Error::custom)
    }
}

/// The same for an optional histogram.
pub mod option_as_hex {
    use super::*;

    pub fn serialize<S: serde::Serializer>(
        h: &Option<Histogram<u64>>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        match h {
            Some(h) => s.serialize_some(&Encoded::of(h)),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: serde::Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Histogram<u64>>, D::Error> {
        Option::<Encoded>::deserialize(d)?
            .map(|e| e.decode().map_err(serde::de::Error::custom))
            .transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoding_round_trips_exactly() {
        let mut h = new_histogram();
        for v in [1u64, 7, 99, 1000, 1001, 65_000, 3_000_000, 7_200_000_000] {
            h.record_n(v, v % 5 + 1).unwrap();
        }
        let e = Encoded::of(&h);
        assert!(e.0.len() < 1024, "{} bytes", e.0.len());
        assert_eq!(e.decode().unwrap(), h);
        let json = serde_json::to_string(&e).unwrap();
        let back: Encoded = serde_json::from_str(&json).unwrap();
        assert_eq!(back.decode().unwrap(), h);
    }

    #[test]
    fn bad_input_is_an_error() {
        assert!(Encoded(vec![1, 2, 3]).decode().is_err());
        assert!(serde_json::from_str::<Encoded>("\"abc\"").is_err());
        assert!(serde_json::from_str::<Encoded>("\"zz\"").is_err());
    }

    #[test]
    fn huge_values_are_kept() {
        let mut h = new_histogram();
        record_ns(&mut h, 3_600 * 1_000_000_000);
        assert!(h.max() >= 3_599_000_000);
    }
}
