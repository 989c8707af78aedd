//! fairbench: benchmark HTTP servers fairly.

mod cli;
mod commands;
mod export;
mod interrupt;
mod output;
mod runner;
mod suite;
mod store;

fn main() {
    std::process::exit(cli::main());
}
