//! One check case: the server started for one scenario in its place,
//! its answer graded, and the server stopped, whatever happened.

use std::time::Duration;

use fairbench_zoo::parity::{CaseId, CaseReport, InspectOptions};
use fairbench_zoo::pki::RunPki;
use fairbench_zoo::rule::{Grade, Rule};
use fairbench_zoo::{Protocol, ResponseKind, Scenario, Server};

use super::selection::Selection;
use crate::host::start::{start, StartError, StartSpec};
use crate::host::Host;

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

/// Starts the server for one scenario, checks it, and stops it: whatever
/// happens, the process group is gone when this returns.
#[allow(clippy::too_many_arguments)]
pub(super) fn check_case(
    host: &Host,
    server: &Server,
    id: &CaseId,
    sc: &Scenario,
    plan: &Selection,
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
