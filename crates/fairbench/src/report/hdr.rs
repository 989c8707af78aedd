//! `fairbench report --hdr DIR`: each finished case's latency as an
//! HdrHistogram interval log (`.hlog`, the format of output/load/hdr_log.rs and
//! of HistogramLogAnalyzer), one file per repetition. The per-second
//! histograms of the measurement are the intervals; a case stored without
//! them gets its whole histogram as a single interval.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use anyhow::Context;
use hdrhistogram::serialization::interval_log::IntervalLogWriterBuilder;
use hdrhistogram::serialization::V2DeflateSerializer;

use crate::report::escape;
use crate::store::{decode_histogram, Store};

/// Writes the logs of `run`'s finished cases into `dir` (created if needed);
/// returns the files written.
/// `only`: just these servers' cases (`report --servers`).
pub fn write_all(
    store: &Store,
    run: i64,
    dir: &Path,
    only: Option<&fairbench_zoo::NameFilter>,
) -> anyhow::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)
        .with_context(|| format!("--hdr: cannot create {}", dir.display()))?;
    let mut written = Vec::new();
    let selected = |server: &str| only.is_none_or(|f| f.matches(server));
    for c in store
        .cases(run)?
        .into_iter()
        .filter(|c| c.state == "done" && selected(&c.server))
    {
        let name = escape::file_name(&format!(
            "{}-{}-{}-{}-{}-c{}-{}-r{}",
            c.id, c.server, c.mode, c.response, c.scenario, c.cores, c.load_label, c.repetition
        ));
        let path = dir.join(format!("{name}.hlog"));
        let start = c
            .started_at
            .as_deref()
            .and_then(|t| humantime::parse_rfc3339(t).ok())
            .unwrap_or(SystemTime::UNIX_EPOCH);
        let mut intervals = Vec::new();
        for s in store.samples(c.id)?.iter().filter(|s| s.phase == "measure") {
            if let Some(blob) = &s.interval_hist {
                intervals.push((s.start_s, s.duration_s, decode_histogram(blob)?));
            }
        }
        if intervals.is_empty() {
            if let Some(h) = store.histogram(c.id, "latency")? {
                intervals.push((0.0, c.duration_s.unwrap_or(0.0), h));
            }
        }
        let mut out = Vec::new();
        {
            let mut ser = V2DeflateSerializer::new();
            let comment = escape::visible(&format!(
                "fairbench run {} case {}: {} {}/{} {} {} cores, {}, repetition {}",
                run,
                c.id,
                c.server,
                c.mode,
                c.response,
                c.scenario,
                c.cores,
                c.load_label,
                c.repetition
            ));
            let mut log = IntervalLogWriterBuilder::new()
                .add_comment(&comment)
                .add_comment("values in microseconds; latency measured from the planned send time (constant rate) or the send (closed loop)")
                .with_start_time(start)
                .with_base_time(start)
                .with_max_value_divisor(1_000.0)
                .begin_log_with(&mut out, &mut ser)
                .with_context(|| format!("--hdr: cannot write {}", path.display()))?;
            for (at, len, h) in &intervals {
                log.write_histogram(
                    h,
                    Duration::from_secs_f64(at.max(0.0)),
                    Duration::from_secs_f64(len.max(0.0)),
                    None,
                )
                .map_err(|e| anyhow::anyhow!("--hdr: {}: {e:?}", path.display()))?;
            }
        }
        // As a report is written: through a symlink, never half a file.
        crate::report::write_atomic(&path, &out).map_err(|e| anyhow::anyhow!("--hdr: {e:#}"))?;
        written.push(path);
    }
    Ok(written)
}
