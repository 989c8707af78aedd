//! `fairbench check`'s engine room, as `runner/` is `run`'s: what was
//! asked ([`selection`]), each server built once per mode and started per
//! case in its place (`case`), graded against the scenario contract and
//! compared byte for byte with the reference. Knows nothing of flags or of
//! how the result is printed (`commands/check.rs`, `output/check_report.rs`).

mod case;
pub mod selection;

use std::ops::ControlFlow;
use std::path::PathBuf;
use std::time::Duration;

use fairbench_zoo::build::BuildOptions;
use fairbench_zoo::parity::CaseReport;
use fairbench_zoo::reference::apply_reference;
use fairbench_zoo::rule::{Grade, Rule};
use fairbench_zoo::runnable::{runnable, Gap, Runnable, Wanted};
use fairbench_zoo::toolchain::Prober;
use fairbench_zoo::{ResponseKind, Server, Zoo};
use serde::Serialize;

use crate::host::Host;
use crate::stage::{self, Stage, StageOptions};
use crate::topology::Layout;
use crate::usage_error::usage;
use case::{case_id, check_case};
pub use selection::{select, Request, Selection};

/// How the check runs, beyond what it checks.
pub struct CheckOptions {
    pub ready_timeout: Duration,
    pub fetch_timeout: Duration,
    pub stop_grace: Duration,
    pub build_timeout: Duration,
    pub rebuild: bool,
    /// Build cache and server logs.
    pub work_dir: PathBuf,
    /// The server whose `normalized` bytes every other must match.
    pub reference: String,
    /// Every scenario was asked for (a broken one then fails the check).
    pub all_scenarios: bool,
}

/// A server, mode or whole selection not checked, with why.
#[derive(Debug, Serialize)]
pub struct Skipped {
    pub server: String,
    pub mode: Option<String>,
    pub reason: String,
}

/// What a check found.
pub struct Checked {
    pub cases: Vec<CaseReport>,
    pub skipped: Vec<Skipped>,
    /// No `normalized` variant failed its contract, nothing failed to build
    /// or start, no manifest or scenario was broken, no Ctrl-C.
    pub ok: bool,
    pub interrupted: bool,
}

/// Checks every case of `plan` with the servers placed by `layout`: builds,
/// starts, grades and stops each, then compares each `normalized` answer
/// with the reference's. Skips and failures are recorded, never fatal; a
/// Ctrl-C ends the check with every started server stopped.
pub fn check(
    zoo: &Zoo,
    plan: &Selection,
    layout: Layout,
    opts: &CheckOptions,
) -> anyhow::Result<Checked> {
    crate::host::groups::prepare(!matches!(layout.server, Host::Ssh(_)));
    for e in &zoo.errors {
        crate::note!("fairbench: {e}");
    }
    for name in &plan.invalid {
        crate::note!("skip {name}: invalid server.toml (see above)");
    }
    let failed_setup =
        !plan.invalid.is_empty() || (!zoo.scenario_errors().is_empty() && opts.all_scenarios);
    if let Some(sc) = plan.scenarios.iter().find(|s| s.needs_database()) {
        if !matches!(layout.server, Host::Local) {
            return Err(usage(format!(
                "--scenarios {}: {}",
                sc.name,
                stage::NOT_HERE
            )));
        }
    }
    let mut checking = Checking {
        stage: Stage::new(StageOptions {
            log_dir: opts.work_dir.join("logs"),
            work_dir: opts.work_dir.clone(),
            layout,
            cpus: crate::host::allowed_cpus(),
            ready_timeout: opts.ready_timeout,
            stop_grace: opts.stop_grace,
            fetch_timeout: opts.fetch_timeout,
            build: BuildOptions {
                step_timeout: opts.build_timeout,
                force: opts.rebuild,
            },
            db_max_pool: stage::max_pool(plan.servers.iter().map(|s| (*s, plan.cores))),
        }),
        plan,
        prober: Prober::new(),
        cases: Vec::new(),
        skipped: plan
            .invalid
            .iter()
            .map(|n| Skipped {
                server: n.clone(),
                mode: None,
                reason: "invalid server.toml".into(),
            })
            .collect(),
    };
    for server in &plan.servers {
        if crate::interrupt::interrupted() || checking.server(server).is_break() {
            break;
        }
    }
    let Checking {
        mut stage,
        mut cases,
        skipped,
        ..
    } = checking;
    stage.finish();
    apply_reference(&mut cases, &opts.reference);
    fairbench_zoo::protocol_parity::apply_http1_fields(&mut cases);
    if !cases.is_empty() && !cases.iter().any(|c| c.server == opts.reference) {
        eprintln!("{}", reference_absent(zoo, plan, &opts.reference));
    }
    let interrupted = crate::interrupt::interrupted();
    let ok = !interrupted && !failed_setup && !cases.iter().any(fails_the_check);
    Ok(Checked {
        cases,
        skipped,
        ok,
        interrupted,
    })
}

/// A `normalized` variant that failed its contract, or any case whose
/// server could not be built, started, made ready or asked.
fn fails_the_check(c: &CaseReport) -> bool {
    c.grade == Grade::Fail
        && (c.response_kind == ResponseKind::Normalized
            || c.rules.iter().any(|r| {
                matches!(
                    r.rule,
                    Rule::Build | Rule::Start | Rule::Ready | Rule::Fetch
                )
            }))
}

/// A check under way: what it has found so far.
struct Checking<'p, 'z> {
    stage: Stage,
    plan: &'p Selection<'z>,
    prober: Prober,
    cases: Vec<CaseReport>,
    skipped: Vec<Skipped>,
}

impl<'p> Checking<'p, '_> {
    /// Every case of one server: its modes built, each case staged and
    /// graded. Breaks on Ctrl-C.
    fn server(&mut self, server: &Server) -> ControlFlow<()> {
        let Some(run) = self.runnable(server) else {
            return ControlFlow::Continue(());
        };
        for &mode in &run.modes {
            let built = self.stage.build(server, mode, &mut |m| crate::note!("{m}"));
            if let Err(e) = built {
                for l in &e.log_tail {
                    crate::note!("  | {l}");
                }
                for (resp, sc, protocol) in run.cases() {
                    let id = case_id(server, mode, resp, sc, protocol);
                    let deviations = server.response(resp).deviations_for(&sc.name);
                    let mut c =
                        CaseReport::failed(&id, &deviations, Rule::Build, e.message.clone());
                    c.log_tail = e.log_tail.clone();
                    self.cases.push(c);
                }
                if crate::interrupt::interrupted() {
                    return ControlFlow::Break(());
                }
                continue;
            }
            for (resp, sc, protocol) in run.cases() {
                if crate::interrupt::interrupted() {
                    return ControlFlow::Break(());
                }
                let id = case_id(server, mode, resp, sc, protocol);
                let Some(c) = check_case(&mut self.stage, server, &id, sc, self.plan) else {
                    return ControlFlow::Break(());
                };
                crate::note!(
                    "check {} {} {}{}: {}",
                    c.server,
                    c.variant,
                    c.scenario,
                    if protocol.is_framed() {
                        format!(" over {protocol}")
                    } else {
                        String::new()
                    },
                    c.grade
                );
                self.cases.push(c);
            }
        }
        ControlFlow::Continue(())
    }

    /// What of `server` can be checked here, each gap noted and recorded;
    /// `None` when nothing can (and nothing is built).
    fn runnable<'s>(&mut self, server: &'s Server) -> Option<Runnable<'s, 'p>> {
        let plan = self.plan;
        let status = self.prober.probe(&server.toolchain);
        // `--mode` names one mode exactly; a server without it is skipped
        // for that, before anything else is asked of it.
        let modes: Vec<&str> = match &plan.mode {
            Some(m) => match server.modes.get_key_value(m) {
                Some((name, _)) => vec![name.as_str()],
                None if status.is_present() => {
                    let reason = format!("has no mode {m}");
                    crate::note!("skip {}: {reason}", server.name);
                    self.skipped.push(Skipped {
                        server: server.name.clone(),
                        mode: Some(m.clone()),
                        reason,
                    });
                    return None;
                }
                None => Vec::new(),
            },
            None => server.modes.keys().map(String::as_str).collect(),
        };
        let wanted = Wanted {
            scenarios: &plan.scenarios,
            responses: &plan.responses,
            protocols: &plan.protocols,
        };
        let mut run = runnable(server, &status, &wanted, modes);
        run.on_socket(server, plan.address_family.socket());
        for gap in &run.gaps {
            self.skip(server, gap);
        }
        (!run.is_empty()).then_some(run)
    }

    fn skip(&mut self, server: &Server, gap: &Gap) {
        let (mode, line) = match gap {
            Gap::Toolchain { .. } | Gap::NoResponse { .. } | Gap::Socket { .. } => {
                (None, gap.reason())
            }
            Gap::Scenario { scenario, .. } => (None, format!("{scenario}: {}", gap.reason())),
            Gap::Protocol { protocol, .. } => (None, format!("{protocol}: {}", gap.reason())),
            Gap::Mode { mode, .. } => (Some(mode.clone()), gap.reason()),
        };
        match &mode {
            Some(m) => crate::note!("skip {} {m}: {line}", server.name),
            None if matches!(gap, Gap::Scenario { .. } | Gap::Protocol { .. }) => {
                crate::note!("skip {} {line}", server.name)
            }
            None => crate::note!("skip {}: {line}", server.name),
        }
        self.skipped.push(Skipped {
            server: server.name.clone(),
            mode,
            reason: line,
        });
    }
}

/// One line: the byte comparison with the reference did not happen, and
/// why, so that an empty VS column is not read as "no difference".
fn reference_absent(zoo: &Zoo, plan: &Selection, reference: &str) -> String {
    let (why, remedy) = if zoo.server(reference).is_none() {
        (
            format!("there is no servers/{reference} in this root"),
            format!("copy servers/{reference} from fairbench's own zoo, or name another with --reference"),
        )
    } else if !plan.servers.iter().any(|s| s.name == reference) {
        (
            "--servers does not select it".to_string(),
            format!("add {reference} to --servers"),
        )
    } else {
        (
            "it was skipped, see above".to_string(),
            "make it runnable here".to_string(),
        )
    };
    format!(
        "note: the reference server {reference} is not part of this check ({why}): each response was graded against its contract, but no bytes were compared with {reference}'s (the VS {reference} column is empty); for that comparison, {remedy}"
    )
}
