//! `fairbench check`: build and start servers, fetch each scenario's raw
//! response, grade it against the scenario contract and compare servers
//! byte for byte. Exits 1 when a `normalized` variant fails its contract or
//! a server cannot be built or started.

use std::path::PathBuf;
use std::time::Duration;

use fairbench_zoo::build::{self, BuildOptions, BuildStatus};
use fairbench_zoo::parity::{CaseId, CaseReport, InspectOptions};
use fairbench_zoo::pki::RunPki;
use fairbench_zoo::reference::{apply_reference, REFERENCE_SERVER};
use fairbench_zoo::rule::{Grade, Rule};
use fairbench_zoo::toolchain::Prober;
use fairbench_zoo::{Protocol, ResponseKind, Scenario, Server, Zoo};
use serde::Serialize;

use crate::args::{load_zoo, positive_duration, resolve_root, CpuList};
use crate::host::Host;
use crate::output::check_report;
use crate::start::{start, StartError, StartSpec};
use crate::topology::{CheckPlaceArgs, Layout};
use crate::usage::usage;

#[derive(clap::Args, Debug)]
pub struct CheckArgs {
    /// The fairbench root (a folder with servers/ and scenarios/); by default
    /// the nearest such folder at or above the current directory.
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// Servers to check: glob patterns on the folder name, comma-separated
    /// (e.g. `go-*,node-http`).
    #[arg(long, value_name = "GLOB", default_value = "*")]
    pub servers: String,
    /// Scenarios to check, comma-separated (default: all).
    #[arg(long, value_name = "LIST")]
    pub scenarios: Option<String>,
    /// Which variants: a response shape (`default`, `normalized`, or `study`
    /// for the servers a publication measured), a mode (e.g. `native`,
    /// `jit`), or both as MODE/RESPONSE (default: every mode, default and
    /// normalized).
    #[arg(long, value_name = "VARIANT")]
    pub variant: Option<crate::args::VariantSel>,
    /// Protocols to check each server over, comma-separated: `http/1.1`,
    /// `h2c` (HTTP/2 with prior knowledge), `h2` (HTTP/2 over TLS with a
    /// certificate from a CA made for the check). A server that does not
    /// serve one is skipped for it, with its manifest's reason.
    #[arg(long, value_name = "LIST", default_value = "http/1.1")]
    pub protocols: String,
    /// Compile/run mode (e.g. `native`, `jit`, `exe`; default: every mode).
    #[arg(long, value_name = "M")]
    pub mode: Option<String>,
    /// Pin each server to these CPUs, e.g. `0` or `0-1,3`.
    #[arg(long, value_name = "LIST")]
    pub cpus: Option<CpuList>,
    /// CORES given to the server (default: the number of --cpus, else 1).
    #[arg(long, value_name = "N", value_parser = crate::args::positive_usize)]
    pub cores: Option<usize>,
    /// How long a started server has to accept connections (e.g. 30s; a bare
    /// number is seconds).
    #[arg(long, value_name = "DURATION", default_value = "30", value_parser = positive_duration)]
    pub ready_timeout: Duration,
    /// How long to wait for each response.
    #[arg(long, value_name = "DURATION", default_value = "5", value_parser = positive_duration)]
    pub fetch_timeout: Duration,
    /// How long between SIGTERM and SIGKILL when stopping a server.
    #[arg(long, value_name = "DURATION", default_value = "5", value_parser = positive_duration)]
    pub stop_grace: Duration,
    /// How long each build step may take.
    #[arg(long, value_name = "DURATION", default_value = "1800", value_parser = positive_duration)]
    pub build_timeout: Duration,
    /// Rebuild even when the build cache is current.
    #[arg(long)]
    pub rebuild: bool,
    /// Build cache and server logs (default: <root>/.fairbench).
    #[arg(long, value_name = "DIR")]
    pub work_dir: Option<PathBuf>,
    /// The server whose `normalized` bytes every other must match.
    #[arg(long, value_name = "NAME", default_value = REFERENCE_SERVER)]
    pub reference: String,
    /// Print each raw request and response (control bytes escaped).
    #[arg(long)]
    pub raw: bool,
    /// List passing rules too, not only warnings and failures.
    #[arg(long)]
    pub all_rules: bool,
    /// text (tables) or json (schema: docs/cli-json.md).
    #[arg(long, value_enum, value_name = "FORMAT", default_value = "text")]
    pub format: crate::args::TextFormat,
    /// Same as --format json.
    #[arg(long, conflicts_with = "format")]
    pub json: bool,
    #[command(flatten)]
    pub place: CheckPlaceArgs,
}

/// Lines of a server's log a failed check shows.
const CHECK_LOG_TAIL: usize = 15;

/// A server, mode or whole selection not checked, with why.
#[derive(Debug, Serialize)]
pub struct Skipped {
    pub server: String,
    pub mode: Option<String>,
    pub reason: String,
}

#[derive(Serialize)]
struct CheckJson<'a> {
    root: &'a std::path::Path,
    reference: &'a str,
    ok: bool,
    interrupted: bool,
    skipped: &'a [Skipped],
    cases: &'a [CaseReport],
    errors: Vec<&'a fairbench_zoo::DefinitionError>,
}

/// What the arguments select, validated.
struct CheckSelection<'z> {
    servers: Vec<&'z Server>,
    /// Selected folders whose manifest is invalid.
    invalid: Vec<String>,
    scenarios: Vec<&'z Scenario>,
    responses: Vec<ResponseKind>,
    protocols: Vec<Protocol>,
    mode: Option<String>,
    cpus: Option<Vec<usize>>,
    cores: usize,
}

/// `--protocols`: known names, each once, and at least one selected server
/// that serves one of them (else one line saying who serves what).
fn protocols(list: &str, servers: &[&Server]) -> anyhow::Result<Vec<Protocol>> {
    let mut out = Vec::new();
    for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        match Protocol::parse(name) {
            Some(p) if !out.contains(&p) => out.push(p),
            Some(_) => return Err(usage(format!("--protocols: {name} is listed twice"))),
            None => {
                return Err(usage(format!(
                    "--protocols: unknown protocol {name:?}; expected {} (comma-separated)",
                    Protocol::expected()
                )))
            }
        }
    }
    if out.is_empty() {
        return Err(usage(format!(
            "--protocols: expected one or more of {}",
            Protocol::expected()
        )));
    }
    let served = servers.iter().any(|s| out.iter().any(|p| s.serves(*p)));
    if !servers.is_empty() && !served {
        let why: Vec<String> = servers
            .iter()
            .map(|s| format!("{}: {}", s.name, s.why_not(out[0])))
            .collect();
        return Err(usage(format!(
            "--protocols {list}: no selected server serves {} ({})",
            out.iter()
                .map(|p| p.as_str())
                .collect::<Vec<_>>()
                .join(" or "),
            why.join("; ")
        )));
    }
    Ok(out)
}

fn plan<'z>(zoo: &'z Zoo, args: &CheckArgs) -> anyhow::Result<CheckSelection<'z>> {
    let filter = fairbench_zoo::NameFilter::parse(&args.servers)
        .map_err(|e| usage(format!("--servers: {e}")))?;
    let selected = |name: &str| filter.matches(name);
    let servers: Vec<&Server> = zoo.servers.iter().filter(|s| selected(&s.name)).collect();
    let invalid: Vec<String> = zoo
        .invalid_server_names()
        .into_iter()
        .filter(|n| selected(n))
        .collect();
    if servers.is_empty() && invalid.is_empty() {
        let names: Vec<&str> = zoo.servers.iter().map(|s| s.name.as_str()).collect();
        return Err(usage(format!(
            "--servers {}: matches no server; there are: {}",
            args.servers,
            if names.is_empty() {
                "none".to_string()
            } else {
                names.join(", ")
            }
        )));
    }

    let scenarios: Vec<&Scenario> = match &args.scenarios {
        None => zoo.scenarios.iter().collect(),
        Some(list) => {
            let mut out = Vec::new();
            for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
                match zoo.scenario(name) {
                    Some(s) => out.push(s),
                    None if zoo.scenario_error(name).is_some() => {
                        let e = zoo.scenario_error(name).map(|e| e.to_string());
                        return Err(usage(format!(
                            "--scenarios: scenario {name} is broken: {}",
                            e.unwrap_or_default()
                        )));
                    }
                    None => {
                        let known: Vec<&str> =
                            zoo.scenarios.iter().map(|s| s.name.as_str()).collect();
                        return Err(usage(format!(
                            "--scenarios: no scenario named {name}; there are: {}",
                            known.join(", ")
                        )));
                    }
                }
            }
            out
        }
    };
    if scenarios.is_empty() {
        return Err(usage("no scenario to check"));
    }

    let variant = args.variant.clone().unwrap_or_default();
    let responses = match variant.response {
        None => ResponseKind::STANDARD.to_vec(),
        Some(r) => vec![r],
    };
    let mode = match (&variant.mode, &args.mode) {
        (Some(a), Some(b)) if a != b => {
            return Err(usage(format!(
                "--variant {a}/… and --mode {b} name different modes"
            )))
        }
        (Some(m), _) | (None, Some(m)) => Some(m.clone()),
        (None, None) => None,
    };
    if let Some(m) = &mode {
        if !servers.iter().any(|s| s.modes.contains_key(m)) {
            return Err(usage(format!(
                "{} {m}: no selected server has that mode",
                if variant.mode.is_some() {
                    "--variant"
                } else {
                    "--mode"
                }
            )));
        }
    }

    // A typo here would silently drop the reference-bytes rule (a zoo
    // without the default reference has nothing to compare with).
    if args.reference != REFERENCE_SERVER
        && !zoo.servers.iter().any(|s| s.name == args.reference)
        && !zoo.invalid_server_names().contains(&args.reference)
    {
        let names: Vec<&str> = zoo.servers.iter().map(|s| s.name.as_str()).collect();
        return Err(usage(format!(
            "--reference {}: no server has that name; there are: {}",
            args.reference,
            names.join(", ")
        )));
    }
    let protocols = protocols(&args.protocols, &servers)?;
    let cpus = args.cpus.clone().map(|c| c.0);
    let cores = match (args.cores, &cpus) {
        (Some(n), _) => n,
        (None, Some(c)) => c.len(),
        (None, None) => 1,
    };
    // CORES beyond the CPUs would size the server's threads for a machine
    // it does not have; on an ssh host its own CPUs are what count.
    let here = crate::host::allowed_cpus().len();
    if args.place.server_host.is_none() && cores > here {
        return Err(usage(format!(
            "--cores {cores}: this machine lets fairbench use {here} CPUs"
        )));
    }
    Ok(CheckSelection {
        servers,
        invalid,
        scenarios,
        responses,
        protocols,
        mode,
        cpus,
        cores,
    })
}

pub fn run(args: CheckArgs) -> anyhow::Result<i32> {
    let (ready_timeout, fetch_timeout) = (args.ready_timeout, args.fetch_timeout);
    let (stop_grace, build_timeout) = (args.stop_grace, args.build_timeout);
    let root = resolve_root(args.root.as_deref())?;
    let zoo = load_zoo(&root)?;
    let plan = plan(&zoo, &args)?;
    // Where the servers run: here, in a namespace, or on an ssh host.
    let layout = Layout::for_check(&args.place)?;
    for n in &layout.notes {
        crate::note!("{n}");
    }
    crate::containment::prepare(!matches!(layout.server, crate::host::Host::Ssh(_)));
    let work = args
        .work_dir
        .clone()
        .unwrap_or_else(|| zoo.default_work_dir());
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
    let scenario_broken = !zoo.scenario_errors().is_empty() && args.scenarios.is_none();
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
        force: args.rebuild,
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
            Some(crate::database::Database::start(
                &log_dir,
                cpus,
                max_pool,
                ready_timeout,
            )?)
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
        if let fairbench_zoo::toolchain::ToolchainStatus::Unavailable { reason } = &status {
            crate::note!("skip {}: {reason}", server.name);
            skipped.push(Skipped {
                server: server.name.clone(),
                mode: None,
                reason: reason.clone(),
            });
            continue;
        }
        let scenarios: Vec<&&Scenario> = plan
            .scenarios
            .iter()
            .filter(|sc| {
                let yes = server.implements(&sc.name);
                if !yes {
                    let reason = format!(
                        "{}: not implemented (server.toml lists {})",
                        sc.name,
                        server.scenarios.as_deref().unwrap_or_default().join(", ")
                    );
                    eprintln!("skip {} {reason}", server.name);
                    skipped.push(Skipped {
                        server: server.name.clone(),
                        mode: None,
                        reason,
                    });
                }
                yes
            })
            .collect();
        if scenarios.is_empty() {
            // Nothing to check: no build either.
            continue;
        }
        if !plan.responses.iter().any(|r| server.has_response(*r)) {
            let reason = "has no study response (no publication measured it; docs/study.md)";
            eprintln!("skip {}: {reason}", server.name);
            skipped.push(Skipped {
                server: server.name.clone(),
                mode: None,
                reason: reason.into(),
            });
            continue;
        }
        let protocols: Vec<Protocol> = plan
            .protocols
            .iter()
            .copied()
            .filter(|&p| {
                if !server.serves(p) {
                    let reason = format!(
                        "{p}: does not serve {}: {}",
                        p.describe(),
                        server.why_not(p)
                    );
                    crate::note!("skip {} {reason}", server.name);
                    skipped.push(Skipped {
                        server: server.name.clone(),
                        mode: None,
                        reason,
                    });
                }
                server.serves(p)
            })
            .collect();
        if protocols.is_empty() {
            continue;
        }
        let modes: Vec<&String> = match &plan.mode {
            Some(m) => match server.modes.get_key_value(m) {
                Some((name, _)) => vec![name],
                None => {
                    let reason = format!("has no mode {m}");
                    crate::note!("skip {}: {reason}", server.name);
                    skipped.push(Skipped {
                        server: server.name.clone(),
                        mode: Some(m.clone()),
                        reason,
                    });
                    continue;
                }
            },
            None => server.modes.keys().collect(),
        };
        for mode_name in modes {
            let mode = &server.modes[mode_name];
            if let Some(reason) = &mode.unsupported {
                crate::note!("skip {} {mode_name}: unsupported: {reason}", server.name);
                skipped.push(Skipped {
                    server: server.name.clone(),
                    mode: Some(mode_name.clone()),
                    reason: format!("unsupported: {reason}"),
                });
                continue;
            }
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
                    for (&resp, &protocol) in plan
                        .responses
                        .iter()
                        .filter(|r| server.has_response(**r))
                        .flat_map(|r| protocols.iter().map(move |p| (r, p)))
                    {
                        for sc in &scenarios {
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
            for &resp in plan.responses.iter().filter(|r| server.has_response(**r)) {
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
                        &plan,
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
    apply_reference(&mut cases, &args.reference);
    fairbench_zoo::protocol_parity::apply_http1_fields(&mut cases);
    if !cases.is_empty() && !cases.iter().any(|c| c.server == args.reference) {
        eprintln!("{}", reference_absent(&zoo, &plan, &args.reference));
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

    if !args.raw {
        // The exchange is bulky (a whole file body); shown only when asked.
        for c in &mut cases {
            c.raw = None;
        }
    }
    if crate::args::wants_json(args.format, args.json) {
        let report = CheckJson {
            root: &zoo.root,
            reference: &args.reference,
            ok,
            interrupted,
            skipped: &skipped,
            cases: &cases,
            errors: zoo.errors.iter().collect(),
        };
        println!(
            "{}",
            crate::output::terminal::json(&serde_json::to_string_pretty(&report)?)
        );
    } else {
        // Printed at the end: the reference comparison needs every case.
        for c in &cases {
            print!(
                "{}",
                crate::output::terminal::text(&check_report::case_block(c, args.all_rules))
            );
            if args.raw {
                print!(
                    "{}",
                    crate::output::terminal::text(&check_report::raw_exchange(c))
                );
            }
        }
        print!(
            "{}",
            crate::output::terminal::text(&check_report::summary(
                &cases,
                &args.reference,
                skipped.len()
            ))
        );
    }
    if interrupted {
        crate::note!("fairbench: interrupted; every started server was stopped");
        return Ok(130);
    }
    Ok(if ok { 0 } else { 1 })
}

/// One line: the byte comparison with the reference did not happen, and
/// why, so that an empty VS column is not read as "no difference".
fn reference_absent(zoo: &Zoo, plan: &CheckSelection, reference: &str) -> String {
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

fn case_id(
    server: &Server,
    mode: &str,
    response: ResponseKind,
    sc: &Scenario,
    protocol: Protocol,
) -> CaseId {
    CaseId {
        server: server.name.clone(),
        mode: mode.to_string(),
        response,
        scenario: sc.name.clone(),
        protocol,
    }
}

/// Starts the server for one scenario, checks it, and stops it: whatever
/// happens, the process group is gone when this returns.
#[allow(clippy::too_many_arguments)]
fn check_case(
    host: &Host,
    server: &Server,
    id: &CaseId,
    sc: &Scenario,
    plan: &CheckSelection,
    out_dir: &std::path::Path,
    log_dir: &std::path::Path,
    ready_timeout: Duration,
    stop_grace: Duration,
    inspect_opts: &InspectOptions,
    db: Option<&crate::database::Database>,
    pki: Option<&RunPki>,
) -> CaseReport {
    let deviations = &server.response(id.response).deviations_for(&sc.name);
    let over = match id.protocol {
        Protocol::Http1 => String::new(),
        p => format!("-{p}"),
    };
    let log_path = log_dir.join(format!(
        "{}-{}-{}-{}{over}.log",
        id.server, id.mode, id.response, id.scenario
    ));
    let spec = StartSpec {
        server,
        mode: &id.mode,
        response: id.response,
        scenario: sc,
        cores: plan.cores,
        workers: None,
        env: match db {
            Some(d) if sc.needs_database() => d.pg().env(server.db_pool(plan.cores)),
            _ => Vec::new(),
        },
        cpus: plan.cpus.clone(),
        out_dir,
        log_path: log_path.clone(),
        ready_timeout,
        stop_grace,
        inspect: inspect_opts.clone(),
        protocol: id.protocol,
        pki,
    };
    let started = match start(host, &spec) {
        Ok(s) => s,
        Err(e) => {
            let mut c = CaseReport::failed(id, deviations, e.rule(), e.to_string());
            let tail = e.log_tail();
            c.log_tail = tail[tail.len().saturating_sub(CHECK_LOG_TAIL)..].to_vec();
            if let StartError::NotReady { .. } = e {
                crate::note!(
                    "{} {} {}: {e}; last lines of {}:",
                    id.server,
                    format_args!("{}/{}", id.mode, id.response),
                    id.scenario,
                    log_path.display()
                );
                for l in &c.log_tail {
                    crate::note!("  | {l}");
                }
            }
            // A log exists once a process was started.
            if matches!(e, StartError::Start(_) | StartError::NotReady { .. }) {
                c.log_path = Some(log_path);
            }
            return c;
        }
    };
    let mut report = started.parity;
    let proc = started.process;
    // A server that died while answering is a failure of its own.
    if let Some(how) = proc.exit_description() {
        if report.row.is_some() {
            report.rules.push(fairbench_zoo::rule::RuleResult::new(
                Rule::Fetch,
                Grade::Fail,
                format!("the server {how} during the check"),
            ));
            report.grade = Grade::Fail;
            if let Some(row) = report.row.as_mut() {
                row.grade = Grade::Fail;
            }
        }
    }
    proc.stop();
    if let Some(why) = proc.leftover() {
        crate::note!(
            "warning: the control group of {} was not removed: {why}",
            id.server
        );
    }
    report.log_path = Some(log_path);
    report
}
