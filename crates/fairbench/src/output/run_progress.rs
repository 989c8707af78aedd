//! Progress of `fairbench run`: an overall bar with case n/N and ETA and a
//! live line for the current case on a terminal; plain log lines otherwise.

use std::io::IsTerminal;
use std::time::Duration;

use fairbench_engine::SecondSample;
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::units;

/// Labels and lines carry server, scenario and suite names.
fn shown(s: &str) -> String {
    super::terminal::text(s)
}

pub struct RunProgress {
    bars: Option<(MultiProgress, ProgressBar, ProgressBar)>,
}

impl RunProgress {
    pub fn new(total_cases: u64, quiet: bool) -> RunProgress {
        if quiet || !std::io::stderr().is_terminal() {
            return RunProgress { bars: None };
        }
        let multi = MultiProgress::with_draw_target(ProgressDrawTarget::stderr());
        let overall = multi.add(ProgressBar::new(total_cases));
        overall.set_style(
            ProgressStyle::with_template(
                "[{elapsed_precise}] {bar:30} case {pos}/{len}  ETA {eta}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        let live = multi.add(ProgressBar::new_spinner());
        live.set_style(
            ProgressStyle::with_template("{spinner} {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        live.enable_steady_tick(Duration::from_millis(200));
        RunProgress {
            bars: Some((multi, overall, live)),
        }
    }

    /// A line that stays: printed above the bars, or to stderr.
    pub fn note(&self, line: &str) {
        let line = &shown(line);
        match &self.bars {
            Some((m, _, _)) => {
                let _ = m.println(line);
            }
            None => eprintln!("{line}"),
        }
    }

    pub fn case_started(&self, n: usize, total: usize, label: &str) {
        let label = &shown(label);
        match &self.bars {
            Some((_, o, l)) => {
                o.set_position(n.saturating_sub(1) as u64);
                l.set_message(label.to_string());
            }
            None => eprintln!("[{n}/{total}] {label}"),
        }
    }

    pub fn case_finished(&self, n: usize, total: usize, line: &str) {
        let line = &shown(line);
        match &self.bars {
            Some((m, o, _)) => {
                o.set_position(n as u64);
                let _ = m.println(format!("[{n}/{total}] {line}"));
            }
            None => eprintln!("[{n}/{total}] {line}"),
        }
    }

    /// The current case's last second, on the live line (terminal only).
    pub fn live(&self, s: &SecondSample) {
        if let Some((_, _, l)) = &self.bars {
            let msg = l.message();
            let base = msg.split("  |").next().unwrap_or("").to_string();
            let phase = if s.second < 0 { "warm-up " } else { "" };
            l.set_message(format!(
                "{base}  | {phase}{} req/s  p99 {}",
                units::rate(s.rps()),
                units::micros(s.p99_us as f64)
            ));
        }
    }

    pub fn finish(&self) {
        if let Some((_, o, l)) = &self.bars {
            l.finish_and_clear();
            o.finish_and_clear();
        }
    }
}
