//! The command line: argument parsing and exit codes, nothing else.

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

use crate::args::migrant;
use crate::commands;
use crate::usage_error::UsageError;

/// The version and the git revision built from ("unknown" outside a checkout).
const VERSION: &str = crate::runner::versions::FAIRBENCH;

/// Benchmark HTTP servers fairly: same bytes, pinned cores, honest latency.
#[derive(Parser, Debug)]
#[command(
    name = "fairbench",
    version = VERSION,
    about,
    long_about = None,
    after_help = "Examples:
  fairbench load -c 50 -d 10s http://127.0.0.1:8080/
  fairbench servers
  fairbench check --servers 'go-*'
  fairbench run --suite quick
  fairbench show latest
  fairbench report latest -o report.html
  fairbench compare 1 latest

Counts and rates take SI suffixes (-c 1k, -R 10k, -n 1.5M); durations take units (10s, 500ms, 2m)."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// `load --help`'s examples: one line per thing people come to it for.
const LOAD_EXAMPLES: &str = "\
Examples:
  fairbench load -c 50 -t 2 -d 10s http://127.0.0.1:8080/              closed loop, like wrk
  fairbench load -c 1k -R 10k -d 30s --latency http://127.0.0.1:8080/  constant rate, like wrk2
  fairbench load -n 10000 -c 2 --no-keepalive http://127.0.0.1:8080/   like ab -n 10000 -c 2
  fairbench load --http2 --streams 10 -c 4 https://127.0.0.1:8443/     h2 (h2c on http://)
  fairbench load --targets api.toml -R 2k -d 30s http://127.0.0.1:8080  many requests, weighted
  fairbench load 'http://127.0.0.1:8080/items/{{uniform 1 10000}}'     a template in the URL
  fairbench load --stages 30s:0-5k,2m:5k http://127.0.0.1:8080/        a ramp, then a plateau
  fairbench load -R 1k --threshold 'p99<20ms' --export-json r.json URL  a CI gate (exit 99)
  fairbench load URL --vs URL_B --repetitions 5                        before/after, paired
  fairbench load --knee 'p99<=20ms' --start-rate 500 -d 5s URL         the highest rate that holds
  fairbench load -n 100k --save --db results.db http://127.0.0.1:8080/  stored, for report";

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Drive load at one URL (closed loop like wrk, or constant rate like wrk2).
    #[command(
        after_help = LOAD_EXAMPLES
    )]
    Load(Box<commands::load::LoadArgs>),
    /// List every server definition, its variants, and whether its toolchain is present.
    #[command(after_help = "Examples:\n  fairbench servers\n  fairbench servers --format json")]
    Servers(commands::servers::ServersArgs),
    /// Build and start servers and check their responses against the scenario contracts.
    #[command(
        after_help = "Examples:\n  fairbench check\n  fairbench check --servers 'go-*,node-http' --scenarios static\n  fairbench check --variant native/normalized --raw\n  fairbench check --format json > check.json"
    )]
    Check(commands::check::CheckArgs),
    /// Run a suite: the benchmark matrix, stored case by case in the results database.
    #[command(
        after_help = "Examples:\n  fairbench run --suite quick\n  fairbench run --suite study --servers 'go-*' --cores 1,2 --dry-run\n  fairbench run --suite quick --variant normalized --connections 100 --rate 5k\n  fairbench run --resume 3\n  fairbench run --suite ./our-services.toml --db results.db"
    )]
    Run(Box<commands::run_args::RunArgs>),
    /// List the runs stored in the results database.
    #[command(
        after_help = "Examples:\n  fairbench runs\n  fairbench runs --db baseline.db --format json"
    )]
    Runs(commands::runs::RunsArgs),
    /// Print one stored run's summary table.
    #[command(
        after_help = "Examples:\n  fairbench show\n  fairbench show 3 --reference node-http\n  fairbench show latest --format json"
    )]
    Show(commands::show::ShowArgs),
    /// Turn a stored run into a self-contained HTML report (or Markdown, CSV, JSON).
    #[command(
        after_help = "Examples:\n  fairbench report\n  fairbench report 3 -o report.html\n  fairbench report latest --format md -o -\n  fairbench report latest --format csv --hdr hlogs/"
    )]
    Report(commands::report::ReportArgs),
    /// Compare two stored runs case by case, with a verdict on each difference.
    #[command(
        after_help = "Examples:\n  fairbench compare 1 latest\n  fairbench compare latest latest --db baseline.db --db-b results.db\n  fairbench compare 1 2 --format md --fail-on-regression 5"
    )]
    Compare(commands::compare::CompareArgs),
    /// A case's figures across every stored run, where they changed, and a CI verdict.
    #[command(
        after_help = "Examples:\n  fairbench history\n  fairbench history --server go-nethttp --scenario static --cores 1 --svg history.svg\n  fairbench history --metric p99 --format csv\n  fairbench history --fail-on-change   # exit 97 when the newest run starts a change for the worse"
    )]
    History(commands::history::HistoryArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    #[command(
        after_help = "Examples:\n  fairbench completions bash > /etc/bash_completion.d/fairbench\n  fairbench completions zsh > ~/.zfunc/_fairbench"
    )]
    Completions(commands::completions::CompletionsArgs),
    /// Print the man page (roff) on standard output.
    #[command(after_help = "Examples:\n  fairbench man > fairbench.1 && man ./fairbench.1")]
    Man(commands::completions::ManArgs),
    /// fairbench's own helper on other hosts and in network namespaces
    /// (load generator, server supervisor); not for direct use.
    #[command(hide = true)]
    Agent(crate::fleet::agent::AgentArgs),
}

/// The command line `argv` (program name first) as fairbench reads it.
pub fn parse<I, T>(argv: I) -> Result<Cli, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    negatives_to_their_flags(Cli::command())
        .try_get_matches_from(argv)
        .and_then(|m| Cli::from_arg_matches(&m))
}

pub fn main() -> i32 {
    let argv: Vec<String> = std::env::args().collect();
    if let Some(line) = migrant::single_dash_habit(&argv) {
        eprintln!("fairbench: {line}");
        return 2;
    }
    let cli = match parse(&argv) {
        Ok(cli) => cli,
        Err(e) => {
            // clap prints help/version to stdout with exit 0 and errors to stderr with 2.
            if e.use_stderr()
                && e.kind() != clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
            {
                let line = migrant::hint(&argv, &e).unwrap_or_else(|| {
                    without_dash_dash_tip(one_line(&e.render().to_string()), &argv)
                });
                eprintln!("fairbench: {line}");
            } else {
                let _ = e.print();
            }
            return e.exit_code();
        }
    };
    crate::interrupt::install();
    if !matches!(cli.command, Command::Agent(_)) {
        clean_after_killed();
    }
    let result = match cli.command {
        Command::Load(args) => commands::load::run(*args),
        Command::Servers(args) => commands::servers::run(args),
        Command::Check(args) => commands::check::run(args),
        Command::Run(args) => commands::run::run(*args),
        Command::Runs(args) => commands::runs::run(args),
        Command::Show(args) => commands::show::run(args),
        Command::Report(args) => commands::report::run(args),
        Command::Compare(args) => commands::compare::run(args),
        Command::History(args) => commands::history::run(args),
        Command::Completions(args) => commands::completions::completions(args, Cli::command()),
        Command::Man(args) => commands::completions::man(args, Cli::command()),
        Command::Agent(args) => crate::fleet::agent::run(args),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            // Messages carry names from manifests, folders and suites; a
            // database error names its file.
            let shown =
                |m: String| crate::output::terminal::text(&crate::store::name_the_file(&e, m));
            if let Some(u) = e.downcast_ref::<UsageError>() {
                eprintln!("fairbench: {}", shown(u.to_string()));
                2
            } else {
                // `{:#}` prints the context chain on one line: no backtraces for users.
                eprintln!("fairbench: {}", shown(format!("{e:#}")));
                1
            }
        }
    }
}

/// What fairbench processes killed outright (SIGKILL, a crash, a power
/// cut) left behind — control groups and, as root, network namespaces and
/// veth links — removed at the start of every command, with one line
/// saying what. Only what a dead process owned is touched: each name
/// carries its owner's pid (and start time, for groups). An agent does
/// not: it runs inside a command that already did.
fn clean_after_killed() {
    let (groups, problems) = fairbench_sys::containment::clean_leftovers();
    // SAFETY: geteuid has no preconditions.
    let netns = if unsafe { libc::geteuid() } == 0 {
        crate::topology::netns::clean_leftovers()
    } else {
        Vec::new()
    };
    let (folders, folder_problems) = fairbench_zoo::database::leftovers::clean();
    let mut what = Vec::new();
    if !folders.is_empty() {
        what.push(format!("database folders {}", folders.join(", ")));
    }
    if !groups.is_empty() {
        what.push(format!("control groups {}", groups.join(", ")));
    }
    if !netns.is_empty() {
        what.push(format!(
            "network namespaces and veth links {}",
            netns.join(", ")
        ));
    }
    if !what.is_empty() {
        eprintln!(
            "fairbench: removed what earlier fairbench processes left behind: {}",
            crate::output::terminal::text(&what.join("; "))
        );
    }
    for p in problems {
        eprintln!(
            "fairbench: warning: a leftover control group would not go: {}",
            crate::output::terminal::text(&p)
        );
    }
    for p in folder_problems {
        eprintln!(
            "fairbench: warning: a leftover database folder would not go: {}",
            crate::output::terminal::text(&p)
        );
    }
}

/// Every value-taking argument accepts a value that looks negative, so
/// `-c -1` reaches `--connections`' own parser and its message rather than
/// clap's "unexpected argument" tip (which suggests `-- -1`, which does not
/// work for a flag's value).
fn negatives_to_their_flags(c: clap::Command) -> clap::Command {
    c.mut_args(|a| {
        if a.get_action().takes_values() {
            a.allow_negative_numbers(true)
        } else {
            a
        }
    })
    .mut_subcommands(negatives_to_their_flags)
}

/// clap's tip for a value that starts with `-` (`use '-- -1s'`) does not
/// work for a flag's value; what is meant is a value below zero, given to
/// the flag before it in `argv`.
fn without_dash_dash_tip(line: String, argv: &[String]) -> String {
    let Some(value) = line
        .strip_prefix("unexpected argument '")
        .and_then(|r| r.split('\'').next())
    else {
        return line;
    };
    let negative = value
        .strip_prefix('-')
        .is_some_and(|r| r.starts_with(|c: char| c.is_ascii_digit() || c == '.'));
    if !negative {
        return line;
    }
    let given = argv
        .windows(2)
        .find(|w| w[1].starts_with(value) && w[0].starts_with('-'))
        .map_or_else(|| value.to_string(), |w| format!("{} {}", w[0], w[1]));
    format!(
        "{given}: a value below zero is not accepted (counts, rates and durations are positive)"
    )
}

/// A clap error as one line, as every other usage error is: its first line
/// (which names the flag and the value), what it lists when it ends in a
/// colon (the missing arguments), and any tip it gives after it.
fn one_line(rendered: &str) -> String {
    let mut lines = rendered.lines().map(str::trim).filter(|l| !l.is_empty());
    let first = lines.next().unwrap_or("invalid arguments");
    let mut out = first.strip_prefix("error: ").unwrap_or(first).to_string();
    let mut listed = Vec::new();
    let mut usage = None;
    for l in lines {
        if let Some(tip) = l.strip_prefix("tip: ") {
            out.push_str(&format!(" ({tip})"));
        } else if l.starts_with("[possible values:") {
            out.push_str(&format!(" {l}"));
        } else if let Some(u) = l.strip_prefix("Usage: ") {
            usage = Some(u);
        } else if first.ends_with(':') && usage.is_none() {
            listed.push(l);
        }
    }
    if !listed.is_empty() {
        out.push_str(&format!(" {}", listed.join(", ")));
        if let Some(u) = usage {
            out.push_str(&format!(" (usage: {u})"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::one_line;

    #[test]
    fn a_missing_argument_is_named_with_the_usage() {
        let rendered = "error: the following required arguments were not provided:\n  <URL>\n\nUsage: fairbench load [OPTIONS] <URL>\n\nFor more information, try '--help'.\n";
        assert_eq!(
            one_line(rendered),
            "the following required arguments were not provided: <URL> (usage: fairbench load [OPTIONS] <URL>)"
        );
    }
}
