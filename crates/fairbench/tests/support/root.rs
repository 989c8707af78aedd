//! A throw-away fairbench root: the repository's scenarios, Python test
//! servers (tests/fixtures/pyserver.py or another script, copied into each
//! server's folder so that an ssh host gets it too) with a unique token in their command line,
//! suites written by the test, and what the tests read from its results
//! database afterwards.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use fairbench::store::decode_histogram;

use super::{command, live_with, repo};

pub struct Root {
    pub dir: tempfile::TempDir,
    pub token: String,
}

impl Root {
    /// `servers`: (name, extra pyserver arguments).
    pub fn new(servers: &[(&str, &[&str])]) -> Root {
        Root::with_script(&repo().join("tests/fixtures/pyserver.py"), servers)
    }

    /// Servers run by another Python test server `script` (which takes
    /// `--token` and `--lifetime` too): (name, extra arguments).
    pub fn with_script(script: &Path, servers: &[(&str, &[&str])]) -> Root {
        let file = script.file_name().unwrap().to_string_lossy().into_owned();
        let dir = tempfile::tempdir().unwrap();
        let token = format!(
            "fbtest-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos()
        );
        let root = dir.path();
        std::fs::create_dir_all(root.join("scenarios/files")).unwrap();
        for f in [
            "static.toml",
            "dynamic.toml",
            "file.toml",
            "files/hello-16k.txt",
        ] {
            std::fs::copy(
                repo().join("scenarios").join(f),
                root.join("scenarios").join(f),
            )
            .unwrap();
        }
        for (name, extra) in servers {
            let d = root.join("servers").join(name);
            std::fs::create_dir_all(&d).unwrap();
            std::fs::copy(script, d.join(&file)).unwrap();
            let mut argv = vec![
                "python3".to_string(),
                format!("{{dir}}/{file}"),
                "--token".into(),
                token.clone(),
                "--lifetime".into(),
                "120".into(),
            ];
            argv.extend(extra.iter().map(|s| s.to_string()));
            let run = argv
                .iter()
                .map(|a| format!("{a:?}"))
                .collect::<Vec<_>>()
                .join(", ");
            std::fs::write(
                d.join("server.toml"),
                format!(
                    r#"name = "{name}"
language = "Python"
framework = "asyncio test server"
framework_version = "test"
[toolchain]
name = "python3"
probe = ["python3", "--version"]
version_regex = 'Python (\S+)'
[modes.native]
run = [{run}]
[responses.default]
[responses.normalized]
"#
                ),
            )
            .unwrap();
        }
        std::fs::create_dir_all(root.join("suites")).unwrap();
        Root { dir, token }
    }

    /// Declares what `server`'s default response does with WORKERS
    /// (its manifest's `workers`: "env", "one" or "cores").
    pub fn declare_workers(&self, server: &str, workers: &str) {
        let p = self.path().join("servers").join(server).join("server.toml");
        let t = std::fs::read_to_string(&p).unwrap().replace(
            "[responses.default]\n",
            &format!("[responses.default]\nworkers = \"{workers}\"\n"),
        );
        std::fs::write(p, t).unwrap();
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn db(&self) -> PathBuf {
        self.path().join("results.db")
    }

    pub fn suite(&self, name: &str, body: &str) {
        std::fs::write(
            self.path().join("suites").join(format!("{name}.toml")),
            body,
        )
        .unwrap();
    }

    /// A one-case suite: static, 1 core, closed loop with `connections`.
    pub fn one_case_suite(&self, name: &str, connections: usize, duration: &str) {
        self.suite(
            name,
            &format!(
                r#"name = "{name}"
responses = ["normalized"]
scenarios = ["static"]
cores = [1]
warmup = "1s"
duration = "{duration}"
repetitions = 1
[[load]]
model = "closed"
connections = {connections}
threads = 2
"#
            ),
        );
    }

    pub fn fairbench(&self) -> Command {
        let mut c = command();
        c.current_dir(self.path());
        c
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.fairbench().args(args).output().unwrap()
    }

    /// Processes whose command line carries this root's token.
    pub fn live_servers(&self) -> Vec<u32> {
        live_with(&self.token)
    }

    /// Waits (up to 60 s: a fresh CI machine may be slow to start the
    /// first one) until a server of this root is alive; false if none came.
    ///
    /// True as soon as one is seen: a second look could miss a server that
    /// is between its leader's exit and its daemonized child (a scan of
    /// /proc is not atomic), and the test would wrongly say none started.
    pub fn wait_for_a_server(&self) -> bool {
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(60) {
            if !self.live_servers().is_empty() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        false
    }

    /// Waits (bounded) until no server of this root is alive.
    pub fn assert_no_servers_left(&self) {
        let t = Instant::now();
        while !self.live_servers().is_empty() && t.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(100));
        }
        assert!(
            self.live_servers().is_empty(),
            "servers left running: {:?}",
            self.live_servers()
        );
    }

    pub fn sql<T: rusqlite::types::FromSql>(&self, q: &str) -> T {
        let c = rusqlite::Connection::open(self.db()).unwrap();
        c.query_row(q, [], |r| r.get(0)).unwrap()
    }

    /// Every row of `q`, each value as text (NULL, numbers, `<N bytes>`).
    pub fn rows(&self, q: &str) -> Vec<Vec<String>> {
        let c = rusqlite::Connection::open(self.db()).unwrap();
        let mut st = c.prepare(q).unwrap();
        let n = st.column_count();
        st.query_map([], |r| {
            Ok((0..n)
                .map(|i| {
                    let v: rusqlite::types::Value = r.get(i).unwrap();
                    match v {
                        rusqlite::types::Value::Null => "NULL".into(),
                        rusqlite::types::Value::Integer(i) => i.to_string(),
                        rusqlite::types::Value::Real(f) => f.to_string(),
                        rusqlite::types::Value::Text(t) => t,
                        rusqlite::types::Value::Blob(b) => format!("<{} bytes>", b.len()),
                    }
                })
                .collect())
        })
        .unwrap()
        .map(|r| r.unwrap())
        .collect()
    }

    pub fn blobs(&self, q: &str) -> Vec<Vec<u8>> {
        let c = rusqlite::Connection::open(self.db()).unwrap();
        let mut st = c.prepare(q).unwrap();
        st.query_map([], |r| r.get::<_, Vec<u8>>(0))
            .unwrap()
            .map(|r| r.unwrap())
            .collect()
    }

    pub fn ints(&self, q: &str) -> Vec<i64> {
        let c = rusqlite::Connection::open(self.db()).unwrap();
        let mut st = c.prepare(q).unwrap();
        st.query_map([], |r| r.get::<_, i64>(0))
            .unwrap()
            .map(|r| r.unwrap())
            .collect()
    }

    pub fn strings(&self, q: &str) -> Vec<String> {
        let c = rusqlite::Connection::open(self.db()).unwrap();
        let mut st = c.prepare(q).unwrap();
        st.query_map([], |r| r.get::<_, String>(0))
            .unwrap()
            .map(|r| r.unwrap())
            .collect()
    }

    /// Exactness of a stored merge: for every case with parts, the merged
    /// request count is the sum of the parts', the merged latency histogram
    /// is the sum of theirs and its stored percentiles are the combined
    /// histogram's, and each merged second sums the parts' seconds.
    pub fn assert_merged_exactly(&self, parts_expected: usize) {
        let cases = self.ints("SELECT id FROM cases WHERE state = 'done' ORDER BY id");
        assert!(!cases.is_empty(), "no case done");
        for case in cases {
            let parts: i64 = self.sql(&format!(
                "SELECT count(*) FROM case_parts WHERE case_id = {case}"
            ));
            assert_eq!(parts as usize, parts_expected, "parts of case {case}");
            let total: i64 = self.sql(&format!("SELECT requests FROM cases WHERE id = {case}"));
            let sum: i64 = self.sql(&format!(
                "SELECT sum(requests) FROM case_parts WHERE case_id = {case}"
            ));
            assert_eq!(total, sum, "merged requests = sum of the parts");
            assert!(total > 0);
            let mut combined = fairbench_engine::histogram::new_histogram();
            for b in self.blobs(&format!(
                "SELECT latency FROM case_parts WHERE case_id = {case} ORDER BY part"
            )) {
                combined.add(decode_histogram(&b).unwrap()).unwrap();
            }
            let merged = decode_histogram(
                &self.blobs(&format!(
                    "SELECT data FROM histograms WHERE case_id = {case} AND kind = 'latency'"
                ))[0],
            )
            .unwrap();
            assert_eq!(merged, combined, "merged histogram = sum of the parts'");
            assert_eq!(merged.len() as i64, total);
            for (col, q) in [
                ("lat_p50", 0.5),
                ("lat_p90", 0.9),
                ("lat_p99", 0.99),
                ("lat_p999", 0.999),
                ("lat_max", 1.0),
            ] {
                let stored: i64 = self.sql(&format!("SELECT {col} FROM cases WHERE id = {case}"));
                assert_eq!(
                    stored as u64,
                    combined.value_at_quantile(q),
                    "{col} of case {case} is the combined histogram's"
                );
            }
            let mismatched: i64 = self.sql(&format!(
                "SELECT count(*) FROM samples s WHERE s.case_id = {case} AND s.requests !=
                   (SELECT coalesce(sum(p.requests), 0) FROM part_samples p
                     WHERE p.case_id = s.case_id AND p.second = s.second)"
            ));
            assert_eq!(mismatched, 0, "every merged second sums the parts' seconds");
        }
    }
}
