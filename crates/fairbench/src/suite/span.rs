//! A plan's estimated time in the words a suite header uses, so that
//! `run --dry-run` and the header can be compared (a test does).

use std::time::Duration;

/// "696 cases, about 14 h 30 min": whole minutes, rounded to the nearest.
pub fn cases_and_time(cases: usize, sweeps: usize, est: Duration) -> String {
    let minutes = (est.as_secs_f64() / 60.0).round() as u64;
    let time = match (minutes / 60, minutes % 60) {
        (0, m) => format!("{m} min"),
        (h, 0) => format!("{h} h"),
        (h, m) => format!("{h} h {m} min"),
    };
    let sweeps = match sweeps {
        0 => String::new(),
        1 => " and 1 sweep".into(),
        n => format!(" and {n} sweeps"),
    };
    format!("{cases} cases{sweeps}, about {time}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_to_whole_minutes() {
        let s = |secs| cases_and_time(3, 0, Duration::from_secs(secs));
        assert_eq!(s(29), "3 cases, about 0 min");
        assert_eq!(s(90), "3 cases, about 2 min");
        assert_eq!(s(3600), "3 cases, about 1 h");
        assert_eq!(s(52_230), "3 cases, about 14 h 31 min");
        assert_eq!(
            cases_and_time(0, 2, Duration::from_secs(600)),
            "0 cases and 2 sweeps, about 10 min"
        );
    }
}
