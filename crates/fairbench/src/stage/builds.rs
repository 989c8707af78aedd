//! Builds, once per server and mode per run (the zoo's cache makes repeated
//! runs cheap; this makes repeated cases in one run free).

use std::collections::HashMap;
use std::path::PathBuf;

use fairbench_zoo::build::{self, BuildOptions, BuildStatus};
use fairbench_zoo::Server;

#[derive(Debug, Clone)]
pub struct BuildFailure {
    /// The zoo's error, as `check` shows it under its Build rule.
    pub message: String,
    pub log_tail: Vec<String>,
}

pub struct Builds {
    cache_dir: PathBuf,
    opts: BuildOptions,
    done: HashMap<(String, String), Result<PathBuf, BuildFailure>>,
    /// The build key of each server and mode built (its source's hash).
    keys: HashMap<(String, String), String>,
    /// Time in builds and in checking the cache.
    spent: std::time::Duration,
}

impl Builds {
    pub fn new(cache_dir: PathBuf, opts: BuildOptions) -> Builds {
        Builds {
            cache_dir,
            opts,
            done: HashMap::new(),
            keys: HashMap::new(),
            spent: std::time::Duration::ZERO,
        }
    }

    /// The build output directory, building first if needed. `announce` is
    /// told before the build is looked at and how it ended (a build can take
    /// minutes).
    pub fn get(
        &mut self,
        server: &Server,
        mode: &str,
        announce: &mut dyn FnMut(&str),
    ) -> Result<PathBuf, BuildFailure> {
        let key = (server.name.clone(), mode.to_string());
        if let Some(r) = self.done.get(&key) {
            return r.clone();
        }
        announce(&format!("build {} {mode} …", server.name));
        let t0 = std::time::Instant::now();
        let built = build::ensure_built_with(server, mode, &self.cache_dir, &self.opts);
        self.spent += t0.elapsed();
        let r = match built {
            Ok(b) => {
                announce(&match b.status {
                    BuildStatus::Cached => format!("build {} {mode}: cached", server.name),
                    BuildStatus::Built => format!(
                        "build {} {mode}: built in {:.1}s",
                        server.name,
                        b.duration.as_secs_f64()
                    ),
                });
                self.keys.insert(key.clone(), b.key);
                Ok(b.out_dir)
            }
            Err(e) => {
                announce(&format!("build {} {mode}: failed: {e}", server.name));
                Err(BuildFailure {
                    message: e.to_string(),
                    log_tail: e.log_tail().to_vec(),
                })
            }
        };
        self.done.insert(key, r.clone());
        r
    }
}

impl Builds {
    /// The source key of a server and mode built in this run (what the
    /// zoo's cache keys the build by), if it was built.
    pub fn spent(&self) -> std::time::Duration {
        self.spent
    }

    pub fn key(&self, server: &str, mode: &str) -> Option<&str> {
        self.keys
            .get(&(server.to_string(), mode.to_string()))
            .map(String::as_str)
    }
}

impl BuildFailure {
    /// As a run's case records it.
    pub fn reason(&self) -> String {
        format!("build failed: {}", self.message)
    }
}
