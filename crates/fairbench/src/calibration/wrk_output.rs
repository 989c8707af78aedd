//! What wrk 4.x and wrk2 print, read back into numbers.
//!
//! wrk formats times with `format_time_us` (`1.23ms`, `456.78us`, `2.00s`,
//! also `m` and `h`), counts with `format_metric` (`12.34k`, base 1000)
//! and bytes with `format_binary` (`12.34MB`, base 1024), each with two
//! decimals: a figure read back is within 0.5 % of what wrk computed,
//! never closer. The lines read:
//!
//! ```text
//!     Latency     1.23ms  456.78us  12.34ms   89.01%
//!      50%    1.10ms                  (wrk2: " 50.000%    1.10ms")
//!   123456 requests in 5.00s, 12.34MB read
//!   Socket errors: connect 0, read 0, write 0, timeout 12
//!   Non-2xx or 3xx responses: 5
//! Requests/sec:  24691.20
//! Transfer/sec:      2.47MB
//! ```

use super::ToolFigures;

/// The figures of one wrk or wrk2 run; `None` when its output has no
/// request count (it did not run, or printed something else).
pub fn parse(text: &str) -> Option<ToolFigures> {
    let mut f = ToolFigures::default();
    let mut in_spectrum = false;
    for line in text.lines() {
        let t = line.trim();
        // wrk2's full HdrHistogram table follows; its rows have no '%'.
        if t.starts_with("Detailed Percentile spectrum") {
            in_spectrum = true;
        }
        if let Some(rest) = t.strip_prefix("Latency ") {
            let v: Vec<&str> = rest.split_whitespace().collect();
            if let [avg, sd, max, within] = v[..] {
                f.lat_mean_us = time_us(avg);
                f.lat_stdev_us = time_us(sd);
                f.lat_max_us = time_us(max);
                f.within_stdev_pct = within.strip_suffix('%').and_then(|p| p.parse().ok());
            }
        } else if let Some((pct, value)) = percentile_line(t).filter(|_| !in_spectrum) {
            if let Some(us) = time_us(value) {
                f.percentiles.push((pct, us));
            }
        } else if let Some((n, rest)) = t.split_once(" requests in ") {
            f.requests = n.trim().parse().ok();
            let secs = rest.split(',').next().unwrap_or("");
            f.duration_s = time_us(secs.trim()).map(|us| us / 1e6);
        } else if let Some(rest) = t.strip_prefix("Socket errors:") {
            let total: u64 = rest
                .split(',')
                .filter_map(|kv| kv.split_whitespace().nth(1)?.parse::<u64>().ok())
                .sum();
            f.errors = Some(f.errors.unwrap_or(0) + total);
            f.timeouts = rest
                .split(',')
                .find_map(|kv| kv.trim().strip_prefix("timeout "))
                .and_then(|n| n.trim().parse().ok());
        } else if let Some(rest) = t.strip_prefix("Non-2xx or 3xx responses:") {
            f.non_2xx = rest.trim().parse().ok();
        } else if let Some(rest) = t.strip_prefix("Requests/sec:") {
            f.rps = rest.trim().parse().ok();
        } else if let Some(rest) = t.strip_prefix("Transfer/sec:") {
            f.transfer_bytes_per_s = bytes(rest.trim());
        }
    }
    f.requests.is_some().then_some(f)
}

/// `50%    1.10ms` or `99.900%   12.34ms`: the percentile and the value.
fn percentile_line(t: &str) -> Option<(f64, &str)> {
    let (pct, value) = t.split_once('%')?;
    let pct: f64 = pct.trim().parse().ok()?;
    let value = value.trim();
    (!value.is_empty() && !value.contains(' ')).then_some((pct, value))
}

/// wrk's time: a number and one of us, ms, s, m, h.
fn time_us(s: &str) -> Option<f64> {
    let split = s.find(|c: char| c.is_ascii_alphabetic())?;
    let (n, unit) = s.split_at(split);
    let n: f64 = n.parse().ok()?;
    let scale = match unit {
        "us" => 1.0,
        "ms" => 1e3,
        "s" => 1e6,
        "m" => 60e6,
        "h" => 3600e6,
        _ => return None,
    };
    Some(n * scale)
}

/// wrk's bytes: a number and B, KB, MB, GB or TB, base 1024.
fn bytes(s: &str) -> Option<f64> {
    let split = s.find(|c: char| c.is_ascii_alphabetic())?;
    let (n, unit) = s.split_at(split);
    let n: f64 = n.parse().ok()?;
    let scale = match unit {
        "B" => 1.0,
        "KB" => 1024.0,
        "MB" => 1024.0 * 1024.0,
        "GB" => 1024.0 * 1024.0 * 1024.0,
        "TB" => 1024.0 * 1024.0 * 1024.0 * 1024.0,
        _ => return None,
    };
    Some(n * scale)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// As wrk 4.1 printed it here (`wrk -t1 -c50 -d5s --latency`).
    const WRK: &str = "Running 5s test @ http://127.0.0.1:8080/
  1 threads and 50 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     1.23ms  456.78us  12.34ms   89.01%
    Req/Sec    12.34k     1.23k   15.00k    70.00%
  Latency Distribution
     50%    1.10ms
     75%    1.40ms
     90%    1.80ms
     99%    3.20ms
  123456 requests in 5.00s, 12.34MB read
  Socket errors: connect 1, read 2, write 0, timeout 12
  Non-2xx or 3xx responses: 5
Requests/sec:  24691.20
Transfer/sec:      2.47MB
";

    #[test]
    fn every_figure_of_wrk_is_read_in_its_unit() {
        let f = parse(WRK).unwrap();
        assert_eq!(f.requests, Some(123_456));
        assert_eq!(f.duration_s, Some(5.0));
        assert_eq!(f.lat_mean_us, Some(1230.0));
        assert_eq!(f.lat_stdev_us, Some(456.78));
        assert_eq!(f.lat_max_us, Some(12_340.0));
        assert_eq!(f.within_stdev_pct, Some(89.01));
        assert_eq!(
            f.percentiles,
            vec![
                (50.0, 1100.0),
                (75.0, 1400.0),
                (90.0, 1800.0),
                (99.0, 3200.0)
            ]
        );
        assert_eq!(
            (f.errors, f.timeouts, f.non_2xx),
            (Some(15), Some(12), Some(5))
        );
        assert_eq!(f.rps, Some(24_691.2));
        assert_eq!(f.transfer_bytes_per_s, Some(2.47 * 1024.0 * 1024.0));
    }

    #[test]
    fn wrk2s_percentiles_are_read_and_its_spectrum_is_not() {
        let text = "  Latency Distribution (HdrHistogram - Recorded Latency)
 50.000%    1.62ms
 99.900%    5.00s
  Detailed Percentile spectrum:
       Value   Percentile   TotalCount 1/(1-Percentile)
       0.500     0.000000            1         1.00
#[Mean    =        1.620, StdDeviation   =        0.300]
  3000 requests in 30.00s, 1.00MB read
Requests/sec:    100.00
";
        let f = parse(text).unwrap();
        assert_eq!(f.percentiles, vec![(50.0, 1620.0), (99.9, 5e6)]);
        assert_eq!((f.requests, f.rps), (Some(3000), Some(100.0)));
    }

    #[test]
    fn output_without_a_request_count_is_not_figures() {
        assert!(parse("unable to connect to 127.0.0.1:1 Connection refused\n").is_none());
        assert!(parse("").is_none());
    }
}
