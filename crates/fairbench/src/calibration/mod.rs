//! Calibration: the publication's own tool (wrk, wrk2 or ab) run on the
//! same case, against the same server process, right after fairbench's
//! measurement, so that the figures fairbench computes the publications'
//! way can be set beside what the original tool printed.
//!
//! The tool is given the case's shape in its own flags: wrk the closed
//! loop's threads, connections, duration and timeout (whole seconds, as
//! wrk takes them); wrk2 the constant rate as `-R`; ab the request count
//! (or the duration as `-t`), the concurrency and `-k` for keep-alive. A
//! case whose shape the tool cannot express (HTTP/2, a body, a mix,
//! pipelining, a sub-second timeout for wrk) is not calibrated, and says
//! why; a tool that is not installed is one line, never a failed case.

mod ab_output;
mod wrk_output;

use std::process::Command;
use std::time::Duration;

use fairbench_engine::{LoadConfig, LoadModel, Protocol};
use serde::{Deserialize, Serialize};

/// The original tools fairbench can calibrate against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Tool {
    /// wrk 4.x: closed loop, as the Dart-vs-Go study ran it.
    Wrk,
    /// wrk2 (its binary named `wrk2`): a constant rate, as the rebuttal ran it.
    Wrk2,
    /// ApacheBench: as the 2012 post ran it.
    Ab,
}

impl Tool {
    pub fn parse(s: &str) -> Result<Tool, String> {
        match s {
            "wrk" => Ok(Tool::Wrk),
            "wrk2" => Ok(Tool::Wrk2),
            "ab" => Ok(Tool::Ab),
            _ => Err(format!("expected wrk, wrk2 or ab, got {s:?}")),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Tool::Wrk => "wrk",
            Tool::Wrk2 => "wrk2",
            Tool::Ab => "ab",
        }
    }
}

/// What an original tool printed, as numbers; absent where it printed no
/// such figure. Latencies in µs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolFigures {
    pub requests: Option<u64>,
    pub duration_s: Option<f64>,
    pub rps: Option<f64>,
    /// wrk's Latency Avg; ab's "Time per request (mean)".
    pub lat_mean_us: Option<f64>,
    pub lat_stdev_us: Option<f64>,
    pub lat_max_us: Option<f64>,
    /// wrk's "+/- Stdev".
    pub within_stdev_pct: Option<f64>,
    /// (percent, µs) as printed: wrk's 50/75/90/99, wrk2's, ab's table.
    pub percentiles: Vec<(f64, f64)>,
    /// ab's "Time per request (mean, across all concurrent requests)".
    pub time_per_request_all_us: Option<f64>,
    /// wrk's socket errors added up; ab's failed requests.
    pub errors: Option<u64>,
    pub timeouts: Option<u64>,
    pub non_2xx: Option<u64>,
    pub transfer_bytes_per_s: Option<f64>,
}

impl ToolFigures {
    /// The printed value at percentile `p`, if the tool printed it.
    pub fn at(&self, p: f64) -> Option<f64> {
        self.percentiles
            .iter()
            .find(|(q, _)| (q - p).abs() < 1e-9)
            .map(|(_, v)| *v)
    }
}

/// How a calibration ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    Done,
    /// Not run: the tool is absent, or the case's shape is not the tool's.
    Skipped,
    /// Run, but it failed or printed nothing readable.
    Failed,
}

impl State {
    pub fn as_str(self) -> &'static str {
        match self {
            State::Done => "done",
            State::Skipped => "skipped",
            State::Failed => "failed",
        }
    }
}

/// One calibration of one case.
#[derive(Debug, Clone)]
pub struct Calibration {
    pub tool: Tool,
    /// The command line as run (or as it would have been).
    pub command: Vec<String>,
    pub state: State,
    pub reason: Option<String>,
    /// What the tool printed (stdout, then stderr).
    pub output: String,
    pub figures: Option<ToolFigures>,
}

impl Calibration {
    /// Not run, for `reason`.
    pub fn skipped(tool: Tool, reason: String) -> Calibration {
        Calibration {
            tool,
            command: Vec::new(),
            state: State::Skipped,
            reason: Some(reason),
            output: String::new(),
            figures: None,
        }
    }
}

/// Runs `tool` on the case that `cfg` measured, against the same server;
/// `measured` is how many requests fairbench's window counted (ab holds a
/// record per request it may send, so its `-n` is sized from it).
pub fn calibrate(tool: Tool, cfg: &LoadConfig, measured: u64) -> Calibration {
    calibrate_with(tool, tool.name(), cfg, measured)
}

/// As [`calibrate`], with the tool's program named (a path in tests).
fn calibrate_with(tool: Tool, program: &str, cfg: &LoadConfig, measured: u64) -> Calibration {
    let skipped = |command: Vec<String>, reason: String| Calibration {
        command,
        ..Calibration::skipped(tool, reason)
    };
    let args = match arguments(tool, cfg, measured) {
        Ok(a) => a,
        Err(why) => return skipped(Vec::new(), why),
    };
    let mut command = vec![tool.name().to_string()];
    command.extend(args.iter().cloned());
    let mut cmd = Command::new(program);
    cmd.args(&args);
    // The tool's own run, its timeout, and room to start and print.
    let bound = cfg.duration + cfg.timeout + Duration::from_secs(30);
    let finished = match fairbench_sys::process::bounded::run(cmd, None, bound) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return skipped(command, format!("{} is not on the PATH", tool.name()))
        }
        Err(e) => return skipped(command, format!("{} would not start: {e}", tool.name())),
    };
    let output = format!("{}{}", finished.stdout_text(), finished.stderr_text());
    let figures = match tool {
        Tool::Wrk | Tool::Wrk2 => wrk_output::parse(&finished.stdout_text()),
        Tool::Ab => ab_output::parse(&finished.stdout_text()),
    };
    let (state, reason) = match (&finished.status, &figures) {
        (None, _) => (
            State::Failed,
            Some(format!("still running after {bound:?}: killed")),
        ),
        (Some(s), Some(_)) if s.success() => (State::Done, None),
        (Some(s), _) => {
            // Its last words say why (ab: "apr_socket_recv: …").
            let last = output
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("")
                .trim();
            let kept = if figures.is_some() {
                "its figures kept"
            } else {
                "and printed no figures"
            };
            (
                State::Failed,
                Some(format!("{} {s}, {kept}: {last}", tool.name())),
            )
        }
    };
    Calibration {
        tool,
        command,
        state,
        reason,
        output,
        figures,
    }
}

/// ab's `-n` when the case ends by time: room for four times what
/// fairbench counted, and never under ab's own default for `-t`.
fn ab_cap(measured: u64) -> u64 {
    measured.saturating_mul(4).max(50_000)
}

/// The tool's flags for the case, or why the case is not the tool's.
fn arguments(tool: Tool, cfg: &LoadConfig, measured: u64) -> Result<Vec<String>, String> {
    if cfg.protocol != Protocol::Http1 {
        return Err(format!("{} speaks HTTP/1.x only", tool.name()));
    }
    if cfg.mix.is_some() || cfg.stages.is_some() {
        return Err("a mix of requests or a rate profile is fairbench's alone".into());
    }
    if !cfg.request.body.is_empty() || cfg.request.method != "GET" {
        return Err(format!("{} is run with GET requests only", tool.name()));
    }
    // A scenario's own headers (gzip's Accept-Encoding) change the work
    // asked: the tool is not told them, so it would measure another request.
    if !cfg.request.headers.is_empty() {
        return Err(format!(
            "{} is run without the scenario's request headers",
            tool.name()
        ));
    }
    if cfg.pipeline > 1 {
        return Err("pipelining is fairbench's alone".into());
    }
    let secs = |d: Duration| d.as_secs() + u64::from(d.subsec_nanos() > 0);
    let mut a: Vec<String> = Vec::new();
    match (tool, cfg.model) {
        (Tool::Wrk | Tool::Wrk2, _) if !cfg.keepalive => {
            return Err(format!("{} keeps its connections open", tool.name()))
        }
        (Tool::Wrk | Tool::Wrk2, _) if cfg.timeout.subsec_nanos() > 0 => {
            return Err(format!(
                "{} takes its timeout in whole seconds, the case's is {:?}",
                tool.name(),
                cfg.timeout
            ))
        }
        (Tool::Wrk, LoadModel::ClosedLoop) => {}
        (Tool::Wrk2, LoadModel::ConstantRate { rps: rate }) => {
            a.extend(["-R".into(), format!("{}", rate.round().max(1.0))])
        }
        (Tool::Wrk, _) => {
            return Err(
                "wrk runs a closed loop; this case is a constant rate (wrk2 runs one)".into(),
            )
        }
        (Tool::Wrk2, _) => {
            return Err(
                "wrk2 runs a constant rate; this case is a closed loop (wrk runs one)".into(),
            )
        }
        (Tool::Ab, LoadModel::ClosedLoop) => {}
        (Tool::Ab, _) => return Err("ab runs a closed loop; this case is a constant rate".into()),
    }
    match tool {
        Tool::Wrk | Tool::Wrk2 => {
            let threads = cfg.threads.clamp(1, cfg.connections.max(1));
            a.extend([
                "-t".into(),
                threads.to_string(),
                "-c".into(),
                cfg.connections.to_string(),
                "-d".into(),
                format!("{}s", secs(cfg.duration).max(1)),
                "--timeout".into(),
                format!("{}s", secs(cfg.timeout).max(1)),
                "--latency".into(),
            ]);
        }
        Tool::Ab => {
            match cfg.requests {
                Some(n) => a.extend(["-n".into(), n.to_string()]),
                // ab stops at the first of -t and -n, and allocates a
                // record for each of -n: -n out of the way, but sized.
                None => a.extend([
                    "-t".into(),
                    secs(cfg.duration).max(1).to_string(),
                    "-n".into(),
                    ab_cap(measured).to_string(),
                ]),
            }
            a.extend([
                "-c".into(),
                cfg.connections.to_string(),
                "-s".into(),
                secs(cfg.timeout).max(1).to_string(),
            ]);
            if cfg.keepalive {
                a.push("-k".into());
            }
        }
    }
    for (name, value) in &cfg.request.headers {
        a.extend(["-H".into(), format!("{name}: {value}")]);
    }
    a.push(cfg.target.url.clone());
    Ok(a)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(model: LoadModel) -> LoadConfig {
        let target = fairbench_engine::Target::parse("http://127.0.0.1:8080/static").unwrap();
        let mut c = LoadConfig::new(target);
        c.model = model;
        c.connections = 50;
        c.threads = 2;
        c.duration = Duration::from_secs(5);
        c.timeout = Duration::from_secs(2);
        c
    }

    #[test]
    fn wrk_gets_the_case_in_its_own_flags() {
        let a = arguments(Tool::Wrk, &config(LoadModel::ClosedLoop), 0).unwrap();
        assert_eq!(
            a.join(" "),
            "-t 2 -c 50 -d 5s --timeout 2s --latency http://127.0.0.1:8080/static"
        );
        let r = arguments(
            Tool::Wrk2,
            &config(LoadModel::ConstantRate { rps: 100.0 }),
            0,
        )
        .unwrap();
        assert_eq!(r[..2], ["-R".to_string(), "100".to_string()]);
    }

    #[test]
    fn ab_gets_the_request_count_or_the_duration() {
        let mut c = config(LoadModel::ClosedLoop);
        c.requests = Some(10_000);
        c.keepalive = false;
        c.connections = 2;
        assert_eq!(
            arguments(Tool::Ab, &c, 0).unwrap().join(" "),
            "-n 10000 -c 2 -s 2 http://127.0.0.1:8080/static"
        );
        c.requests = None;
        c.keepalive = true;
        let a = arguments(Tool::Ab, &c, 100_000).unwrap().join(" ");
        assert!(
            a.starts_with("-t 5 -n 400000 ") && a.contains(" -k "),
            "{a}"
        );
        let a = arguments(Tool::Ab, &c, 10).unwrap().join(" ");
        assert!(a.starts_with("-t 5 -n 50000 "), "{a}");
    }

    #[test]
    fn a_shape_the_tool_cannot_express_is_refused_with_why() {
        let rate = config(LoadModel::ConstantRate { rps: 100.0 });
        assert!(arguments(Tool::Wrk, &rate, 0)
            .unwrap_err()
            .contains("wrk2 runs one"));
        let mut c = config(LoadModel::ClosedLoop);
        c.timeout = Duration::from_millis(100);
        assert!(arguments(Tool::Wrk, &c, 0)
            .unwrap_err()
            .contains("whole seconds"));
        let mut c = config(LoadModel::ClosedLoop);
        c.protocol = Protocol::H2;
        assert!(arguments(Tool::Ab, &c, 0).unwrap_err().contains("HTTP/1.x"));
        let mut c = config(LoadModel::ClosedLoop);
        c.request.headers = vec![("Accept-Encoding".into(), "gzip".into())];
        assert!(arguments(Tool::Wrk, &c, 0)
            .unwrap_err()
            .contains("request headers"));
    }

    #[test]
    fn a_tool_not_installed_is_a_skip_not_a_failure() {
        let cal = calibrate_with(
            Tool::Wrk,
            "/nonexistent/fairbench-test/wrk",
            &config(LoadModel::ClosedLoop),
            0,
        );
        assert_eq!(cal.state, State::Skipped);
        assert_eq!(cal.reason.as_deref(), Some("wrk is not on the PATH"));
        assert!(cal.command[0] == "wrk" && cal.figures.is_none());
    }
}
