//! `fairbench check`: build and start servers, fetch each scenario's raw
//! response, grade it against the scenario contract and compare servers
//! byte for byte (the work is `checker/`'s). Exits 1 when a `normalized`
//! variant fails its contract or a server cannot be built or started.

use std::path::PathBuf;
use std::time::Duration;

use fairbench_zoo::parity::CaseReport;
use fairbench_zoo::reference::REFERENCE_SERVER;
use serde::Serialize;

use crate::args::{load_zoo, positive_duration, resolve_root, CpuList};
use crate::checker::{self, CheckOptions, Request, Skipped};
use crate::output::check_report;
use crate::topology::{CheckPlaceArgs, Layout};

// Its doc comments are --help text, written for the terminal, not rustdoc.
#[allow(rustdoc::broken_intra_doc_links, rustdoc::invalid_html_tags)]
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
    /// How the check reaches each server: `ipv4` or `ipv6` (TCP on PORT;
    /// both loopback addresses are checked either way), or `unix`: each
    /// server listens on a unix domain socket (UNIX_SOCKET) in the work
    /// folder, asked over HTTP/1.1 or h2c; a server whose server.toml does
    /// not list `unix` in its `sockets` is skipped with its reason. As a
    /// suite's `address_family`.
    #[arg(long, value_name = "FAMILY", default_value = "ipv4", value_parser = crate::suite::AddressFamily::parse)]
    pub address_family: crate::suite::AddressFamily,
    /// Compile/run mode (e.g. `native`, `jit`, `exe`; default: every mode).
    #[arg(long, value_name = "M")]
    pub mode: Option<String>,
    /// Pin each server to these CPUs, e.g. `0` or `0-1,3` (default: the
    /// highest-numbered CORES CPUs, as `run` places a server).
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

pub fn run(args: CheckArgs) -> anyhow::Result<i32> {
    let root = resolve_root(args.root.as_deref())?;
    let zoo = load_zoo(&root)?;
    let plan = checker::select(
        &zoo,
        &Request {
            servers: &args.servers,
            scenarios: args.scenarios.as_deref(),
            variant: args.variant.clone(),
            protocols: &args.protocols,
            mode: args.mode.as_deref(),
            cpus: args.cpus.clone().map(|c| c.0),
            cores: args.cores,
            reference: &args.reference,
            servers_elsewhere: args.place.server_host.is_some(),
            address_family: args.address_family,
        },
    )?;
    // Where the servers run: here, in a namespace, or on an ssh host.
    let layout = Layout::for_check(&args.place)?;
    if args.address_family == crate::suite::AddressFamily::Unix
        && !matches!(layout.server, crate::host::Host::Local)
    {
        return Err(crate::usage_error::usage(
            "--address-family unix: a unix socket is reached on this machine only (no --server-host or --topology netns)",
        ));
    }
    for n in &layout.notes {
        crate::note!("{n}");
    }
    let opts = CheckOptions {
        ready_timeout: args.ready_timeout,
        fetch_timeout: args.fetch_timeout,
        stop_grace: args.stop_grace,
        build_timeout: args.build_timeout,
        rebuild: args.rebuild,
        work_dir: args
            .work_dir
            .clone()
            .unwrap_or_else(|| zoo.default_work_dir()),
        reference: args.reference.clone(),
        all_scenarios: args.scenarios.is_none(),
    };
    let mut checked = checker::check(&zoo, &plan, layout, &opts)?;
    if !args.raw {
        // The exchange is bulky (a whole file body); shown only when asked.
        for c in &mut checked.cases {
            c.raw = None;
        }
    }
    if crate::args::wants_json(args.format, args.json) {
        let report = CheckJson {
            root: &zoo.root,
            reference: &args.reference,
            ok: checked.ok,
            interrupted: checked.interrupted,
            skipped: &checked.skipped,
            cases: &checked.cases,
            errors: zoo.errors.iter().collect(),
        };
        println!(
            "{}",
            crate::report::json_doc::render(crate::report::json_doc::Doc::Check, &report)?
        );
    } else {
        // Printed at the end: the reference comparison needs every case.
        for c in &checked.cases {
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
                &checked.cases,
                &args.reference,
                checked.skipped.len()
            ))
        );
    }
    if checked.interrupted {
        crate::note!("fairbench: interrupted; every started server was stopped");
        return Ok(130);
    }
    Ok(if checked.ok { 0 } else { 1 })
}
