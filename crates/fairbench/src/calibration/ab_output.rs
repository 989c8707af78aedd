//! What ApacheBench (`ab`) prints, read back into numbers: the figures the
//! 2012 post quoted.
//!
//! ```text
//! Complete requests:      10000
//! Failed requests:        0
//! Non-2xx responses:      3
//! Requests per second:    1234.56 [#/sec] (mean)
//! Time per request:       1.620 [ms] (mean)
//! Time per request:       0.810 [ms] (mean, across all concurrent requests)
//! Transfer rate:          123.45 [Kbytes/sec] received
//! Percentage of the requests served within a certain time (ms)
//!   50%      1
//!  100%      5 (longest request)
//! ```
//!
//! ab's percentiles are whole milliseconds; "Time taken for tests" gives
//! the duration.

use super::ToolFigures;

/// The figures of one ab run; `None` when it printed no "Complete
/// requests" (it did not run).
pub fn parse(text: &str) -> Option<ToolFigures> {
    let mut f = ToolFigures::default();
    let mut in_percentages = false;
    for line in text.lines() {
        let t = line.trim();
        if t.starts_with("Percentage of the requests served within") {
            in_percentages = true;
            continue;
        }
        if in_percentages {
            if let Some((pct, rest)) = t.split_once('%') {
                let ms = rest
                    .split_whitespace()
                    .next()
                    .and_then(|v| v.parse::<f64>().ok());
                if let (Ok(pct), Some(ms)) = (pct.trim().parse::<f64>(), ms) {
                    f.percentiles.push((pct, ms * 1e3));
                    if pct >= 100.0 {
                        f.lat_max_us = Some(ms * 1e3);
                    }
                    continue;
                }
            }
            in_percentages = false;
        }
        let Some((key, value)) = t.split_once(':') else {
            continue;
        };
        let first = value.split_whitespace().next();
        let num = || first.and_then(|v| v.parse::<f64>().ok());
        match key.trim() {
            "Complete requests" => f.requests = num().map(|v| v as u64),
            "Failed requests" => f.errors = num().map(|v| v as u64),
            "Non-2xx responses" => f.non_2xx = num().map(|v| v as u64),
            "Time taken for tests" => f.duration_s = num(),
            "Requests per second" => f.rps = num(),
            "Time per request" if value.contains("across all concurrent requests") => {
                f.time_per_request_all_us = num().map(|ms| ms * 1e3)
            }
            "Time per request" => f.lat_mean_us = num().map(|ms| ms * 1e3),
            "Transfer rate" => f.transfer_bytes_per_s = num().map(|kb| kb * 1024.0),
            _ => {}
        }
    }
    f.requests.is_some().then_some(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// As ab 2.3 prints it (`ab -n 10000 -c 2`), trimmed.
    const AB: &str = "This is ApacheBench, Version 2.3 <$Revision: 1913912 $>
Benchmarking 127.0.0.1 (be patient)
Server Software:
Server Hostname:        127.0.0.1
Server Port:            8080

Document Path:          /
Document Length:        13 bytes

Concurrency Level:      2
Time taken for tests:   1.234 seconds
Complete requests:      10000
Failed requests:        2
Non-2xx responses:      3
Total transferred:      1300000 bytes
Requests per second:    8103.73 [#/sec] (mean)
Time per request:       0.247 [ms] (mean)
Time per request:       0.123 [ms] (mean, across all concurrent requests)
Transfer rate:          1028.81 [Kbytes/sec] received

Connection Times (ms)
              min  mean[+/-sd] median   max
Connect:        0    0   0.0      0       1
Total:          0    0   0.1      0       3

Percentage of the requests served within a certain time (ms)
  50%      0
  66%      0
  99%      1
 100%      3 (longest request)
";

    #[test]
    fn the_figures_the_2012_post_quoted_are_read() {
        let f = parse(AB).unwrap();
        assert_eq!(f.requests, Some(10_000));
        assert_eq!((f.errors, f.non_2xx), (Some(2), Some(3)));
        assert_eq!(f.duration_s, Some(1.234));
        assert_eq!(f.rps, Some(8103.73));
        assert_eq!(f.lat_mean_us, Some(247.0));
        assert_eq!(f.time_per_request_all_us, Some(123.0));
        assert_eq!(f.transfer_bytes_per_s, Some(1028.81 * 1024.0));
        assert_eq!(
            f.percentiles,
            vec![(50.0, 0.0), (66.0, 0.0), (99.0, 1000.0), (100.0, 3000.0)]
        );
        assert_eq!(f.lat_max_us, Some(3000.0));
    }

    #[test]
    fn an_ab_that_did_not_run_has_no_figures() {
        assert!(
            parse("ab: invalid URL\nUsage: ab [options] [http[s]://]hostname[:port]/path\n")
                .is_none()
        );
    }
}
