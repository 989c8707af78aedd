//! Memory pressure on the whole machine, from the kernel's pressure stall
//! information (`/proc/pressure/memory`, PSI): the time during which some
//! task waited for memory (reclaim, a refault, swap-in). While it grows,
//! server and load generator alike are slowed by something neither of them
//! is measured for.

/// Microseconds during which some task on this machine stalled on memory,
/// since boot; `None` where the kernel has no PSI.
pub fn memory_stall_us() -> Option<u64> {
    some_total(&std::fs::read_to_string("/proc/pressure/memory").ok()?)
}

/// The `total=` of a pressure file's `some` line.
fn some_total(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("some "))?;
    line.split_whitespace()
        .find_map(|f| f.strip_prefix("total="))?
        .parse()
        .ok()
}

/// The share of `elapsed_us` stalled between two readings; `None` when
/// either is missing.
pub fn stall_fraction(before: Option<u64>, after: Option<u64>, elapsed_us: u64) -> Option<f64> {
    let stalled = after?.checked_sub(before?)?;
    Some(stalled as f64 / elapsed_us.max(1) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_some_total_is_read_and_turned_into_a_share() {
        let text = "some avg10=0.00 avg60=0.16 avg300=0.17 total=5343689\nfull avg10=0.00 avg60=0.06 avg300=0.07 total=3174004\n";
        assert_eq!(some_total(text), Some(5_343_689));
        assert_eq!(some_total("full avg10=0.00 total=3\n"), None);
        assert_eq!(
            stall_fraction(Some(100), Some(50_100), 1_000_000),
            Some(0.05)
        );
        assert_eq!(stall_fraction(None, Some(1), 10), None);
        // A counter that went back (it never does) is no reading.
        assert_eq!(stall_fraction(Some(9), Some(1), 10), None);
    }
}
