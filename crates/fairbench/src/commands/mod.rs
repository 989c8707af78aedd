//! One module per subcommand: each turns parsed arguments into calls on the
//! engine, the zoo or the store, and into output.

pub mod check;
pub mod compare;
pub mod completions;
mod export;
pub mod history;
pub mod load;
pub mod report;
pub mod run;
pub mod run_args;
mod run_end;
mod run_services;
pub mod runs;
pub mod servers;
pub mod show;
