//! CPU lists: "0", "0,2", "1-3", "0,2-3" — the kernel's own syntax (as in
//! /proc/PID/status `Cpus_allowed_list`), for every `--cpus` and wherever
//! fairbench reads or writes one.

use std::fmt;
use std::str::FromStr;

/// CPU numbers in ascending order, without repeats.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CpuList(pub Vec<usize>);

/// No machine fairbench can pin to has more (glibc's CPU_SETSIZE).
const MAX_CPU: usize = 1024;

impl FromStr for CpuList {
    type Err = String;

    fn from_str(s: &str) -> Result<CpuList, String> {
        let bad = || format!("{s:?} is not a CPU list (expected e.g. 0 or 0,2-3)");
        let mut out = Vec::new();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (a, b) = match part.split_once('-') {
                Some((a, b)) => (a.trim(), b.trim()),
                None => (part, part),
            };
            let a: usize = a.parse().map_err(|_| bad())?;
            let b: usize = b.parse().map_err(|_| bad())?;
            if a > b {
                return Err(bad());
            }
            if b >= MAX_CPU {
                return Err(format!(
                    "{s:?}: CPU {b} does not exist (at most {MAX_CPU} CPUs)"
                ));
            }
            out.extend(a..=b);
        }
        out.sort_unstable();
        out.dedup();
        if out.is_empty() {
            return Err("must name at least one CPU (e.g. 0 or 0,2-3)".into());
        }
        Ok(CpuList(out))
    }
}

/// Ranges collapsed: [0, 1, 2, 5] → "0-2,5".
impl fmt::Display for CpuList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&format_cpus(&self.0))
    }
}

/// Any CPU slice in the list syntax, ranges collapsed.
pub fn format_cpus(cpus: &[usize]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        parts.push(if i == j {
            cpus[i].to_string()
        } else {
            format!("{}-{}", cpus[i], cpus[j])
        });
        i = j + 1;
    }
    parts.join(",")
}

impl CpuList {
    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Result<Vec<usize>, String> {
        s.parse::<CpuList>().map(|c| c.0)
    }

    #[test]
    fn lists_and_ranges() {
        assert_eq!(p("0,2-4").unwrap(), vec![0, 2, 3, 4]);
        assert_eq!(p("3,0-1,1").unwrap(), vec![0, 1, 3]);
        assert_eq!(p(" 5 ").unwrap(), vec![5]);
        assert_eq!(p("0-3,6\n").unwrap(), vec![0, 1, 2, 3, 6]);
    }

    #[test]
    fn nonsense_is_refused() {
        for bad in ["3-1", "x", "", ",", "1-", "-1", "0-5000", "1.5"] {
            assert!(p(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn formats_back_to_the_same_list() {
        for s in ["0", "0-2,5", "1,3,5", "0-1,3-4"] {
            assert_eq!(s.parse::<CpuList>().unwrap().to_string(), s);
        }
    }
}
