//! `fairbench run`'s flags: the suite, what overrides it for one run, where
//! the results go, and where the server and the load run.

use std::path::PathBuf;
use std::time::Duration;

use crate::args::VariantSel;
use crate::suite::order::Interleave;
use crate::topology::{ClientArgs, ServerArgs};

// Its doc comments are --help text, written for the terminal, not rustdoc.
#[allow(rustdoc::broken_intra_doc_links, rustdoc::invalid_html_tags)]
#[derive(clap::Args, Debug)]
pub struct RunArgs {
    /// Suite name (suites/NAME.toml) or path to a suite file.
    #[arg(long, default_value = "quick")]
    pub suite: String,
    /// Only these servers (comma-separated names or globs).
    #[arg(long)]
    pub servers: Option<String>,
    /// Only these scenarios (comma-separated).
    #[arg(long)]
    pub scenarios: Option<String>,
    /// Core counts instead of the suite's (comma-separated numbers or "all").
    #[arg(long)]
    pub cores: Option<String>,
    /// Measurement duration of each case instead of the suite's (e.g. 10s).
    #[arg(long)]
    pub duration: Option<String>,
    /// Repetitions of each case instead of the suite's: a count, or
    /// until:3%,max:20 to go on until every paired ratio is known to ±3 %
    /// or its verdict is settled, at most 20 (intervals then widened so
    /// that 95 % holds across the looks; docs/suites.md).
    #[arg(long, value_name = "N|until:P%,max:N", value_parser = crate::runner::stopping::Repetitions::parse)]
    pub repetitions: Option<crate::runner::stopping::Repetitions>,
    /// Only these variants: a response shape (`default`, `normalized` or
    /// `study`), a mode (e.g. `native`, `jit`), or both as MODE/RESPONSE (as
    /// for `check`).
    #[arg(long, value_name = "VARIANT")]
    pub variant: Option<VariantSel>,
    /// One load profile instead of the suite's [[load]] list: this many
    /// connections (e.g. 50, 1k). Unset parts come from the suite's first profile.
    #[arg(long, value_name = "N", value_parser = crate::args::bounds::connections)]
    pub connections: Option<usize>,
    /// One constant-rate profile at this many requests per second (e.g. 2000, 10k)
    /// instead of the suite's [[load]] list.
    #[arg(long, value_name = "RATE", value_parser = crate::args::rate)]
    pub rate: Option<f64>,
    /// Load threads of the one profile given by these flags.
    #[arg(long, value_name = "N", value_parser = crate::args::bounds::threads)]
    pub threads: Option<usize>,
    /// Requests in flight per connection of the one (closed-loop) profile.
    #[arg(long, value_name = "N", value_parser = crate::args::bounds::pipeline)]
    pub pipeline: Option<usize>,
    /// Warm-up before each case instead of the suite's (e.g. 2s, or auto[:CEILING]: until
    /// the server is steady).
    #[arg(long, value_name = "DURATION|auto[:CEILING]", value_parser = crate::args::warmup)]
    pub warmup: Option<crate::args::Warmup>,
    /// Request timeout instead of the suite's (e.g. 2s, 500ms).
    #[arg(long, value_name = "DURATION", value_parser = crate::args::positive_duration)]
    pub timeout: Option<Duration>,
    /// Order of cases within each repetition instead of the suite's:
    /// `case` shuffles them (seeded, the seed stored with the run) and
    /// rotates that order each repetition, so drift does not line up with one server.
    #[arg(long, value_enum, value_name = "ORDER")]
    pub interleave: Option<Interleave>,
    /// The seed of `--interleave case`'s shuffle [default: drawn, then stored with the run]
    #[arg(long, value_name = "N")]
    pub interleave_seed: Option<u64>,
    /// Print the expanded plan, the case count and the estimated time; run nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// The results database.
    #[arg(long, default_value = "results.db")]
    pub db: PathBuf,
    /// The fairbench root (holding servers/, scenarios/, suites/); default: found from the current directory.
    #[arg(long)]
    pub root: Option<PathBuf>,
    /// Measure normalized variants even when they fail their scenario contract.
    #[arg(long)]
    pub allow_unfair: bool,
    /// Run the publication's own tool (wrk, wrk2 or ab, from the PATH) on
    /// each case right after fairbench measured it, on the same server, and
    /// store what it printed beside fairbench's figures [default: the
    /// suite's `calibrate`].
    #[arg(long, value_enum, value_name = "TOOL")]
    pub calibrate: Option<crate::calibration::Tool>,
    /// Finish the remaining cases of an interrupted run.
    #[arg(long, value_name = "RUN", conflicts_with_all = ["servers", "scenarios", "cores", "duration", "repetitions", "variant", "connections", "rate", "threads", "pipeline", "warmup", "timeout", "interleave", "interleave_seed", "dry_run"])]
    pub resume: Option<i64>,
    /// Write the HTML report of the run to FILE when it ends.
    #[arg(long, value_name = "FILE")]
    pub report: Option<PathBuf>,
    /// Also write the run's report as JSON (`report --format json`, schema
    /// in docs/schemas/) to FILE when it ends: the table for a CI log, the
    /// file for its artefacts.
    #[arg(long, value_name = "FILE")]
    pub export_json: Option<PathBuf>,
    /// Also write the run's cases as CSV (`report --format csv`) to FILE.
    #[arg(long, value_name = "FILE")]
    pub export_csv: Option<PathBuf>,
    /// Also write the run's report as Markdown (`report --format md`) to FILE.
    #[arg(long, value_name = "FILE")]
    pub export_markdown: Option<PathBuf>,
    /// When another benchmark holds the machine, wait for it instead of refusing.
    #[arg(long)]
    pub wait: bool,
    /// No progress display.
    #[arg(long)]
    pub quiet: bool,
    /// Serve live metrics while the suite runs: GET http://ADDR/metrics answers OpenMetrics
    /// text for Prometheus, labelled by case, e.g. 127.0.0.1:9464 (port 0: a free one,
    /// printed on stderr; docs/metrics.md).
    #[arg(long, value_name = "ADDR")]
    pub metrics_listen: Option<String>,
    /// With --metrics-listen: go on serving the final figures this long after the run, so
    /// that a scraper's last look sees them.
    #[arg(long, value_name = "DURATION", default_value = "0s", value_parser = crate::args::duration)]
    pub metrics_linger: Duration,
    #[command(flatten)]
    pub clients: ClientArgs,
    #[command(flatten)]
    pub server: ServerArgs,
}
