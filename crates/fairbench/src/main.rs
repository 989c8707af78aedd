//! fairbench: benchmark HTTP servers fairly.

use fairbench::output::pipe;

fn main() {
    pipe::install();
    // A reader that went away ends fairbench quietly, after the unwinding
    // removed what it started (output/pipe.rs); any other panic goes on.
    let code = match std::panic::catch_unwind(fairbench::cli::main) {
        Ok(code) => code,
        Err(p) if pipe::is_broken_pipe(&*p) => pipe::die(),
        Err(p) => std::panic::resume_unwind(p),
    };
    std::process::exit(code);
}
