//! A throw-away fairbench root for runner tests: the repository's scenarios,
//! Python test servers (tests/fixtures/pyserver.py) with a unique token in
//! their command line, and a suite written by the test.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// The runner's end-to-end tests pin every server to the same CPU (the
/// highest one), so run in parallel they would measure each other. Each test
/// holds this for its whole body.
pub fn serial() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

pub struct Root {
    pub dir: tempfile::TempDir,
    pub token: String,
}

pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

impl Root {
    /// `servers`: (name, extra pyserver args).
    pub fn new(servers: &[(&str, &[&str])]) -> Root {
        Root::with_script(&repo().join("tests/fixtures/pyserver.py"), servers)
    }

    /// Servers run by the Python `script` (which takes `--token` and
    /// `--lifetime`): (name, extra args).
    pub fn with_script(script: &Path, servers: &[(&str, &[&str])]) -> Root {
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
        let py = script;
        for (name, extra) in servers {
            let d = root.join("servers").join(name);
            std::fs::create_dir_all(&d).unwrap();
            let mut argv = vec![
                "python3".to_string(),
                py.display().to_string(),
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

    pub fn fairbench(&self) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_fairbench"));
        c.current_dir(self.path());
        c
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.fairbench().args(args).output().unwrap()
    }

    /// Processes whose command line carries this root's token.
    pub fn live_servers(&self) -> Vec<u32> {
        let mut out = Vec::new();
        for e in std::fs::read_dir("/proc").unwrap().flatten() {
            let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
                continue;
            };
            let Ok(cmd) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
                continue;
            };
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let zombie = stat
                .rsplit_once(") ")
                .map(|(_, r)| r.starts_with('Z'))
                .unwrap_or(false);
            if !zombie && String::from_utf8_lossy(&cmd).contains(&self.token) {
                out.push(pid);
            }
        }
        out
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
}

pub fn text(o: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}
