//! fairbench: benchmark HTTP servers fairly.
//!
//! The binary (`main.rs`) is [`cli::main`]; everything else is this library,
//! so that the tests use the same modules the command does. Layers, from the
//! top: `cli` and `commands` (one module per subcommand, which parses, calls
//! and prints; nothing imports from them); `runner` (a run's life from plan
//! to end in `runner::session`), `checker` and `mix`; `fleet` and
//! `topology`; `compare`, `history`, `report` and `output`; `suite` (the suite files
//! and the flags that override one, `suite::overrides`); and at the bottom
//! `store`, `host` (a server's life: started, held, stopped, in its place),
//! `machine_lock`, `args`, `units`, `usage_error` and `build_revision`. A
//! module imports only from the layers below it, and the modules of one
//! folder do not import each other in a cycle (tests/house_rules.rs).
//! Processes and control groups are the fairbench-sys crate's, server
//! definitions the zoo's; what the tests share with the engine's, the
//! fairbench-testkit crate's.

pub mod args;
pub mod build_revision;
pub mod calibration;
pub mod checker;
pub mod cli;
pub mod commands;
pub mod compare;
pub mod fleet;
pub mod history;
pub mod host;
pub mod interrupt;
pub mod machine_lock;
pub mod mix;
pub mod output;
pub mod report;
pub mod request_options;
pub mod runner;
pub mod seeded;
pub mod stage;
pub mod store;
pub mod suite;
pub mod thresholds;
pub mod topology;
pub mod units;
pub mod usage_error;
