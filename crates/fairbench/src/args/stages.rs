//! `--stages`: a rate profile, e.g. `10s:1k,30s:1k-20k,10s:20k` — each
//! stage DURATION:RATE (a step) or DURATION:FROM-TO (a linear ramp), rates
//! with SI suffixes, 0 for a pause.

use fairbench_engine::RateStage;

use super::{positive_duration, rate};

/// The stages, or one line naming the stage and what is wrong.
pub fn parse_stages(s: &str) -> Result<Vec<RateStage>, String> {
    let mut out = Vec::new();
    for (i, raw) in s.split(',').enumerate() {
        let n = i + 1;
        let raw = raw.trim();
        let bad = |why: String| format!("stage {n} {raw:?}: {why}");
        let (d, r) = raw.split_once(':').ok_or_else(|| {
            bad("expected DURATION:RATE or DURATION:FROM-TO, e.g. 30s:1k-20k".into())
        })?;
        let duration = positive_duration(d).map_err(|e| bad(format!("duration {d:?} {e}")))?;
        if r.starts_with('-') {
            return Err(bad("a rate cannot be negative".into()));
        }
        let one = |x: &str| -> Result<f64, String> {
            if x.starts_with('-') {
                return Err(bad("a rate cannot be negative".into()));
            }
            if x.trim() == "0" {
                return Ok(0.0);
            }
            rate(x).map_err(|e| bad(format!("rate {e}")))
        };
        let (from, to) = match r.split_once('-') {
            Some((a, b)) => (one(a)?, one(b)?),
            None => {
                let v = one(r)?;
                (v, v)
            }
        };
        out.push(RateStage { duration, from, to });
    }
    fairbench_engine::profile::validate(&out).map_err(|e| e.message)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn steps_and_ramps() {
        let s = parse_stages("10s:1k, 30s:1k-20k,500ms:0").unwrap();
        assert_eq!(s.len(), 3);
        assert_eq!(
            (s[0].from, s[0].to, s[0].duration),
            (1000.0, 1000.0, Duration::from_secs(10))
        );
        assert_eq!((s[1].from, s[1].to), (1000.0, 20000.0));
        assert_eq!(
            (s[2].from, s[2].duration),
            (0.0, Duration::from_millis(500))
        );
    }

    #[test]
    fn mistakes_name_the_stage() {
        let e = |s: &str| parse_stages(s).err().unwrap();
        assert!(e("10s:1k,30s:-5").starts_with("stage 2 \"30s:-5\": a rate cannot be negative"));
        assert!(e("10s:1k-(-5)").contains("stage 1"));
        assert!(e("0s:1k").contains("stage 1 \"0s:1k\": duration \"0s\" must be longer than 0"));
        assert!(e("10s").contains("expected DURATION:RATE"));
        assert!(e("10s:lots").contains("rate"));
        assert!(e("1s:0").contains("no stage plans"));
    }
}
