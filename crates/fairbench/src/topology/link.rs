//! Shaping the virtual link: a rate limit (tc tbf) and an added delay (tc
//! netem), so that a run on one machine can show what a real network does
//! to the picture.

use std::process::Command;
use std::time::Duration;

use fairbench_sys::process::bounded;
use serde::Serialize;

/// Bytes of headers each packet carries on the veth link, as tbf counts
/// them: Ethernet 14, IPv4 20, TCP 20 and its timestamps 12.
const SEGMENT_HEADERS: u64 = 66;
/// A full packet's payload at the veth's 1,500-byte MTU.
const SEGMENT_PAYLOAD: u64 = 1_448;
/// Above this share of its rate the link, not the server, set the pace:
/// a token bucket passes its rate and little more.
const FULL_SHARE: f64 = 0.8;

/// What the link between a load generator and the server should look like.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Link {
    /// Bits per second, each direction.
    pub rate_bps: Option<u64>,
    /// Added to every round trip.
    #[serde(serialize_with = "micros")]
    pub delay: Option<Duration>,
}

fn micros<S: serde::Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
    match d {
        Some(d) => s.serialize_some(&(d.as_micros() as u64)),
        None => s.serialize_none(),
    }
}

impl Link {
    pub fn parse(rate: Option<&str>, delay: Option<&str>) -> Result<Link, String> {
        let rate_bps = rate
            .map(|r| parse_rate(r).map_err(|e| format!("--link-rate: {e}")))
            .transpose()?;
        let delay = delay
            .map(|d| {
                let d =
                    crate::args::positive_duration(d).map_err(|e| format!("--link-delay: {e}"))?;
                if d > Duration::from_secs(10) {
                    return Err("--link-delay: more than 10 s is not a network".to_string());
                }
                Ok(d)
            })
            .transpose()?;
        Ok(Link { rate_bps, delay })
    }

    /// The loud line when the answers one generator (`host`) read filled
    /// its link: then the throughput was the link's, and a server that
    /// sends more bytes per answer is slower there for that alone. Counted
    /// as tbf counts them, each packet's headers with its payload
    /// ([`SEGMENT_HEADERS`]), so the answers' bytes alone are a lower bound.
    pub fn filled(&self, host: &str, o: &fairbench_engine::Outcome) -> Option<String> {
        let rate = self.rate_bps?;
        if o.measured_s <= 0.0 {
            return None;
        }
        let segments = o.arrived.max(o.bytes_read.div_ceil(SEGMENT_PAYLOAD));
        let bytes = o.bytes_read + SEGMENT_HEADERS * segments;
        let share = 8.0 * bytes as f64 / o.measured_s / rate as f64;
        (share >= FULL_SHARE).then(|| {
            format!(
                "the answers the load generator {host} read filled {:.0} % of its link's --link-rate {} (their bytes with each packet's headers): the throughput is the link's, not the server's, and a server that sends more bytes per answer is slower there for that alone; to compare servers, measure unshaped or at a rate the link carries",
                // Past 100 % is the estimate's noise: tbf passes no more.
                share.min(1.0) * 100.0,
                human_rate(rate)
            )
        })
    }

    pub fn is_shaped(&self) -> bool {
        self.rate_bps.is_some() || self.delay.is_some()
    }

    /// "rate 100 Mbit/s, delay 2 ms" / "unshaped".
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(r) = self.rate_bps {
            parts.push(format!("rate {}", human_rate(r)));
        }
        if let Some(d) = self.delay {
            parts.push(format!(
                "delay {} per round trip",
                humantime::format_duration(d)
            ));
        }
        if parts.is_empty() {
            "unshaped".into()
        } else {
            parts.join(", ")
        }
    }

    /// The tc commands (argument lists after `tc`) that shape the egress of
    /// `dev`; `delay_here` says whether this end carries the delay (one end
    /// of each link does, so the round trip grows by the delay once).
    pub fn tc_commands(&self, dev: &str, delay_here: bool) -> Vec<Vec<String>> {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<String>>();
        let tbf = |parent: &[&str], r: u64| {
            let mut v = s(&["qdisc", "add", "dev", dev]);
            v.extend(s(parent));
            v.extend(s(&["tbf", "rate", &format!("{r}bit")]));
            v.extend(s(&[
                "burst",
                &burst_bytes(r).to_string(),
                "latency",
                "200ms",
            ]));
            v
        };
        let delay = self.delay.filter(|_| delay_here);
        match (self.rate_bps, delay) {
            (None, None) => Vec::new(),
            (Some(r), None) => vec![tbf(&["root"], r)],
            (r, Some(d)) => {
                let mut v = vec![s(&[
                    "qdisc",
                    "add",
                    "dev",
                    dev,
                    "root",
                    "handle",
                    "1:",
                    "netem",
                    "delay",
                    &format!("{}us", d.as_micros()),
                    "limit",
                    "100000",
                ])];
                if let Some(r) = r {
                    v.push(tbf(&["parent", "1:", "handle", "2:"], r));
                }
                v
            }
        }
    }
}

/// Bytes the bucket holds: 10 ms at the rate, at least a few full-size
/// frames (a smaller bucket would drop every packet bigger than itself).
fn burst_bytes(rate_bps: u64) -> u64 {
    (rate_bps / 8 / 100).max(4096)
}

/// "100mbit", "1gbit", "512kbit", "10mbps" (bytes), tc's units: SI
/// multiples (k = 1000). Returns bits per second.
pub fn parse_rate(s: &str) -> Result<u64, String> {
    let t = s.trim().to_ascii_lowercase();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .ok_or_else(|| format!("{s:?} has no unit (expected e.g. 100mbit, 1gbit, 500kbit)"))?;
    let (num, unit) = t.split_at(split);
    let n: f64 = num
        .parse()
        .map_err(|_| format!("{s:?} is not a rate (expected e.g. 100mbit)"))?;
    let mult: f64 = match unit {
        "bit" => 1.0,
        "kbit" => 1e3,
        "mbit" => 1e6,
        "gbit" => 1e9,
        "tbit" => 1e12,
        "bps" => 8.0,
        "kbps" => 8e3,
        "mbps" => 8e6,
        "gbps" => 8e9,
        "tbps" => 8e12,
        _ => {
            return Err(format!(
            "{s:?}: unknown unit {unit:?} (bit, kbit, mbit, gbit; or bytes: bps, kbps, mbps, gbps)"
        ))
        }
    };
    let bps = n * mult;
    if !(bps.is_finite() && bps >= 8_000.0) {
        return Err(format!("{s:?} is below 8kbit, too slow for HTTP"));
    }
    if bps > 4e12 {
        return Err(format!("{s:?} is faster than any link"));
    }
    Ok(bps.round() as u64)
}

fn human_rate(bps: u64) -> String {
    let b = bps as f64;
    if b >= 1e9 {
        format!("{} Gbit/s", trim(b / 1e9))
    } else if b >= 1e6 {
        format!("{} Mbit/s", trim(b / 1e6))
    } else {
        format!("{} kbit/s", trim(b / 1e3))
    }
}

fn trim(x: f64) -> String {
    let s = format!("{x:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// What tc says when the kernel lacks a queueing discipline.
pub const UNKNOWN_QDISC: &str = "Specified qdisc kind is unknown";

/// The one-line explanation for a kernel without netem.
pub fn no_netem_message() -> String {
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "this kernel".into());
    format!(
        "--link-delay needs the kernel's netem queueing discipline (sch_netem), which kernel {kernel} does not have (tc: \"{UNKNOWN_QDISC}\"); --link-rate works without it"
    )
}

/// Whether `tc` is there at all.
pub fn tc_present() -> bool {
    let mut tc = Command::new("tc");
    tc.arg("-V");
    bounded::run(tc, None, Duration::from_secs(30)).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates() {
        assert_eq!(parse_rate("100mbit").unwrap(), 100_000_000);
        assert_eq!(parse_rate("1GBit").unwrap(), 1_000_000_000);
        assert_eq!(parse_rate("1.5mbit").unwrap(), 1_500_000);
        assert_eq!(parse_rate("10mbps").unwrap(), 80_000_000);
        assert!(parse_rate("100").unwrap_err().contains("no unit"));
        assert!(parse_rate("100 furlongs").is_err());
        assert!(parse_rate("1bit").is_err());
        assert_eq!(human_rate(1_000_000), "1 Mbit/s");
        assert_eq!(human_rate(2_500_000_000), "2.5 Gbit/s");
    }

    #[test]
    fn commands_for_each_shape() {
        let rate = Link {
            rate_bps: Some(1_000_000),
            delay: None,
        };
        let c = rate.tc_commands("fbc0", true);
        assert_eq!(c.len(), 1);
        assert_eq!(
            c[0].join(" "),
            "qdisc add dev fbc0 root tbf rate 1000000bit burst 4096 latency 200ms"
        );
        let both = Link {
            rate_bps: Some(1_000_000_000),
            delay: Some(Duration::from_millis(2)),
        };
        let c = both.tc_commands("fbs0", true);
        assert_eq!(c.len(), 2);
        assert!(c[0].join(" ").contains("root handle 1: netem delay 2000us"));
        assert!(c[1]
            .join(" ")
            .contains("parent 1: handle 2: tbf rate 1000000000bit burst 1250000"));
        // The other end only gets the rate.
        assert_eq!(both.tc_commands("fbc0", false).len(), 1);
        assert!(Link::default().tc_commands("x", true).is_empty());
        assert_eq!(both.describe(), "rate 1 Gbit/s, delay 2ms per round trip");
    }

    #[test]
    fn link_flags() {
        assert!(Link::parse(Some("fast"), None)
            .unwrap_err()
            .starts_with("--link-rate:"));
        assert!(Link::parse(None, Some("soon"))
            .unwrap_err()
            .starts_with("--link-delay:"));
        let l = Link::parse(Some("10mbit"), Some("5ms")).unwrap();
        assert_eq!(l.rate_bps, Some(10_000_000));
        assert_eq!(l.delay, Some(Duration::from_millis(5)));
    }
}
