//! fairbench: benchmark HTTP servers fairly.

mod cli;
mod commands;
mod export;
mod interrupt;
mod output;
mod report;
mod runner;
mod store;
mod suite;

fn main() {
    std::process::exit(cli::main());
}
