//! fairbench: benchmark HTTP servers fairly.

fn main() {
    std::process::exit(fairbench::cli::main());
}
