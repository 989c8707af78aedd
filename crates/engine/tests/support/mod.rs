//! What several of the engine's integration tests share: running a load
//! to its end, the two load models at the sizes those tests use, the
//! pre-run refusal a test expects, and a load thread that cannot be placed.

#![allow(dead_code)]

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use fairbench_engine::{run, LoadConfig, LoadModel, Outcome, Quiet, RunError, ThreadStart};

/// 4 connections on 2 threads for 1.5 s at `url`, with a timeout far
/// above any answer the test servers give: on a loaded machine their
/// threads can starve for seconds, and a timeout is then the test's
/// machine, not the engine under test. Tests about timeouts set their own.
pub fn config(url: &str) -> LoadConfig {
    let mut c = LoadConfig::new(fairbench_engine::Target::parse(url).unwrap());
    c.connections = 4;
    c.threads = 2;
    c.duration = Duration::from_millis(1500);
    c.timeout = Duration::from_secs(20);
    c
}

/// Runs `cfg` to its end, unobserved and never stopped.
pub fn go(cfg: &LoadConfig) -> Result<Outcome, RunError> {
    run(cfg, Arc::new(AtomicBool::new(false)), &mut Quiet)
}

/// 200 requests in the closed loop (the duration only a safety net).
pub fn closed_loop(mut cfg: LoadConfig) -> LoadConfig {
    cfg.model = LoadModel::ClosedLoop;
    cfg.requests = Some(200);
    cfg.duration = Duration::from_secs(60);
    cfg
}

/// 200 requests a second for 2 s.
pub fn constant_rate(mut cfg: LoadConfig) -> LoadConfig {
    cfg.model = LoadModel::ConstantRate { rps: 200.0 };
    cfg.duration = Duration::from_secs(2);
    cfg
}

/// The one line a run refused before it started gives.
pub fn refused(cfg: &LoadConfig) -> String {
    match go(cfg) {
        Err(RunError::Connect(m)) => m,
        Err(e) => panic!("expected a connect error, got {e}"),
        Ok(o) => panic!("expected a refusal, the run answered {}", o.requests),
    }
}

/// `cfg` run with a thread hook that fails: the run is void, with the
/// hook's reason.
pub fn voided_by_a_failing_hook(mut cfg: LoadConfig) {
    cfg.thread_start = Some(ThreadStart(Arc::new(|| Err("no room in the group".into()))));
    match go(&cfg) {
        Err(RunError::System(m)) => {
            assert_eq!(m, "cannot place a load thread: no room in the group")
        }
        other => panic!(
            "expected a system error, got {:?}",
            other.map(|o| o.requests)
        ),
    }
}
