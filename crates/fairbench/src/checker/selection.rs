//! What `check` was asked to check, validated against the zoo: servers,
//! scenarios, responses, protocols, mode, CPUs and cores. Every mistake is
//! one usage line naming its flag.

use fairbench_zoo::reference::REFERENCE_SERVER;
use fairbench_zoo::{Protocol, ResponseKind, Scenario, Server, Zoo};

use crate::args::VariantSel;
use crate::suite::AddressFamily;
use crate::usage_error::usage;

/// The flags of `check` that choose what is checked, as given.
pub struct Request<'a> {
    /// `--servers`: glob patterns, comma-separated.
    pub servers: &'a str,
    /// `--scenarios` (None: all).
    pub scenarios: Option<&'a str>,
    pub variant: Option<VariantSel>,
    /// `--protocols`, comma-separated.
    pub protocols: &'a str,
    pub mode: Option<&'a str>,
    pub cpus: Option<Vec<usize>>,
    pub cores: Option<usize>,
    pub reference: &'a str,
    /// The servers run on another host (ssh), whose CPUs are what count.
    pub servers_elsewhere: bool,
    /// `--address-family`: how the check reaches each server.
    pub address_family: AddressFamily,
}

/// What the arguments select, validated.
pub struct Selection<'z> {
    pub servers: Vec<&'z Server>,
    /// Selected folders whose manifest is invalid.
    pub invalid: Vec<String>,
    pub scenarios: Vec<&'z Scenario>,
    pub responses: Vec<ResponseKind>,
    pub protocols: Vec<Protocol>,
    pub mode: Option<String>,
    pub cpus: Option<Vec<usize>>,
    pub cores: usize,
    pub address_family: AddressFamily,
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

/// Validates what `check` was asked for against the zoo: every mistake is
/// one usage line naming the flag.
pub fn select<'z>(zoo: &'z Zoo, args: &Request) -> anyhow::Result<Selection<'z>> {
    let (servers, invalid) = servers(zoo, args.servers)?;
    let scenarios = scenarios(zoo, args.scenarios)?;
    let variant = args.variant.clone().unwrap_or_default();
    let responses = match variant.response {
        None => ResponseKind::STANDARD.to_vec(),
        Some(r) => vec![r],
    };
    let mode = mode(&variant, args.mode, &servers)?;
    check_reference(zoo, args.reference)?;
    let protocols = protocols(args.protocols, &servers)?;
    let cpus = args.cpus.clone();
    let cores = cores(args.cores, cpus.as_deref(), args.servers_elsewhere)?;
    Ok(Selection {
        servers,
        invalid,
        scenarios,
        responses,
        protocols,
        mode,
        cpus,
        cores,
        address_family: args.address_family,
    })
}

/// `--servers`: the valid servers it matches and the folders it matches
/// whose manifest is invalid; at least one of either.
fn servers<'z>(zoo: &'z Zoo, patterns: &str) -> anyhow::Result<(Vec<&'z Server>, Vec<String>)> {
    let filter =
        fairbench_zoo::NameFilter::parse(patterns).map_err(|e| usage(format!("--servers: {e}")))?;
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
            patterns,
            if names.is_empty() {
                "none".to_string()
            } else {
                names.join(", ")
            }
        )));
    }
    Ok((servers, invalid))
}

/// `--scenarios`: each name a scenario of the zoo (None: all of them), and
/// at least one.
fn scenarios<'z>(zoo: &'z Zoo, list: Option<&str>) -> anyhow::Result<Vec<&'z Scenario>> {
    let scenarios: Vec<&Scenario> = match list {
        None => zoo.scenarios.iter().collect(),
        Some(list) => {
            let mut out = Vec::new();
            for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
                out.push(scenario(zoo, name)?);
            }
            out
        }
    };
    if scenarios.is_empty() {
        return Err(usage("no scenario to check"));
    }
    Ok(scenarios)
}

/// One name of `--scenarios`: the scenario, or why there is none.
fn scenario<'z>(zoo: &'z Zoo, name: &str) -> anyhow::Result<&'z Scenario> {
    match zoo.scenario(name) {
        Some(s) => Ok(s),
        None if zoo.scenario_error(name).is_some() => {
            let e = zoo.scenario_error(name).map(|e| e.to_string());
            Err(usage(format!(
                "--scenarios: scenario {name} is broken: {}",
                e.unwrap_or_default()
            )))
        }
        None => {
            let known: Vec<&str> = zoo.scenarios.iter().map(|s| s.name.as_str()).collect();
            Err(usage(format!(
                "--scenarios: no scenario named {name}; there are: {}",
                known.join(", ")
            )))
        }
    }
}

/// The mode `--variant` or `--mode` names (they must agree), which some
/// selected server must have.
fn mode(
    variant: &VariantSel,
    flag: Option<&str>,
    servers: &[&Server],
) -> anyhow::Result<Option<String>> {
    let mode = match (&variant.mode, &flag.map(str::to_string)) {
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
    Ok(mode)
}

/// `--reference`: the default, or a server of the zoo (valid or not).
fn check_reference(zoo: &Zoo, reference: &str) -> anyhow::Result<()> {
    // A typo here would silently drop the reference-bytes rule (a zoo
    // without the default reference has nothing to compare with).
    if reference != REFERENCE_SERVER
        && !zoo.servers.iter().any(|s| s.name == reference)
        && !zoo.invalid_server_names().iter().any(|n| n == reference)
    {
        let names: Vec<&str> = zoo.servers.iter().map(|s| s.name.as_str()).collect();
        return Err(usage(format!(
            "--reference {}: no server has that name; there are: {}",
            reference,
            names.join(", ")
        )));
    }
    Ok(())
}

/// `--cores`, else as many as `--cpus` names, else 1.
fn cores(cores: Option<usize>, cpus: Option<&[usize]>, elsewhere: bool) -> anyhow::Result<usize> {
    let cores = match (cores, cpus) {
        (Some(n), _) => n,
        (None, Some(c)) => c.len(),
        (None, None) => 1,
    };
    // CORES beyond the CPUs would size the server's threads for a machine
    // it does not have; on an ssh host its own CPUs are what count.
    let here = crate::host::allowed_cpus().len();
    if !elsewhere && cores > here {
        return Err(usage(format!(
            "--cores {cores}: this machine lets fairbench use {here} CPUs"
        )));
    }
    Ok(cores)
}
