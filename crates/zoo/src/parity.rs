//! The parity check of one running server for one scenario: fetch over IPv4
//! and IPv6, grade the contract, and produce the comparison row. The server
//! is started by the caller, so a benchmark runner can check the very
//! process it is about to load.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use serde::Serialize;

use crate::contract::{self, GradeContext};
use crate::database::content;
use crate::dial::{self, Dial};
use crate::fetch::{self, FetchError, RawResponse};
use crate::fetch_h2::{self, Trust};
use crate::fetch_h3;
use crate::manifest::{Deviation, ResponseKind};
use crate::row::ComparisonRow;
use crate::rule::{worst, Grade, Rule, RuleResult};
use crate::scenario::{DbContent, Scenario};
use crate::Protocol;
use fairbench_sys::process::loopback;

/// Which case a report is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaseId {
    pub server: String,
    pub mode: String,
    pub response: ResponseKind,
    pub scenario: String,
    pub protocol: Protocol,
}

#[derive(Debug, Clone)]
pub struct InspectOptions {
    /// For each fetch.
    pub fetch_timeout: Duration,
    /// The tables the database scenarios' answers are graded against.
    pub database: Option<crate::database::Oracle>,
    /// For h2 over TLS and h3: the run CA.
    pub trust: Option<Trust>,
}

impl Default for InspectOptions {
    fn default() -> Self {
        InspectOptions {
            fetch_timeout: Duration::from_secs(5),
            database: None,
            trust: None,
        }
    }
}

/// One request for the scenario over `protocol`: the request as sent (for
/// HTTP/2 and HTTP/3, its pseudo-header fields as text) and the answer.
pub fn fetch_over(
    protocol: Protocol,
    addr: &Dial,
    scenario: &Scenario,
    opts: &InspectOptions,
) -> (Vec<u8>, Result<RawResponse, FetchError>) {
    fetch_to(
        protocol,
        addr,
        (&scenario.method, &scenario.check_path(), &scenario.headers),
        opts,
    )
}

/// One request `method path`, with the scenario's own headers, over
/// `protocol`.
pub fn fetch_to(
    protocol: Protocol,
    addr: &Dial,
    (method, path, headers): fetch_h2::Ask,
    opts: &InspectOptions,
) -> (Vec<u8>, Result<RawResponse, FetchError>) {
    if protocol == Protocol::H3 {
        let req = fetch_h2::request_text(protocol, (method, path, headers), addr.authority());
        let res = fetch_h3::fetch(
            addr,
            (method, path, headers),
            opts.trust.as_ref(),
            opts.fetch_timeout,
        );
        (req, res)
    } else if protocol.is_h2() {
        let req = fetch_h2::request_text(protocol, (method, path, headers), addr.authority());
        let res = fetch_h2::fetch(
            protocol,
            addr.clone(),
            (method, path, headers),
            opts.trust.as_ref(),
            opts.fetch_timeout,
        );
        (req, res)
    } else {
        let req = fetch::request_bytes(method, path, addr.authority(), headers);
        let res = dial::raw(addr, &req, opts.fetch_timeout);
        (req, res)
    }
}

/// The request and the response bytes exactly as exchanged, for `--raw`.
#[derive(Debug, Clone, Serialize)]
pub struct RawExchange {
    pub addr: String,
    #[serde(serialize_with = "lossy")]
    pub request: Vec<u8>,
    /// Interim (1xx) responses received before the final one.
    #[serde(serialize_with = "lossy", skip_serializing_if = "Vec::is_empty")]
    pub interim: Vec<u8>,
    /// Everything received, also when the response was incomplete.
    #[serde(serialize_with = "lossy")]
    pub response: Vec<u8>,
    pub error: Option<String>,
}

fn lossy<S: serde::Serializer>(v: &[u8], s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&String::from_utf8_lossy(v))
}

/// The outcome of one server variant on one scenario.
#[derive(Debug, Clone, Serialize)]
pub struct CaseReport {
    pub server: String,
    pub mode: String,
    #[serde(rename = "response")]
    pub response_kind: ResponseKind,
    pub variant: String,
    pub scenario: String,
    pub protocol: Protocol,
    /// The worst grade of `rules`.
    pub grade: Grade,
    pub rules: Vec<RuleResult>,
    /// Absent when there was no response to measure.
    pub row: Option<ComparisonRow>,
    pub log_path: Option<PathBuf>,
    /// The server's last log lines when it failed to start or answer.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub log_tail: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub raw: Option<RawExchange>,
    /// The graded response (not serialized: `row` and `raw` carry it).
    #[serde(skip)]
    pub response: Option<RawResponse>,
    #[serde(skip)]
    pub deviations: Vec<Deviation>,
    /// Its body holds values read from the database, which differ from
    /// server to server: only its headers are compared byte for byte.
    #[serde(skip)]
    pub body_varies: bool,
}

impl CaseReport {
    /// A case that produced no response: build, start or readiness failed.
    pub fn failed(id: &CaseId, deviations: &[Deviation], rule: Rule, detail: String) -> Self {
        let rules = vec![RuleResult::new(rule, Grade::Fail, detail)];
        CaseReport {
            server: id.server.clone(),
            mode: id.mode.clone(),
            response_kind: id.response,
            variant: format!("{}/{}", id.mode, id.response),
            scenario: id.scenario.clone(),
            protocol: id.protocol,
            grade: Grade::Fail,
            rules,
            row: None,
            log_path: None,
            log_tail: Vec::new(),
            raw: None,
            response: None,
            deviations: deviations.to_vec(),
            body_varies: false,
        }
    }

    pub fn rule(&self, rule: Rule) -> Option<&RuleResult> {
        self.rules.iter().find(|r| r.rule == rule)
    }
}

/// Checks the server listening on `port` (any address) against `scenario`:
/// over IPv4 and IPv6, each graded for reachability.
pub fn inspect(
    port: u16,
    scenario: &Scenario,
    id: &CaseId,
    deviations: &[Deviation],
    opts: &InspectOptions,
) -> CaseReport {
    let [v4, v6] = loopback(port);
    inspect_at(
        &[Dial::Tcp(v4), Dial::Tcp(v6)],
        scenario,
        id,
        deviations,
        opts,
    )
}

/// Checks the server listening on the unix socket `path` against
/// `scenario`: the same contract, without the IPv4 and IPv6 rules (it has
/// no address; its row says neither).
pub fn inspect_unix(
    path: &Path,
    scenario: &Scenario,
    id: &CaseId,
    deviations: &[Deviation],
    opts: &InspectOptions,
) -> CaseReport {
    let at = [Dial::Unix(path.to_path_buf())];
    inspect_at(&at, scenario, id, deviations, opts)
}

/// One fetch: the request as sent, the answer, and when it came.
type Fetched = (
    Vec<u8>,
    Result<RawResponse, FetchError>,
    SystemTime,
    Instant,
);

/// Fetches at each of `dials` and grades the first answer; two TCP dials
/// are IPv4 then IPv6, each graded for reachability.
fn inspect_at(
    dials: &[Dial],
    scenario: &Scenario,
    id: &CaseId,
    deviations: &[Deviation],
    opts: &InspectOptions,
) -> CaseReport {
    let fetched: Vec<Fetched> = dials
        .iter()
        .map(|d| {
            let (req, res) = fetch_over(id.protocol, d, scenario, opts);
            (req, res, SystemTime::now(), Instant::now())
        })
        .collect();

    let mut report = CaseReport::failed(id, deviations, Rule::Fetch, String::new());
    report.rules.clear();
    // A compressed body's size is its compressor's: compared headers only.
    report.body_varies = scenario.needs_database() || scenario.expect.content_encoding.is_some();

    // Grade the first answer (IPv4's, else IPv6's).
    let primary = dials
        .iter()
        .zip(&fetched)
        .find_map(|(d, (req, r, at, inst))| r.as_ref().ok().map(|r| (d, req, r, *at, *inst)));
    let ctx_at = |now| GradeContext {
        response: id.response,
        deviations,
        now,
    };
    let ctx = ctx_at(SystemTime::now());

    match primary {
        None => {
            let (req, r, ..) = &fetched[0];
            let e = r.as_ref().err().map(|e| e.to_string()).unwrap_or_default();
            report.rules.push(RuleResult::new(
                Rule::Fetch,
                Grade::Fail,
                format!("{}: {e}", dials[0]),
            ));
            report.raw = Some(exchange(&dials[0], req, r));
        }
        Some((addr, req, resp, at, inst)) => {
            report.rules = contract::grade(scenario, resp, &ctx_at(at));
            let again = Followup {
                addr,
                scenario,
                protocol: id.protocol,
                opts,
                ctx: &ctx,
            };
            if let Some(after) = scenario.expect.body_changes_after {
                report.rules.push(again.changes(resp, inst, after));
            }
            if let Some(kind) = scenario.expect.database {
                report.rules.extend(again.database(kind));
            }
            report.raw = Some(RawExchange {
                addr: addr.to_string(),
                request: req.clone(),
                interim: resp.interim.clone(),
                response: shown_bytes(resp),
                error: None,
            });
            report.response = Some(resp.clone());
        }
    }
    let mut reached = [false, false];
    if let [Dial::Tcp(v4), Dial::Tcp(v6)] = dials {
        let (r4, r6) = (&fetched[0].1, &fetched[1].1);
        report
            .rules
            .push(contract::grade_reachability(Rule::Ipv4, *v4, r4, &ctx));
        report
            .rules
            .push(contract::grade_reachability(Rule::Ipv6, *v6, r6, &ctx));
        reached = [r4.is_ok(), r6.is_ok()];
    }

    report.grade = worst(&report.rules);
    if let Some(resp) = &report.response {
        report.row = Some(ComparisonRow::new(
            (&id.server, &id.mode, id.response, &id.scenario),
            resp,
            &report.rules,
            reached[0],
            reached[1],
        ));
    }
    report
}

/// The requests after the graded one, to the address that answered it.
struct Followup<'a> {
    addr: &'a Dial,
    scenario: &'a Scenario,
    protocol: Protocol,
    opts: &'a InspectOptions,
    ctx: &'a GradeContext<'a>,
}

impl Followup<'_> {
    /// A second request `after` the first answer (received at `first_at`):
    /// does the body change as the scenario expects?
    fn changes(&self, first: &RawResponse, first_at: Instant, after: Duration) -> RuleResult {
        let wait = after.saturating_sub(first_at.elapsed());
        std::thread::sleep(wait);
        match fetch_over(self.protocol, self.addr, self.scenario, self.opts).1 {
            Ok(second) => contract::grade_changes(first, &second, after, self.ctx),
            Err(e) => contract::apply_deviation(
                RuleResult::new(
                    Rule::DynamicChanges,
                    Grade::Fail,
                    format!("second request failed: {e}"),
                ),
                self.ctx,
            ),
        }
    }

    /// The database scenario's answers graded against the oracle's tables.
    fn database(&self, kind: DbContent) -> Vec<RuleResult> {
        let (scenario, addr, opts) = (self.scenario, self.addr, self.opts);
        let mut get = |p: &str| {
            let req =
                fetch::request_bytes(&scenario.method, p, addr.authority(), &scenario.headers);
            dial::raw(addr, &req, opts.fetch_timeout).map_err(|e| e.to_string())
        };
        let results = match &opts.database {
            Some(oracle) => content::grade(kind, scenario, &mut get, oracle),
            None => vec![RuleResult::new(
                Rule::DbRow,
                Grade::Fail,
                "no database to grade the answers against",
            )],
        };
        results
            .into_iter()
            .map(|r| contract::apply_deviation(r, self.ctx))
            .collect()
    }
}

fn exchange(addr: &Dial, req: &[u8], r: &Result<RawResponse, FetchError>) -> RawExchange {
    match r {
        Ok(resp) => RawExchange {
            addr: addr.to_string(),
            request: req.to_vec(),
            interim: resp.interim.clone(),
            response: shown_bytes(resp),
            error: None,
        },
        Err(e) => RawExchange {
            addr: addr.to_string(),
            request: req.to_vec(),
            interim: Vec::new(),
            response: e.partial().to_vec(),
            error: Some(e.to_string()),
        },
    }
}

/// The response as `--raw` shows it: HTTP/1.1's bytes as they came; for
/// HTTP/2 and HTTP/3 the decoded fields and body (their frames are binary).
fn shown_bytes(r: &RawResponse) -> Vec<u8> {
    if r.protocol.is_framed() {
        fetch_h2::response_text(r)
    } else {
        r.bytes.clone()
    }
}
