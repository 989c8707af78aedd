//! What the `fairbench load` tests share: running the command, reading its
//! JSON, and (from the test kit) the canned server and the test CA.

pub use fairbench_testkit::accept::closed_port;
pub use fairbench_testkit::canned::{Server, HELLO, NOT_FOUND};
pub use fairbench_testkit::pki::{ca_as_server, pki, write_ca, Pki};

use fairbench_testkit::h3::H3Server;

/// Exit code, stdout, stderr.
pub fn run(args: &[&str]) -> (i32, String, String) {
    let out = super::command().args(args).output().expect("run fairbench");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A test kit HTTP/3 server's URL and a `--cacert` file for it, kept
/// while `dir` lives.
pub fn reach_h3(srv: &H3Server, dir: &tempfile::TempDir) -> (String, String) {
    (
        format!("https://127.0.0.1:{}/", srv.addr.port()),
        write_ca(dir, &srv.ca_pem),
    )
}

/// `load --http3 --streams 4 --cacert CA -c 2 -t 1`, then `more`, then the
/// server's URL: exit code, stdout, stderr.
pub fn load_h3(srv: &H3Server, more: &[&str]) -> (i32, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let (url, ca) = reach_h3(srv, &dir);
    let mut args = vec![
        "load",
        "--http3",
        "--streams",
        "4",
        "--cacert",
        &ca,
        "-c",
        "2",
        "-t",
        "1",
    ];
    args.extend_from_slice(more);
    args.push(&url);
    run(&args)
}

/// `load --json`'s output as JSON, or a panic that shows it.
pub fn json(out: &str) -> serde_json::Value {
    serde_json::from_str(out).unwrap_or_else(|e| panic!("{e}: {out}"))
}
