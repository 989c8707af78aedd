//! HdrHistogram interval logs (`.hlog`): one corrected-latency histogram per
//! second, plus a last, shorter drain interval when requests were still in
//! flight at the end (their answers belong to the run), readable by the hdrhistogram crate's log reader and by
//! HistogramLogAnalyzer. Values are microseconds.

use std::io::Write;
use std::time::{Duration, SystemTime};

use fairbench_engine::{Observer, SecondSample};
use hdrhistogram::serialization::interval_log::{IntervalLogWriter, IntervalLogWriterBuilder};
use hdrhistogram::serialization::V2DeflateSerializer;
use hdrhistogram::Histogram;

pub struct HdrLog<'a, 'b, W: Write> {
    log: IntervalLogWriter<'a, 'b, W, V2DeflateSerializer>,
    /// The first write error; later intervals are skipped and the error is
    /// reported once at the end rather than aborting the measurement.
    pub error: Option<String>,
}

impl<'a, 'b, W: Write> HdrLog<'a, 'b, W> {
    pub fn begin(
        out: &'a mut W,
        ser: &'b mut V2DeflateSerializer,
        comment: &str,
    ) -> std::io::Result<Self> {
        let now = SystemTime::now();
        let log = IntervalLogWriterBuilder::new()
            .add_comment(comment)
            .add_comment("values in microseconds; latency measured from the planned send time")
            .with_start_time(now)
            .with_base_time(now)
            // Interval_Max column in milliseconds, for people reading the file.
            .with_max_value_divisor(1_000.0)
            .begin_log_with(out, ser)?;
        Ok(HdrLog { log, error: None })
    }
}

impl<W: Write> Observer for HdrLog<'_, '_, W> {
    fn on_interval(&mut self, s: &SecondSample, h: &Histogram<u64>) {
        if self.error.is_some() {
            return;
        }
        let start = Duration::from_secs_f64(s.start_s);
        let len = Duration::from_secs_f64(s.duration_s);
        if let Err(e) = self.log.write_histogram(h, start, len, None) {
            self.error = Some(format!("{e:?}"));
        }
    }
}
