//! How an adaptive run's repetitions stopped, as the report, its exports
//! and `show --json` give it: why, at which repetition, and the half-width
//! each ratio reached. The rule and the record it stores are
//! `runner::stopping`'s; the commands fill this from them
//! (`commands/report/stop.rs`), because the runner builds on the report
//! and the report must not import it back.

use serde::Serialize;

/// Why the repetitions stopped (a run's), or how a ratio was settled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    /// Known to the asked half-width (every ratio, for a run).
    Precision,
    /// Its interval lies wholly beyond the negligible band or wholly
    /// within it, so more repetitions could not change the verdict (for a
    /// run: every ratio settled, at least one this way).
    Verdict,
    /// The maximum was reached with a ratio not settled (a run only).
    Maximum,
}

/// One paired ratio at the stop, at the level of each look.
#[derive(Debug, Clone, Serialize)]
pub struct StopRatio {
    /// What it compares: "variant vs reference (context) metric".
    pub ratio: String,
    pub geomean: Option<f64>,
    pub low: Option<f64>,
    pub high: Option<f64>,
    /// The larger side of the interval, in percent of its geometric mean.
    pub half_width_pct: Option<f64>,
    /// `precision` or `verdict`; null when it was not settled.
    pub settled_by: Option<Reason>,
}

/// What a fixed design would have spent for the precision reached.
#[derive(Debug, Clone, Serialize)]
pub struct FixedDesign {
    pub repetitions: usize,
    pub time_s: Option<f64>,
    pub adaptive_time_s: Option<f64>,
}

/// How the run stopped: the stored record with each ratio recomputed.
#[derive(Debug, Clone, Serialize)]
pub struct Stop {
    pub reason: Reason,
    /// The repetitions run: the look it stopped at.
    pub repetition: usize,
    pub max: usize,
    pub asked_half_width_pct: f64,
    /// The repetitions after which the data was looked at.
    pub looks: Vec<usize>,
    /// Each look's interval level (1 − 0.05/looks).
    pub level_per_look: f64,
    /// The coverage that holds across the looks.
    pub family_level: f64,
    pub fixed_design: Option<FixedDesign>,
    pub ratios: Vec<StopRatio>,
}

impl Stop {
    /// One sentence for under the report's header (plain text: the
    /// formats escape it).
    pub fn sentence(&self) -> String {
        let h = self.asked_half_width_pct;
        let at = format!(
            "Repetitions stopped at {} of at most {}",
            self.repetition, self.max
        );
        match self.reason {
            _ if self.ratios.is_empty() && self.reason != Reason::Maximum => {
                format!("{at}: the run has no ratio to settle (no reference among its cases).")
            }
            Reason::Precision => format!("{at}: every ratio known to ±{h} %."),
            Reason::Verdict => {
                let by_verdict = self
                    .ratios
                    .iter()
                    .filter(|r| r.settled_by == Some(Reason::Verdict))
                    .count();
                format!(
                    "{at}: every ratio known to ±{h} % or its verdict settled ({by_verdict} of {} by its verdict).",
                    self.ratios.len()
                )
            }
            Reason::Maximum => {
                let widest = self
                    .ratios
                    .iter()
                    .filter(|r| r.settled_by.is_none())
                    .filter_map(|r| r.half_width_pct)
                    .fold(None, |m: Option<f64>, w| Some(m.map_or(w, |m| m.max(w))));
                let unsettled = self
                    .ratios
                    .iter()
                    .filter(|r| r.settled_by.is_none())
                    .count();
                let widest = widest.map_or_else(String::new, |w| format!(", the widest ±{w:.1} %"));
                format!(
                    "Repetitions ran to their maximum of {}: {unsettled} of {} ratios not known to ±{h} %{widest}.",
                    self.max,
                    self.ratios.len()
                )
            }
        }
    }
}

impl StopRatio {
    /// One line for `show`: the ratio at the level of each look and how
    /// it was settled, so that a reader sees which ratio kept the run going.
    pub fn line(&self) -> String {
        let figure = match (self.geomean, self.low, self.high) {
            (Some(g), Some(lo), Some(hi)) => format!("{g:.3}× [{lo:.3}–{hi:.3}]"),
            (Some(g), _, _) => format!("{g:.3}× (no interval)"),
            _ => "no ratio".to_string(),
        };
        let half = self
            .half_width_pct
            .map_or_else(String::new, |h| format!(" ±{h:.1} %"));
        let how = match self.settled_by {
            Some(Reason::Precision) => "settled by its precision",
            Some(Reason::Verdict) => "settled by its verdict",
            Some(Reason::Maximum) | None => "not settled",
        };
        format!("{}: {figure}{half}, {how}", self.ratio)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ratio(half: f64, by: Option<Reason>) -> StopRatio {
        StopRatio {
            ratio: "a vs b (static · 1c · closed c=4) req/s".into(),
            geomean: Some(1.5),
            low: Some(1.4),
            high: Some(1.6),
            half_width_pct: Some(half),
            settled_by: by,
        }
    }

    fn stop(reason: Reason, ratios: Vec<StopRatio>) -> Stop {
        Stop {
            reason,
            repetition: 7,
            max: 20,
            asked_half_width_pct: 3.0,
            looks: vec![3, 4, 6, 8, 12, 16, 20],
            level_per_look: 1.0 - 0.05 / 7.0,
            family_level: 0.95,
            fixed_design: None,
            ratios,
        }
    }

    #[test]
    fn each_ratio_line_says_how_it_was_settled() {
        assert_eq!(
            ratio(2.5, Some(Reason::Precision)).line(),
            "a vs b (static · 1c · closed c=4) req/s: 1.500× [1.400–1.600] ±2.5 %, settled by its precision"
        );
        assert!(ratio(9.0, Some(Reason::Verdict))
            .line()
            .ends_with("±9.0 %, settled by its verdict"));
        let mut r = ratio(9.0, None);
        (r.low, r.high, r.half_width_pct) = (None, None, None);
        assert!(
            r.line().ends_with("1.500× (no interval), not settled"),
            "{}",
            r.line()
        );
    }

    #[test]
    fn each_reason_has_its_sentence() {
        let s = stop(Reason::Precision, vec![ratio(2.5, Some(Reason::Precision))]);
        assert_eq!(
            s.sentence(),
            "Repetitions stopped at 7 of at most 20: every ratio known to ±3 %."
        );
        let s = stop(
            Reason::Verdict,
            vec![
                ratio(2.5, Some(Reason::Precision)),
                ratio(9.0, Some(Reason::Verdict)),
            ],
        );
        assert_eq!(
            s.sentence(),
            "Repetitions stopped at 7 of at most 20: every ratio known to ±3 % or its verdict settled (1 of 2 by its verdict)."
        );
        let mut s = stop(
            Reason::Maximum,
            vec![
                ratio(2.5, Some(Reason::Precision)),
                ratio(9.04, None),
                ratio(4.0, None),
            ],
        );
        s.repetition = 20;
        assert_eq!(
            s.sentence(),
            "Repetitions ran to their maximum of 20: 2 of 3 ratios not known to ±3 %, the widest ±9.0 %."
        );
        let s = stop(Reason::Precision, Vec::new());
        assert!(
            s.sentence().contains("no ratio to settle"),
            "{}",
            s.sentence()
        );
    }
}
