//! One check case: the server started for one scenario in its place,
//! its answer graded, and the server stopped, whatever happened.

use std::path::PathBuf;

use fairbench_zoo::parity::{CaseId, CaseReport};
use fairbench_zoo::rule::{Grade, Rule};
use fairbench_zoo::{Protocol, ResponseKind, Scenario, Server};

use super::selection::Selection;
use crate::host::start::StartError;
use crate::stage::{Act, Stage, Unready};

/// Lines of a server's log a failed check shows.
const CHECK_LOG_TAIL: usize = 15;

pub(super) fn case_id(
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

/// Starts the server for one scenario through the stage, checks it, and
/// stops it: whatever happens, the process group is gone when this
/// returns. `None` when Ctrl-C came while it was being made ready.
pub(super) fn check_case(
    stage: &mut Stage,
    server: &Server,
    id: &CaseId,
    sc: &Scenario,
    plan: &Selection,
) -> Option<CaseReport> {
    let deviations = &server.response(id.response).deviations_for(&sc.name);
    let over = match id.protocol {
        Protocol::Http1 => String::new(),
        p => format!("-{p}"),
    };
    let act = Act {
        server,
        mode: &id.mode,
        response: id.response,
        scenario: sc,
        protocol: id.protocol,
        cores: plan.cores,
        workers: None,
        server_cpus: plan.cpus.clone(),
        log_name: format!(
            "{}-{}-{}-{}{over}.log",
            id.server, id.mode, id.response, id.scenario
        ),
        address_family: plan.address_family,
    };
    let staged = match stage.serve(&act, &mut |m| crate::note!("{m}")) {
        Ok(s) => s,
        Err(Unready::Interrupted) => return None,
        Err(Unready::Start { error, log_path }) => {
            return Some(not_started(id, deviations, error, log_path))
        }
        Err(u @ Unready::Build(_)) => {
            return Some(CaseReport::failed(id, deviations, Rule::Build, u.reason()))
        }
        Err(u @ (Unready::Setup(_) | Unready::Refused(_))) => {
            return Some(CaseReport::failed(id, deviations, Rule::Start, u.reason()))
        }
    };
    let mut report = staged.started.parity;
    let proc = staged.started.process;
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
    report.log_path = Some(staged.log_path);
    Some(report)
}

/// The case of a server that would not start or become ready, with the
/// end of its log.
fn not_started(
    id: &CaseId,
    deviations: &[fairbench_zoo::manifest::Deviation],
    e: StartError,
    log_path: PathBuf,
) -> CaseReport {
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
    c
}
