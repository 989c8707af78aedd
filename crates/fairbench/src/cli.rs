//! The command line: argument parsing and exit codes, nothing else.

use clap::{Parser, Subcommand};

use crate::commands;
use crate::usage::UsageError;

/// Benchmark HTTP servers fairly: same bytes, pinned cores, honest latency.
#[derive(Parser, Debug)]
#[command(name = "fairbench", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Drive load at one URL (closed loop like wrk, or constant rate like wrk2).
    Load(commands::load::LoadArgs),
    /// List every server definition, its variants, and whether its toolchain is present.
    Servers(commands::servers::ServersArgs),
    /// Build and start servers and check their responses against the scenario contracts.
    Check(commands::check::CheckArgs),
    /// Run a suite: the benchmark matrix, stored case by case in the results database.
    Run(commands::run::RunArgs),
    /// List the runs stored in the results database.
    Runs(commands::runs::RunsArgs),
    /// Print one stored run's summary table.
    Show(commands::show::ShowArgs),
    /// Turn a stored run into a self-contained HTML report (or Markdown, CSV, JSON).
    Report(commands::report::ReportArgs),
    /// Compare two stored runs case by case, with a verdict on each difference.
    Compare(commands::compare::CompareArgs),
    /// fairbench's own helper on other hosts and in network namespaces
    /// (load generator, server supervisor); not for direct use.
    #[command(hide = true)]
    Agent(crate::fleet::agent::AgentArgs),
}

pub fn main() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // clap prints help/version to stdout with exit 0 and errors to stderr with 2.
            let _ = e.print();
            return e.exit_code();
        }
    };
    crate::interrupt::install();
    let result = match cli.command {
        Command::Load(args) => commands::load::run(args),
        Command::Servers(args) => commands::servers::run(args),
        Command::Check(args) => commands::check::run(args),
        Command::Run(args) => commands::run::run(args),
        Command::Runs(args) => commands::runs::run(args),
        Command::Show(args) => commands::show::run(args),
        Command::Report(args) => commands::report::run(args),
        Command::Compare(args) => commands::compare::run(args),
        Command::Agent(args) => crate::fleet::agent::run(args),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            if let Some(u) = e.downcast_ref::<UsageError>() {
                eprintln!("fairbench: {u}");
                2
            } else {
                // `{:#}` prints the context chain on one line: no backtraces for users.
                eprintln!("fairbench: {e:#}");
                1
            }
        }
    }
}
