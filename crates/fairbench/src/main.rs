//! fairbench: benchmark HTTP servers fairly.

mod cli;
mod commands;
mod containment;
mod export;
mod fleet;
mod host;
mod interrupt;
mod output;
mod report;
mod runner;
mod store;
mod suite;
mod topology;

fn main() {
    std::process::exit(cli::main());
}
