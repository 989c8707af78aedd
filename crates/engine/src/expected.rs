//! Answers with a status not expected, apart from the others.
//!
//! A 503 sent at once costs the server nothing: counted in every latency
//! figure (as wrk, oha and ab count them), a server that fails half its
//! requests fast shows a median as fast as its errors. The answers with a
//! status not expected keep their own histogram (recorded only for them,
//! so a healthy run pays nothing), and the expected ones' figures are the
//! answered requests' less those: shown beside the whole, and the warning
//! says which way the errors pulled it.

use hdrhistogram::Histogram;

use crate::stats::LatencySummary;
use crate::Outcome;

impl Outcome {
    /// The answers with an expected status alone: `None` when no answer
    /// had another status, or none had an expected one.
    pub fn expected_latency(&self) -> Option<Histogram<u64>> {
        if self.unexpected_latency.is_empty() {
            return None;
        }
        let mut h = self.answered_latency.clone();
        h.subtract(&self.unexpected_latency).ok()?;
        (!h.is_empty()).then_some(h)
    }

    /// [`Outcome::expected_latency`]'s summary.
    pub fn expected_summary(&self) -> Option<LatencySummary> {
        self.expected_latency().map(|h| LatencySummary::of(&h))
    }

    /// The loud line when some answers had a status not expected: how
    /// many, which, and what they did to the latency figures.
    pub(crate) fn status_warning(&self) -> Option<String> {
        if self.errors.status == 0 {
            return None;
        }
        let unexpected: Vec<String> = self
            .status_codes
            .iter()
            .filter(|(c, _)| !self.expected_status(**c))
            .map(|(c, n)| format!("{c} ×{n}"))
            .collect();
        let mut said = format!(
            "{} of {} answers had a status not expected ({}): counted as status errors, and in the throughput and every latency figure",
            self.errors.status,
            self.requests,
            unexpected.join(", ")
        );
        let q = |h: &Histogram<u64>, p: f64| micros(h.value_at_quantile(p));
        match self.expected_latency() {
            Some(ok) => {
                let bad = &self.unexpected_latency;
                said.push_str(&format!(
                    "; the expected answers alone: p50 {}, p99 {}; the others: p50 {}, p99 {}{}",
                    q(&ok, 0.5),
                    q(&ok, 0.99),
                    q(bad, 0.5),
                    q(bad, 0.99),
                    if bad.value_at_quantile(0.5) < ok.value_at_quantile(0.5) {
                        " (answered faster, they pull the latency figures below what the expected answers took)"
                    } else {
                        ""
                    }
                ));
            }
            None if self.errors.status >= self.requests => {
                said.push_str("; no answer had an expected status")
            }
            None => {}
        }
        Some(said)
    }
}

/// `us` as a person reads it: "72 µs", "20.45 ms".
fn micros(us: u64) -> String {
    if us < 1_000 {
        format!("{us} µs")
    } else {
        format!("{:.2} ms", us as f64 / 1_000.0)
    }
}

#[cfg(test)]
mod tests {
    use super::micros;

    #[test]
    fn micros_reads_as_a_person_would() {
        assert_eq!(micros(72), "72 µs");
        assert_eq!(micros(20_450), "20.45 ms");
    }
}
