//! Reading a process group's entries in /proc, here or on another host.

/// The fields of one /proc/PID/stat line after the parenthesised command
/// name (state, ppid, pgrp, …), with the pid in front.
#[derive(Debug, Clone, PartialEq)]
pub struct Stat {
    pub pid: u32,
    pub fields: Vec<String>,
}

impl Stat {
    pub fn parse(line: &str) -> Option<Stat> {
        let (head, rest) = line.rsplit_once(')')?;
        let pid = head.split_whitespace().next()?.parse().ok()?;
        Some(Stat {
            pid,
            fields: rest.split_whitespace().map(str::to_string).collect(),
        })
    }

    /// Field `i` counted from `state` (0), as a non-negative number.
    pub fn num(&self, i: usize) -> u64 {
        self.fields
            .get(i)
            .and_then(|v| v.parse::<i64>().ok())
            .unwrap_or(0)
            .max(0) as u64
    }

    pub fn pgrp(&self) -> Option<i32> {
        self.fields.get(2)?.parse().ok()
    }

    pub fn zombie(&self) -> bool {
        self.fields.first().is_some_and(|s| s == "Z")
    }
}

/// The live members of process group `pgid` among many stat lines.
pub fn group_of(text: &str, pgid: i32) -> Vec<Stat> {
    text.lines()
        .filter_map(Stat::parse)
        .filter(|s| !s.zombie() && s.pgrp() == Some(pgid))
        .collect()
}

/// The live members of process group `pgid` on this machine.
pub fn local_group(pgid: i32) -> Vec<Stat> {
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    rd.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| std::fs::read_to_string(format!("/proc/{pid}/stat")).ok())
        .filter_map(|l| Stat::parse(&l))
        .filter(|s| !s.zombie() && s.pgrp() == Some(pgid))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_names_with_spaces_and_parentheses() {
        let l = "4242 (my (odd) server) S 1 4242 4242 0 -1 4194560 100 0 0 0 7 3 0 0 20 0 5 0 100 1000 250";
        let s = Stat::parse(l).unwrap();
        assert_eq!(s.pid, 4242);
        assert_eq!(s.pgrp(), Some(4242));
        assert_eq!(s.num(11), 7);
        assert_eq!(s.num(12), 3);
        assert_eq!(s.num(17), 5);
        assert_eq!(s.num(21), 250);
        let text = format!("{l}\n1 (init) S 0 1 1\n43 (z) Z 4242 4242 4242\n");
        assert_eq!(group_of(&text, 4242).len(), 1);
    }

    #[test]
    fn finds_its_own_group() {
        let me = std::process::id();
        // SAFETY: getpgrp has no preconditions.
        let pg = unsafe { libc::getpgrp() };
        assert!(local_group(pg).iter().any(|s| s.pid == me));
    }
}
