//! The live view of a load run: a progress bar on a terminal, nothing otherwise.

use std::io::IsTerminal;
use std::time::Duration;

use fairbench_engine::{Observer, SecondSample};
use hdrhistogram::Histogram;
use indicatif::{ProgressBar, ProgressStyle};

use crate::units;

pub struct LoadProgress {
    bar: Option<ProgressBar>,
}

impl LoadProgress {
    /// `total` is warm-up plus measurement. Hidden unless stderr is a terminal,
    /// so that logs and pipes get no control characters.
    pub fn new(total: Duration) -> LoadProgress {
        if !std::io::stderr().is_terminal() {
            return LoadProgress { bar: None };
        }
        let bar = ProgressBar::new(total.as_millis() as u64);
        bar.set_style(
            ProgressStyle::with_template("{spinner} [{elapsed_precise}] {wide_bar} {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        bar.enable_steady_tick(Duration::from_millis(200));
        LoadProgress { bar: Some(bar) }
    }

    pub fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

impl Observer for LoadProgress {
    fn on_interval(&mut self, s: &SecondSample, _hist: &Histogram<u64>) {
        if let Some(b) = &self.bar {
            b.set_position(((s.start_s + s.duration_s) * 1000.0) as u64);
            let phase = if s.second < 0 { "warm-up " } else { "" };
            b.set_message(format!(
                "{phase}{} req/s  p99 {}  errors {}",
                units::rate(s.rps()),
                units::micros(s.p99_us as f64),
                s.errors
            ));
        }
    }
}

/// Feeds every interval to several observers.
pub struct Fanout<'a>(pub Vec<&'a mut dyn Observer>);

impl Observer for Fanout<'_> {
    fn on_interval(&mut self, s: &SecondSample, h: &Histogram<u64>) {
        for o in self.0.iter_mut() {
            o.on_interval(s, h);
        }
    }
}
