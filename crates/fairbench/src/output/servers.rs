//! What `fairbench servers` shows: each server definition, its variants,
//! protocols, toolchain and the scenarios it does not implement, as a table
//! with its notes or as JSON (docs/cli-json.md).

use std::path::Path;

use fairbench_zoo::toolchain::{Prober, ToolchainStatus};
use fairbench_zoo::{DefinitionError, Server, Zoo};
use serde::Serialize;

use crate::output::check_table::Table;

#[derive(Serialize)]
pub struct Listing<'a> {
    root: &'a Path,
    servers: Vec<ServerEntry<'a>>,
    errors: &'a [DefinitionError],
}

impl<'a> Listing<'a> {
    /// Every server of `zoo`, its toolchain probed here.
    pub fn new(zoo: &'a Zoo, prober: &mut Prober) -> Self {
        Listing {
            root: &zoo.root,
            servers: zoo
                .servers
                .iter()
                .map(|s| entry(s, prober.probe(&s.toolchain)))
                .collect(),
            errors: &zoo.errors,
        }
    }

    /// The table, the protocol and install notes, and what is not listed.
    pub fn text(&self, zoo: &Zoo) -> String {
        let mut out = String::new();
        if !zoo.servers.is_empty() {
            out.push_str(&table(&self.servers).render());
        }
        out.push_str(&protocol_lines(&self.servers));
        out.push_str(&scenario_lines(&self.servers));
        out.push_str(&install_lines(&self.servers));
        out.push_str(&not_listed(zoo));
        if zoo.servers.is_empty() && zoo.invalid_server_names().is_empty() {
            out.push_str(&format!(
                "(no servers under {}: a server is a folder there with a server.toml, see docs/server-manifest.md)\n",
                zoo.root.join("servers").display()
            ));
        }
        out
    }
}

#[derive(Serialize)]
pub struct ServerEntry<'a> {
    name: &'a str,
    language: &'a str,
    framework: &'a str,
    framework_version: &'a str,
    description: Option<&'a str>,
    dir: &'a Path,
    toolchain: ToolchainEntry<'a>,
    variants: Vec<VariantEntry>,
    /// The protocols it serves, and why not the others.
    protocols: Vec<fairbench_zoo::Protocol>,
    protocols_unsupported: Vec<ProtocolGap>,
    /// The scenarios it does not implement, with its manifest's reason
    /// (`[scenarios_unsupported]`): `check` and the suites skip them so.
    scenarios_unsupported: Vec<ScenarioGap<'a>>,
}

#[derive(Serialize)]
struct ScenarioGap<'a> {
    scenario: &'a str,
    reason: &'a str,
}

#[derive(Serialize)]
struct ProtocolGap {
    protocol: fairbench_zoo::Protocol,
    reason: String,
    /// The manifest says why (`[protocols_unsupported]`), rather than
    /// only leaving it out.
    declared: bool,
}

#[derive(Serialize)]
struct ToolchainEntry<'a> {
    name: &'a str,
    probe: &'a [String],
    /// The manifest's install command; never run.
    install: Option<&'a str>,
    #[serde(flatten)]
    status: ToolchainStatus,
}

#[derive(Serialize)]
struct VariantEntry {
    variant: String,
    mode: String,
    response: fairbench_zoo::ResponseKind,
    mode_description: Option<String>,
    /// Why the mode cannot run, when it cannot.
    unsupported: Option<String>,
    known_deviations: Vec<fairbench_zoo::Deviation>,
    /// Can `fairbench check` run it here?
    runnable: bool,
}

fn entry<'a>(s: &'a Server, status: ToolchainStatus) -> ServerEntry<'a> {
    let variants = s
        .variants()
        .into_iter()
        .map(|v| {
            let mode = &s.modes[&v.mode];
            VariantEntry {
                variant: v.to_string(),
                mode: v.mode.clone(),
                response: v.response,
                mode_description: mode.description.clone(),
                unsupported: mode.unsupported.clone(),
                known_deviations: s.response(v.response).known_deviations.clone(),
                runnable: fairbench_zoo::runnable::mode_runs(s, &v.mode, &status),
            }
        })
        .collect();
    ServerEntry {
        name: &s.name,
        language: &s.language,
        framework: &s.framework,
        framework_version: &s.framework_version,
        description: s.description.as_deref(),
        dir: &s.dir,
        toolchain: ToolchainEntry {
            name: &s.toolchain.name,
            probe: &s.toolchain.probe,
            install: s.toolchain.install.as_deref(),
            status,
        },
        variants,
        protocols: s.protocols.clone(),
        protocols_unsupported: fairbench_zoo::Protocol::ALL
            .into_iter()
            .filter(|p| !s.serves(*p))
            .map(|p| ProtocolGap {
                protocol: p,
                reason: s.why_not(p),
                declared: s.protocols_unsupported.contains_key(&p),
            })
            .collect(),
        scenarios_unsupported: s
            .scenarios_unsupported
            .iter()
            .map(|(scenario, reason)| ScenarioGap { scenario, reason })
            .collect(),
    }
}

/// One row per server and mode; the responses of a mode share its build and
/// toolchain, so they share a row.
fn table(entries: &[ServerEntry]) -> Table {
    let mut t = Table::new(&[
        "SERVER",
        "MODE",
        "RESPONSES",
        "PROTOCOLS",
        "LANGUAGE",
        "FRAMEWORK",
        "TOOLCHAIN",
        "NOTE",
    ]);
    for e in entries {
        let tc = match &e.toolchain.status {
            ToolchainStatus::Present { version: Some(v) } => {
                format!("present ({} {v})", e.toolchain.name)
            }
            other => other.describe(),
        };
        let mut modes: Vec<&str> = e.variants.iter().map(|v| v.mode.as_str()).collect();
        modes.dedup();
        for mode in modes {
            let vs: Vec<&VariantEntry> = e.variants.iter().filter(|v| v.mode == mode).collect();
            let responses = vs
                .iter()
                .map(|v| match v.known_deviations.len() {
                    0 => v.response.to_string(),
                    n => format!(
                        "{} ({})",
                        v.response,
                        crate::units::counted(n as u64, "known deviation")
                    ),
                })
                .collect::<Vec<_>>()
                .join(", ");
            let note = match &vs[0].unsupported {
                Some(r) => format!("unsupported: {}", first_clause(r)),
                None => String::new(),
            };
            t.row(vec![
                e.name.to_string(),
                mode.to_string(),
                responses,
                e.protocols
                    .iter()
                    .map(|p| p.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                e.language.to_string(),
                format!("{} {}", e.framework, e.framework_version),
                tc.clone(),
                note,
            ]);
        }
    }
    t
}

/// One line per server folder that is not in the table, saying why: its
/// manifest's first error (every error follows on stderr).
fn not_listed(zoo: &fairbench_zoo::Zoo) -> String {
    let mut out = String::new();
    for name in zoo.invalid_server_names() {
        let errors = zoo.errors_for_server(&name);
        let Some(first) = errors.first() else {
            continue;
        };
        out.push_str(&format!(
            "not listed: {name}: {}{}\n",
            fairbench_sys::text::visible(&first.to_string()),
            match errors.len() {
                1 => String::new(),
                n => format!(" (and {} more, below)", n - 1),
            }
        ));
    }
    if !out.is_empty() && !zoo.servers.is_empty() {
        out.insert(0, '\n');
    }
    out
}

/// Why each server does not serve the protocols it does not, where its
/// manifest says: one line per server and reason, in the manifest's words.
fn protocol_lines(entries: &[ServerEntry]) -> String {
    let mut out = String::new();
    for e in entries {
        let mut gaps: Vec<(Vec<&str>, &str)> = Vec::new();
        for g in e.protocols_unsupported.iter().filter(|g| g.declared) {
            match gaps.iter_mut().find(|(_, r)| *r == g.reason) {
                Some((ps, _)) => ps.push(g.protocol.as_str()),
                None => gaps.push((vec![g.protocol.as_str()], &g.reason)),
            }
        }
        for (ps, reason) in gaps {
            out.push_str(&format!(
                "  {} does not serve {}: {}\n",
                e.name,
                ps.join(", "),
                fairbench_sys::text::visible(reason)
            ));
        }
    }
    if out.is_empty() {
        return out;
    }
    format!("\nProtocols not served (docs/server-manifest.md):\n{out}")
}

/// Why each server does not implement a scenario, in its manifest's words:
/// one line per server and scenario, so that a skip in `check` or a suite
/// is no surprise.
fn scenario_lines(entries: &[ServerEntry]) -> String {
    let mut out = String::new();
    for e in entries {
        for g in &e.scenarios_unsupported {
            out.push_str(&format!(
                "  {} does not implement {}: {}\n",
                fairbench_sys::text::visible(e.name),
                fairbench_sys::text::visible(g.scenario),
                fairbench_sys::text::visible(g.reason)
            ));
        }
    }
    if out.is_empty() {
        return out;
    }
    format!("\nScenarios not implemented (docs/server-manifest.md):\n{out}")
}

/// One line per server whose toolchain is missing: the command its manifest
/// names to install it. Printed, never run.
fn install_lines(entries: &[ServerEntry]) -> String {
    let missing: Vec<&ServerEntry> = entries
        .iter()
        .filter(|e| !e.toolchain.status.is_present())
        .collect();
    if missing.is_empty() {
        return String::new();
    }
    let width = missing.iter().map(|e| e.name.len()).max().unwrap_or(0);
    let mut out =
        String::from("\nTo install a missing toolchain (fairbench runs none of these):\n");
    for e in missing {
        let how = match e.toolchain.install {
            Some(cmd) => fairbench_sys::text::visible(cmd),
            None => format!(
                "no install command in {}",
                e.dir.join("server.toml").display()
            ),
        };
        out.push_str(&format!(
            "  {:width$}  {}: {how}\n",
            e.name,
            fairbench_sys::text::visible(e.toolchain.name)
        ));
    }
    out
}

/// A long reason cut for the table; `--json` and `check` give it whole.
fn first_clause(s: &str) -> String {
    const MAX: usize = 70;
    let cut = s.find([',', ';', '.']).unwrap_or(s.len()).min(MAX);
    let mut end = cut;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    if end < s.len() {
        format!("{}…", &s[..end])
    } else {
        s.to_string()
    }
}
