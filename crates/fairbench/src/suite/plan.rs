//! From a suite and a zoo to the list of cases to measure.
//!
//! Repetitions are the outermost loop: every case's first repetition runs
//! before any second one, so slow drift of a noisy machine spreads across
//! all servers instead of favouring whichever ran first.

use std::collections::BTreeMap;
use std::time::Duration;

use fairbench_zoo::manifest::ResponseKind;
use fairbench_zoo::runnable::{Gap, Runnable, Wanted};
use fairbench_zoo::toolchain::{self, ToolchainStatus};
use fairbench_zoo::{NameFilter, Protocol, Scenario, Server, Zoo};

use super::file::{AddressFamily, CoreCount, LoadProfile, Step, Suite, SweepSpec};
use super::order::{case_order, Interleave};
use crate::args::bounds;

/// What a case or a sweep measures: one server variant serving one
/// scenario on some cores under one load profile, with the suite's warm-up
/// and timeout.
#[derive(Debug, Clone)]
pub struct Subject {
    pub server: Server,
    pub mode: String,
    pub response: ResponseKind,
    pub scenario: Scenario,
    pub cores: usize,
    pub cores_requested: CoreCount,
    /// `WORKERS` for the server when the suite sets it apart from `cores`.
    pub workers: Option<usize>,
    pub load: LoadProfile,
    pub warmup: crate::args::Warmup,
    pub timeout: Duration,
    /// How a request past `timeout` is counted (the suite's `timeout_mode`).
    pub timeout_mode: fairbench_engine::TimeoutMode,
    /// What the server is spoken to in.
    pub protocol: Protocol,
    /// The ladder's rung (`[[step]]`) this measures; None without steps.
    pub step: Option<String>,
    /// The loopback address family the load goes to.
    pub address_family: AddressFamily,
}

impl Subject {
    /// "go-nethttp native/default static 1c closed c=50"; with a worker
    /// count apart from the cores, "… 2c w=1 …"; over HTTP/2, "… static
    /// h2c 1c …" (HTTP/1.1, the default, is not named); a ladder's rung
    /// first, "[warm-up] go-nethttp …".
    pub fn label(&self) -> String {
        let workers = self.workers.map(|w| format!(" w={w}")).unwrap_or_default();
        let step = self
            .step
            .as_ref()
            .map(|s| format!("[{s}] "))
            .unwrap_or_default();
        let unix = match self.address_family {
            AddressFamily::Unix => " unix",
            _ => "",
        };
        format!(
            "{step}{} {}/{} {}{}{unix} {}c{workers} {}",
            self.server.name,
            self.mode,
            self.response,
            self.scenario.name,
            protocol_suffix(self.protocol),
            self.cores,
            self.load.label()
        )
    }

    /// The load's label as stored with the case (`cases.load_label`): over
    /// a unix socket it says so ("closed c=50 unix"), so that `show`,
    /// reports and `compare` never set a socket's figures beside TCP's as
    /// the same load.
    pub fn load_label(&self) -> String {
        match self.address_family {
            AddressFamily::Unix => format!("{} unix", self.load.label()),
            _ => self.load.label(),
        }
    }
}

/// " h2c" or " h2"; nothing for HTTP/1.1, so that labels and keys of
/// suites without protocols are what they always were.
pub fn protocol_suffix(p: Protocol) -> String {
    if p == Protocol::Http1 {
        String::new()
    } else {
        format!(" {p}")
    }
}

/// One repetition of a measurement.
#[derive(Debug, Clone)]
pub struct CaseSpec {
    pub subject: Subject,
    pub repetition: usize,
    pub duration: Duration,
}

impl CaseSpec {
    /// How the case is named in plans and progress lines.
    pub fn label(&self) -> String {
        format!("{} #{}", self.subject.label(), self.repetition)
    }
}

/// A rate sweep: constant-rate steps against one started server until the
/// knee is found.
#[derive(Debug, Clone)]
pub struct SweepItem {
    pub subject: Subject,
    pub spec: SweepSpec,
    /// Identifies the sweep's step cases and its result row.
    pub key: String,
}

#[derive(Debug, Clone)]
pub enum PlanItem {
    Case(Box<CaseSpec>),
    Sweep(Box<SweepItem>),
}

/// Something the suite asked for that cannot run here, with the reason.
#[derive(Debug, Clone)]
pub struct Skip {
    pub what: String,
    pub reason: String,
}

/// Every server a suite selected, by name, with its toolchain's status.
pub type Probes = BTreeMap<String, (Server, ToolchainStatus)>;

#[derive(Debug, Clone)]
pub struct SuitePlan {
    pub items: Vec<PlanItem>,
    pub skips: Vec<Skip>,
    /// Every server the suite selected, with its toolchain status.
    pub toolchains: Probes,
    pub cpus: Vec<usize>,
}

impl SuitePlan {
    pub fn case_count(&self) -> usize {
        self.items
            .iter()
            .filter(|i| matches!(i, PlanItem::Case(_)))
            .count()
    }

    pub fn sweep_count(&self) -> usize {
        self.items.len() - self.case_count()
    }

    /// Measurement time plus a few seconds per server start; sweeps are
    /// estimated at their coarse steps plus the bisection.
    pub fn estimate(&self) -> Duration {
        self.estimate_through(usize::MAX)
    }

    /// [`SuitePlan::estimate`] of the repetitions up to `rep` (an adaptive
    /// run stopping there; sweeps run in the first).
    pub fn estimate_through(&self, rep: usize) -> Duration {
        const START: f64 = 3.0;
        let secs: f64 = self
            .items
            .iter()
            .filter(|i| match i {
                PlanItem::Case(c) => c.repetition <= rep,
                PlanItem::Sweep(_) => true,
            })
            .map(|i| match i {
                PlanItem::Case(c) => {
                    START + (c.subject.warmup.at_most() + c.duration).as_secs_f64()
                }
                PlanItem::Sweep(s) => {
                    let steps = s.spec.estimated_steps();
                    START
                        + s.subject.warmup.at_most().as_secs_f64()
                        + steps * (s.spec.step_duration.as_secs_f64() + 0.5)
                }
            })
            .sum();
        // The suite's bounds keep this far from overflow; saturate anyway
        // rather than let an estimate end a run.
        Duration::try_from_secs_f64(secs).unwrap_or(Duration::MAX)
    }
}

fn filter(field: &str, list: &[String]) -> anyhow::Result<NameFilter> {
    NameFilter::parse(&list.join(","))
        .map_err(|e| crate::usage_error::usage(format!("{field}: {e}")))
}

pub fn plan(suite: &Suite, zoo: &Zoo) -> anyhow::Result<SuitePlan> {
    suite.pairing.check(zoo).map_err(|(field, m)| {
        crate::usage_error::usage(format!("suite {}: field {field}: {m}", suite.name))
    })?;
    plan_on(suite, zoo, crate::host::allowed_cpus(), &toolchain::probe)
}

/// The CPUs the full matrix is counted on: the study's 8-vCPU server, so
/// that a suite's header can state one figure whatever machine reads it.
pub const FULL_MATRIX_CPUS: usize = 8;

/// The suite's whole matrix as if every toolchain were present, on
/// [`FULL_MATRIX_CPUS`] CPUs: what a suite header's duration describes
/// (docs/suites.md), independent of what this machine can run.
pub fn full_matrix(suite: &Suite, zoo: &Zoo) -> anyhow::Result<SuitePlan> {
    let present =
        |_: &fairbench_zoo::manifest::Toolchain| ToolchainStatus::Present { version: None };
    plan_on(suite, zoo, (0..FULL_MATRIX_CPUS).collect(), &present)
}

fn plan_on(
    suite: &Suite,
    zoo: &Zoo,
    cpus: Vec<usize>,
    probe: &dyn Fn(&fairbench_zoo::manifest::Toolchain) -> ToolchainStatus,
) -> anyhow::Result<SuitePlan> {
    if suite.steps.is_empty() {
        let mut plan = plan_rungs(suite, None, zoo, cpus, probe)?;
        if suite.interleave == Interleave::Case {
            plan.items = interleave(plan.items, suite.interleave_seed.unwrap_or(0));
        }
        return Ok(plan);
    }
    // Every rung's cases in one plan, repetition by repetition, so that
    // the rungs share the machine's drift as the servers do.
    let mut out: Option<SuitePlan> = None;
    for step in &suite.steps {
        let rung = Suite {
            responses: step.responses.clone(),
            address_family: step.address_family,
            workers: step.workers,
            warmup: step.warmup,
            loads: step.loads.clone(),
            ..suite.clone()
        };
        let p = plan_rungs(&rung, Some(step), zoo, cpus.clone(), probe)?;
        match &mut out {
            None => out = Some(p),
            Some(o) => {
                o.items.extend(p.items);
                for skip in p.skips {
                    if !o
                        .skips
                        .iter()
                        .any(|k| k.what == skip.what && k.reason == skip.reason)
                    {
                        o.skips.push(skip);
                    }
                }
                o.toolchains.extend(p.toolchains);
            }
        }
    }
    let mut plan = out.expect("a suite with steps has at least one");
    plan.items.sort_by_key(|i| match i {
        PlanItem::Case(c) => c.repetition,
        PlanItem::Sweep(_) => 1,
    });
    if suite.interleave == Interleave::Case {
        plan.items = interleave(plan.items, suite.interleave_seed.unwrap_or(0));
    }
    Ok(plan)
}

/// The plan of `suite` as one rung (`step`, or the suite without steps),
/// repetition by repetition.
fn plan_rungs(
    suite: &Suite,
    step: Option<&Step>,
    zoo: &Zoo,
    cpus: Vec<usize>,
    probe: &dyn Fn(&fairbench_zoo::manifest::Toolchain) -> ToolchainStatus,
) -> anyhow::Result<SuitePlan> {
    let server_filter = filter("servers", &suite.servers)?;
    let mode_filter = filter("modes", &suite.modes)?;
    let scenario_filter = filter("scenarios", &suite.scenarios)?;
    let responses: Vec<ResponseKind> = ResponseKind::ALL
        .into_iter()
        .filter(|r| suite.responses.iter().any(|s| s == "*" || s == r.as_str()))
        .collect();
    let mut skips = invalid_servers(zoo, &server_filter);
    let servers = selected_servers(suite, zoo, &server_filter, &skips)?;
    let scenarios = selected_scenarios(suite, zoo, &scenario_filter)?;
    let cores = core_counts(&suite.cores, cpus.len(), &mut skips);

    // Which (server, mode) pairs can run at all: the zoo's one rule.
    let mut toolchains = BTreeMap::new();
    let mut runnable: Vec<Variant> = Vec::new();
    let wanted = Wanted {
        scenarios: &scenarios,
        responses: &responses,
        protocols: &suite.protocols,
    };
    for s in &servers {
        let status = probe(&s.toolchain);
        toolchains.insert(s.name.clone(), ((*s).clone(), status.clone()));
        let modes: Vec<&str> = s
            .modes
            .keys()
            .map(String::as_str)
            .filter(|m| mode_filter.matches(m))
            .collect();
        let mut run = fairbench_zoo::runnable::runnable(s, &status, &wanted, modes.iter().copied());
        run.on_socket(
            s,
            step.map_or(suite.address_family, |s| s.address_family)
                .socket(),
        );
        skips.extend(run.gaps.iter().map(|gap| gap_skip(s, gap)));
        if modes.is_empty() && status.is_present() {
            let all: Vec<&str> = s.modes.keys().map(String::as_str).collect();
            skips.push(Skip {
                what: s.name.clone(),
                reason: format!(
                    "no mode matches {:?} (its modes: {})",
                    suite.modes.join(","),
                    all.join(", ")
                ),
            });
        }
        if !run.is_empty() {
            let modes: Vec<String> = run.modes.iter().map(|m| m.to_string()).collect();
            let run = std::rc::Rc::new(run);
            runnable.extend(modes.into_iter().map(|m| (*s, m, run.clone())));
        }
    }

    Dimensions {
        variants: runnable.len(),
        responses: responses.len(),
        scenarios: scenarios.len(),
        cores: cores.len(),
    }
    .check(suite)?;
    let items = items(suite, step, &runnable, &cores);
    Ok(SuitePlan {
        items,
        skips,
        toolchains,
        cpus,
    })
}

/// A server variant that runs: the server, one of its modes, and what of
/// the suite it runs (shared by the server's modes).
type Variant<'z, 'a> = (&'z Server, String, std::rc::Rc<Runnable<'z, 'a>>);

/// A skip for each server folder the filter selects whose definition is
/// invalid.
fn invalid_servers(zoo: &Zoo, server_filter: &NameFilter) -> Vec<Skip> {
    let mut skips = Vec::new();
    for name in zoo.invalid_server_names() {
        if server_filter.matches(&name) {
            let errs: Vec<String> = zoo
                .errors_for_server(&name)
                .iter()
                .map(|e| e.to_string())
                .collect();
            skips.push(Skip {
                what: name,
                reason: format!("invalid definition: {}", errs.join("; ")),
            });
        }
    }
    skips
}

/// The valid servers the filter selects; an error when it selects nothing
/// at all (`skips` holds the invalid ones it selected).
fn selected_servers<'z>(
    suite: &Suite,
    zoo: &'z Zoo,
    server_filter: &NameFilter,
    skips: &[Skip],
) -> anyhow::Result<Vec<&'z Server>> {
    let servers: Vec<&Server> = zoo
        .servers
        .iter()
        .filter(|s| server_filter.matches(&s.name))
        .collect();
    if servers.is_empty() && skips.is_empty() {
        let known: Vec<&str> = zoo.servers.iter().map(|s| s.name.as_str()).collect();
        anyhow::bail!(crate::usage_error::usage(format!(
            "servers: {:?} matches no server (servers here: {})",
            suite.servers.join(","),
            known.join(", ")
        )));
    }
    Ok(servers)
}

/// The scenarios the filter selects: at least one, else an error naming a
/// broken scenario the suite asked for, or the ones there are.
fn selected_scenarios<'z>(
    suite: &Suite,
    zoo: &'z Zoo,
    scenario_filter: &NameFilter,
) -> anyhow::Result<Vec<&'z Scenario>> {
    let scenarios: Vec<&Scenario> = zoo
        .scenarios
        .iter()
        .filter(|s| scenario_filter.matches(&s.name))
        .collect();
    if scenarios.is_empty() {
        if let Some(e) = suite.scenarios.iter().find_map(|n| zoo.scenario_error(n)) {
            anyhow::bail!(crate::usage_error::usage(format!(
                "scenarios: {:?} names a broken scenario: {e}",
                suite.scenarios.join(",")
            )));
        }
        let known: Vec<&str> = zoo.scenarios.iter().map(|s| s.name.as_str()).collect();
        anyhow::bail!(crate::usage_error::usage(format!(
            "scenarios: {:?} matches no scenario (scenarios here: {})",
            suite.scenarios.join(","),
            known.join(", ")
        )));
    }
    Ok(scenarios)
}

/// The suite's core counts on `cpus` CPUs, each once, as (cores, as
/// requested); a skip for each count beyond the CPUs.
fn core_counts(
    requested: &[CoreCount],
    cpus: usize,
    skips: &mut Vec<Skip>,
) -> Vec<(usize, CoreCount)> {
    let mut cores = Vec::new();
    for c in requested {
        let n = match c {
            CoreCount::All => cpus,
            CoreCount::N(n) => *n,
        };
        if n > cpus {
            skips.push(Skip {
                what: format!("cores = {n}"),
                reason: format!("this machine lets fairbench use {cpus} CPUs"),
            });
        } else if !cores.iter().any(|(m, _)| *m == n) {
            cores.push((n, *c));
        }
    }
    cores
}

/// What of server `s` does not run, and why.
fn gap_skip(s: &Server, gap: &Gap) -> Skip {
    let what = match gap {
        Gap::Toolchain { .. } | Gap::NoResponse { .. } | Gap::Socket { .. } => s.name.clone(),
        Gap::Scenario { scenario, .. } => format!("{} {scenario}", s.name),
        Gap::Protocol { protocol, .. } => format!("{} {protocol}", s.name),
        Gap::Mode { mode, .. } => format!("{} mode {mode}", s.name),
    };
    Skip {
        what,
        reason: gap.reason(),
    }
}

/// The sizes of the matrix's dimensions the zoo and the machine decide;
/// the suite gives the others.
struct Dimensions {
    variants: usize,
    responses: usize,
    scenarios: usize,
    cores: usize,
}

impl Dimensions {
    /// An error when the matrix would hold more than
    /// [`bounds::MAX_PLAN_ITEMS`] cases.
    fn check(&self, suite: &Suite) -> anyhow::Result<()> {
        let size = [
            self.variants,
            suite.protocols.len(),
            self.responses,
            self.scenarios,
            self.cores,
            suite.loads.len(),
            suite.repetitions,
        ]
        .into_iter()
        .try_fold(1usize, usize::checked_mul)
        .filter(|&n| n <= bounds::MAX_PLAN_ITEMS);
        if size.is_none() {
            return Err(crate::usage_error::usage(format!(
                "the suite's matrix ({} server variants x {} protocols x {} responses x {} scenarios x {} core counts x {} loads x {} repetitions) is more than {} cases: select fewer (--servers, --scenarios, --repetitions)",
                self.variants,
                suite.protocols.len(),
                self.responses,
                self.scenarios,
                self.cores,
                suite.loads.len(),
                suite.repetitions,
                bounds::MAX_PLAN_ITEMS
            )));
        }
        Ok(())
    }
}

/// The plan, repetition by repetition: every runnable variant, protocol,
/// response, scenario, core count and load.
fn items(
    suite: &Suite,
    step: Option<&Step>,
    runnable: &[Variant],
    cores: &[(usize, CoreCount)],
) -> Vec<PlanItem> {
    let mut items = Vec::new();
    for rep in 1..=suite.repetitions {
        for ((server, mode, run), &protocol) in runnable
            .iter()
            .flat_map(|smr| smr.2.protocols.iter().map(move |p| (smr, p)))
        {
            for &response in &run.responses {
                for scenario in &run.scenarios {
                    for &(n, requested) in cores {
                        for load in &suite.loads {
                            let subject = Subject {
                                server: (*server).clone(),
                                mode: mode.clone(),
                                response,
                                scenario: (*scenario).clone(),
                                cores: n,
                                cores_requested: requested,
                                workers: suite.workers,
                                load: load.clone(),
                                warmup: suite.warmup,
                                timeout: suite.timeout,
                                timeout_mode: suite.timeout_mode,
                                protocol,
                                step: step.map(|s| s.name.clone()),
                                address_family: suite.address_family,
                            };
                            items.extend(item(suite, rep, subject));
                        }
                    }
                }
            }
        }
    }
    items
}

/// What measures `subject` in repetition `rep`: a case, or a sweep (in the
/// first repetition only).
fn item(suite: &Suite, rep: usize, subject: Subject) -> Option<PlanItem> {
    match &subject.load {
        LoadProfile::Sweep(spec) => {
            // A sweep finds one knee; repeating it is a new suite.
            if rep > 1 {
                return None;
            }
            let spec = spec.clone();
            let key = format!(
                "{}/{}/{}/{}{}/{}c/{}",
                subject.server.name,
                subject.mode,
                subject.response,
                subject.scenario.name,
                protocol_suffix(subject.protocol).replace(' ', "/"),
                subject.cores,
                subject.load.label()
            );
            Some(PlanItem::Sweep(Box::new(SweepItem { spec, key, subject })))
        }
        _ => Some(PlanItem::Case(Box::new(CaseSpec {
            subject,
            repetition: rep,
            duration: suite.duration,
        }))),
    }
}

/// Reorders a plan built repetition by repetition (`plan` makes it so):
/// each repetition's cases in the order [`case_order`] gives. Sweeps, which
/// run once, follow the first repetition's cases.
fn interleave(items: Vec<PlanItem>, seed: u64) -> Vec<PlanItem> {
    let mut reps: Vec<(usize, Vec<PlanItem>, Vec<PlanItem>)> = Vec::new();
    for item in items {
        let rep = match &item {
            PlanItem::Case(c) => c.repetition,
            PlanItem::Sweep(_) => 1,
        };
        if reps.last().is_none_or(|(r, _, _)| *r != rep) {
            reps.push((rep, Vec::new(), Vec::new()));
        }
        let (_, cases, sweeps) = reps.last_mut().expect("pushed above");
        match item {
            PlanItem::Case(_) => cases.push(item),
            PlanItem::Sweep(_) => sweeps.push(item),
        }
    }
    let mut out = Vec::new();
    for (rep, cases, sweeps) in reps {
        let mut slots: Vec<Option<PlanItem>> = cases.into_iter().map(Some).collect();
        for i in case_order(slots.len(), rep, seed) {
            out.extend(slots[i].take());
        }
        out.extend(sweeps);
    }
    out
}
