//! `fairbench report [RUN]`: a stored run as a self-contained HTML report
//! (or Markdown, CSV, JSON), and optionally its histograms as HdrHistogram
//! interval logs. Reads only the results database. docs/report.md.

use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::args::{resolve_run, RunSel};
use crate::report::{csv, hdr, html, json, machines, markdown, model, write_atomic};
use crate::store::Store;
use crate::usage_error::usage;
use fairbench_zoo::NameFilter;

pub(super) mod history;
pub(super) mod stop;

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Html,
    Md,
    Csv,
    Json,
}

impl Format {
    fn ext(self) -> &'static str {
        match self {
            Format::Html => "html",
            Format::Md => "md",
            Format::Csv => "csv",
            Format::Json => "json",
        }
    }
}

// Its doc comments are --help text, written for the terminal, not rustdoc.
#[allow(rustdoc::broken_intra_doc_links, rustdoc::invalid_html_tags)]
#[derive(clap::Args, Debug)]
pub struct ReportArgs {
    /// The run to report: its id, or `latest`.
    #[arg(default_value = "latest")]
    pub run: RunSel,
    /// The results database.
    #[arg(long, default_value = "results.db")]
    pub db: PathBuf,
    /// Where to write; `-` for standard output [default: report-<RUN>.html for
    /// HTML, standard output for the other formats]
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// html (charts and tables, one offline file), md, csv (one row per case) or json (everything).
    #[arg(long, value_enum, value_name = "FORMAT", default_value = "html")]
    pub format: Format,
    /// Same as --format json.
    #[arg(long, conflicts_with = "format")]
    pub json: bool,
    /// Also write each finished case's latency histograms into DIR as
    /// HdrHistogram interval logs (.hlog), one file per repetition.
    #[arg(long, value_name = "DIR")]
    pub hdr: Option<PathBuf>,
    /// Ratios relative to this server (or SERVER/MODE/RESPONSE) instead of
    /// the suite's reference [default: the suite's, else go-nethttp]
    #[arg(long, value_name = "SERVER")]
    pub reference: Option<String>,
    /// Only these servers (comma-separated names or globs), in every format
    /// and in --hdr; ratios are still paired with the reference of the whole run.
    #[arg(long, value_name = "LIST")]
    pub servers: Option<String>,
    /// Put another run beside this one, its cases labelled with its machine (the study's 8- and
    /// 40-core servers): RUN of --db, DB (its latest run) or DB:RUN. Repeatable.
    #[arg(long, value_name = "[DB:]RUN")]
    pub with: Vec<String>,
}

/// Where a `--with` run is: a run of the report's database, or of another.
fn parse_with(spec: &str, db: &Path) -> Result<(PathBuf, RunSel), String> {
    if let Ok(sel) = spec.parse::<RunSel>() {
        return Ok((db.to_path_buf(), sel));
    }
    if let Some((file, run)) = spec.rsplit_once(':') {
        if let Ok(sel) = run.parse::<RunSel>() {
            if file.is_empty() {
                return Err("expected DB:RUN, RUN or DB, got an empty database path".into());
            }
            return Ok((PathBuf::from(file), sel));
        }
    }
    if spec.is_empty() {
        return Err("expected DB:RUN, RUN or DB, got nothing".into());
    }
    Ok((PathBuf::from(spec), RunSel::Latest))
}

pub fn run(mut args: ReportArgs) -> anyhow::Result<i32> {
    if args.json {
        args.format = Format::Json;
    }
    let store = Store::open_read_only(&args.db)?;
    let run = resolve_run(&store, args.run)?;
    let only = args
        .servers
        .as_deref()
        .map(|s| NameFilter::parse(s).map_err(|e| usage(format!("--servers: {e}"))))
        .transpose()?;
    let report = model::build_for(&store, &run, args.reference.as_deref(), only.as_ref())
        .with_context(|| format!("cannot read run {} from {}", run.id, args.db.display()))?;
    let report = stop::add(report, &store);
    let report = if args.with.is_empty() {
        history::add(report, &store, &run, args.reference.as_deref(), &args.db)
    } else {
        if args.hdr.is_some() {
            return Err(usage("--hdr: writes the logs of one run; leave out --with (or report each run on its own)"));
        }
        let mut parts = vec![machines::Part {
            report,
            db: args.db.display().to_string(),
            host_json: run.host_json.clone(),
        }];
        let mut seen = vec![(canonical(&args.db), run.id)];
        for spec in &args.with {
            let (db, sel) =
                parse_with(spec, &args.db).map_err(|e| usage(format!("--with {spec:?}: {e}")))?;
            let other =
                Store::open_read_only(&db).map_err(|e| usage(format!("--with {spec:?}: {e}")))?;
            let r = resolve_run(&other, sel).map_err(|e| usage(format!("--with {spec:?}: {e}")))?;
            let key = (canonical(&db), r.id);
            if seen.contains(&key) {
                return Err(usage(format!(
                    "--with {spec:?}: run {} of {} is already in the report",
                    r.id,
                    db.display()
                )));
            }
            seen.push(key);
            let built = model::build_for(&other, &r, args.reference.as_deref(), only.as_ref())
                .with_context(|| format!("cannot read run {} from {}", r.id, db.display()))?;
            parts.push(machines::Part {
                report: built,
                db: db.display().to_string(),
                host_json: r.host_json.clone(),
            });
        }
        machines::side_by_side(parts)
    };
    let text = match args.format {
        Format::Html => html::render(&report),
        Format::Md => markdown::render(&report),
        Format::Csv => csv::render(&report)?,
        Format::Json => json::render(&report)?,
    };
    let out = match (&args.output, args.format) {
        (Some(p), _) => Some(p.clone()),
        (None, Format::Html) => Some(PathBuf::from(format!(
            "report-{}.{}",
            run.id,
            args.format.ext()
        ))),
        (None, _) => None,
    };
    match out.as_deref() {
        Some(p) if p != Path::new("-") => {
            write_atomic(p, text.as_bytes())?;
            eprintln!(
                "fairbench: wrote {} ({} of run {}: {} cases, {} servers)",
                p.display(),
                args.format.ext(),
                run.id,
                report.groups.len(),
                report.servers.len()
            );
        }
        _ => {
            crate::output::pipe::write_stdout(text.as_bytes())
                .context("cannot write to standard output")?;
        }
    }
    if let Some(dir) = &args.hdr {
        let files = hdr::write_all(&store, run.id, dir, only.as_ref())?;
        eprintln!(
            "fairbench: wrote {} interval logs into {}",
            files.len(),
            dir.display()
        );
    }
    Ok(0)
}

/// The same database however it was named.
fn canonical(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}
