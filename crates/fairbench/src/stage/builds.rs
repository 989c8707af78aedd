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
}

impl Builds {
    pub fn new(cache_dir: PathBuf, opts: BuildOptions) -> Builds {
        Builds {
            cache_dir,
            opts,
            done: HashMap::new(),
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
        let r = match build::ensure_built_with(server, mode, &self.cache_dir, &self.opts) {
            Ok(b) => {
                announce(&match b.status {
                    BuildStatus::Cached => format!("build {} {mode}: cached", server.name),
                    BuildStatus::Built => format!(
                        "build {} {mode}: built in {:.1}s",
                        server.name,
                        b.duration.as_secs_f64()
                    ),
                });
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

impl BuildFailure {
    /// As a run's case records it.
    pub fn reason(&self) -> String {
        format!("build failed: {}", self.message)
    }
}
