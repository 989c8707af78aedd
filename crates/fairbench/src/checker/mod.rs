//! `fairbench check`'s engine room, as `runner/` is `run`'s: what was
//! asked ([`selection`]), each server built once per mode and started per
//! case in its place (`case`), graded against the scenario contract and
//! compared byte for byte with the reference. Knows nothing of flags or of
//! how the result is printed (`commands/check.rs`, `output/check_report.rs`).

mod case;
pub mod selection;

use std::path::PathBuf;
use std::time::Duration;

use fairbench_zoo::build::{self, BuildOptions, BuildStatus};
use fairbench_zoo::parity::{CaseReport, InspectOptions};
use fairbench_zoo::pki::RunPki;
use fairbench_zoo::reference::apply_reference;
use fairbench_zoo::rule::{Grade, Rule};
use fairbench_zoo::runnable::{runnable, Gap, Wanted};
use fairbench_zoo::toolchain::Prober;
use fairbench_zoo::{Protocol, ResponseKind, Zoo};
use serde::Serialize;

use crate::host::Host;
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
    layout: &Layout,
    opts: &CheckOptions,
) -> anyhow::Result<Checked> {
    let (ready_timeout, fetch_timeout) = (opts.ready_timeout, opts.fetch_timeout);
    let (stop_grace, build_timeout) = (opts.stop_grace, opts.build_timeout);
    crate::host::groups::prepare(!matches!(layout.server, Host::Ssh(_)));
    let work = opts.work_dir.clone();
    let cache_dir = work.join("build");
    let log_dir = work.join("logs");

    let mut failed_setup = false;
    for e in &zoo.errors {
        crate::note!("fairbench: {e}");
    }
    for name in &plan.invalid {
        crate::note!("skip {name}: invalid server.toml (see above)");
        failed_setup = true;
    }
    let scenario_broken = !zoo.scenario_errors().is_empty() && opts.all_scenarios;
    failed_setup |= scenario_broken;

    let mut skipped: Vec<Skipped> = plan
        .invalid
        .iter()
        .map(|n| Skipped {
            server: n.clone(),
            mode: None,
            reason: "invalid server.toml".into(),
        })
        .collect();
    let mut cases: Vec<CaseReport> = Vec::new();
    let mut prober = Prober::new();
    let build_opts = BuildOptions {
        step_timeout: build_timeout,
        force: opts.rebuild,
    };
    // The database scenarios' PostgreSQL: one for the whole check, on the
    // CPUs the servers do not get when there are any.
    let database = match plan.scenarios.iter().find(|s| s.needs_database()) {
        None => None,
        Some(sc) => {
            if !matches!(layout.server, Host::Local) {
                return Err(usage(format!(
                    "--scenarios {}: the database scenarios need the servers on this machine (PostgreSQL listens on its 127.0.0.1); not yet with another topology or server host",
                    sc.name
                )));
            }
            let max_pool = plan
                .servers
                .iter()
                .map(|s| s.db_pool(plan.cores))
                .max()
                .unwrap_or(1);
            let cpus = plan.cpus.as_ref().and_then(|server| {
                let rest: Vec<usize> = crate::host::allowed_cpus()
                    .into_iter()
                    .filter(|c| !server.contains(c))
                    .collect();
                (!rest.is_empty()).then_some(rest)
            });
            match crate::database::Database::start(&log_dir, cpus, max_pool, ready_timeout) {
                Ok(d) => Some(d),
                // Ctrl-C ended initdb or PostgreSQL while they were set up:
                // the check was interrupted, it did not fail.
                Err(_) if crate::interrupt::interrupted() => {
                    return Ok(Checked {
                        cases,
                        skipped,
                        ok: false,
                        interrupted: true,
                    })
                }
                Err(e) => return Err(e),
            }
        }
    };
    let inspect_opts = InspectOptions {
        fetch_timeout,
        database: database.as_ref().map(|d| d.pg().oracle()),
        trust: None,
    };
    // h2 over TLS: a CA made for this check, its files removed at the end.
    let pki = if plan.protocols.iter().any(|p| p.tls())
        && plan.servers.iter().any(|s| s.serves(Protocol::H2))
    {
        match RunPki::create(&work.join("tls"), &[]) {
            Ok(p) => Some(p),
            Err(e) => {
                return Err(anyhow::anyhow!("fairbench: {e}"));
            }
        }
    } else {
        None
    };

    'servers: for server in &plan.servers {
        if crate::interrupt::interrupted() {
            break;
        }
        let status = prober.probe(&server.toolchain);
        // `--mode` names one mode exactly; a server without it is skipped
        // for that, before anything else is asked of it.
        let modes: Vec<&str> = match &plan.mode {
            Some(m) => match server.modes.get_key_value(m) {
                Some((name, _)) => vec![name.as_str()],
                None if status.is_present() => {
                    let reason = format!("has no mode {m}");
                    crate::note!("skip {}: {reason}", server.name);
                    skipped.push(Skipped {
                        server: server.name.clone(),
                        mode: Some(m.clone()),
                        reason,
                    });
                    continue;
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
        let run = runnable(server, &status, &wanted, modes);
        for gap in &run.gaps {
            let (mode, line) = match gap {
                Gap::Toolchain { .. } | Gap::NoResponse => (None, gap.reason()),
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
            skipped.push(Skipped {
                server: server.name.clone(),
                mode,
                reason: line,
            });
        }
        if run.is_empty() {
            // Nothing to check: no build either.
            continue;
        }
        let (scenarios, protocols) = (&run.scenarios, &run.protocols);
        for &mode_name in &run.modes {
            crate::note!("build {} {mode_name} …", server.name);
            let built = match build::ensure_built_with(server, mode_name, &cache_dir, &build_opts) {
                Ok(b) => {
                    match b.status {
                        BuildStatus::Cached => {
                            crate::note!("build {} {mode_name}: cached", server.name)
                        }
                        BuildStatus::Built => crate::note!(
                            "build {} {mode_name}: built in {:.1}s",
                            server.name,
                            b.duration.as_secs_f64()
                        ),
                    }
                    b
                }
                Err(e) => {
                    crate::note!("build {} {mode_name}: failed: {e}", server.name);
                    for l in e.log_tail() {
                        crate::note!("  | {l}");
                    }
                    for (&resp, &protocol) in run
                        .responses
                        .iter()
                        .flat_map(|r| protocols.iter().map(move |p| (r, p)))
                    {
                        for sc in scenarios {
                            let id = case_id(server, mode_name, resp, sc, protocol);
                            let mut c = CaseReport::failed(
                                &id,
                                &server.response(resp).deviations_for(&sc.name),
                                Rule::Build,
                                e.to_string(),
                            );
                            c.log_tail = e.log_tail().to_vec();
                            cases.push(c);
                        }
                    }
                    if crate::interrupt::interrupted() {
                        break 'servers;
                    }
                    continue;
                }
            };
            for &resp in &run.responses {
                for (sc, &protocol) in scenarios
                    .iter()
                    .flat_map(|sc| protocols.iter().map(move |p| (sc, p)))
                {
                    if crate::interrupt::interrupted() {
                        break 'servers;
                    }
                    let id = case_id(server, mode_name, resp, sc, protocol);
                    let c = check_case(
                        &layout.server,
                        server,
                        &id,
                        sc,
                        plan,
                        &built.out_dir,
                        &log_dir,
                        ready_timeout,
                        stop_grace,
                        &inspect_opts,
                        database.as_ref(),
                        pki.as_ref(),
                    );
                    crate::note!(
                        "check {} {} {}{}: {}",
                        c.server,
                        c.variant,
                        c.scenario,
                        if protocol.is_h2() {
                            format!(" over {protocol}")
                        } else {
                            String::new()
                        },
                        c.grade
                    );
                    cases.push(c);
                }
            }
        }
    }

    if let Some(d) = database {
        d.stop();
    }
    apply_reference(&mut cases, &opts.reference);
    fairbench_zoo::protocol_parity::apply_http1_fields(&mut cases);
    if !cases.is_empty() && !cases.iter().any(|c| c.server == opts.reference) {
        eprintln!("{}", reference_absent(zoo, plan, &opts.reference));
    }
    let interrupted = crate::interrupt::interrupted();
    let case_failed = cases.iter().any(|c| {
        c.grade == Grade::Fail
            && (c.response_kind == ResponseKind::Normalized
                || c.rules.iter().any(|r| {
                    matches!(
                        r.rule,
                        Rule::Build | Rule::Start | Rule::Ready | Rule::Fetch
                    )
                }))
    });
    let ok = !interrupted && !failed_setup && !case_failed;
    Ok(Checked {
        cases,
        skipped,
        ok,
        interrupted,
    })
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
