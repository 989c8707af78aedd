//! What the `fairbench load` tests share: running the command, reading its
//! JSON, and (from the test kit) the canned server and the test CA.

pub use fairbench_testkit::accept::closed_port;
pub use fairbench_testkit::canned::{Server, HELLO, NOT_FOUND};
pub use fairbench_testkit::pki::{ca_as_server, pki, write_ca, Pki};

/// Exit code, stdout, stderr.
pub fn run(args: &[&str]) -> (i32, String, String) {
    let out = super::command().args(args).output().expect("run fairbench");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `load --json`'s output as JSON, or a panic that shows it.
pub fn json(out: &str) -> serde_json::Value {
    serde_json::from_str(out).unwrap_or_else(|e| panic!("{e}: {out}"))
}
