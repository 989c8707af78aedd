//! Builds, once per server and mode per run (the zoo's cache makes repeated
//! runs cheap; this makes repeated cases in one run free).

use std::collections::HashMap;
use std::path::PathBuf;

use fairbench_zoo::{build, Server};

#[derive(Debug, Clone)]
pub struct BuildFailure {
    pub reason: String,
    pub log_tail: Vec<String>,
}

pub struct Builds {
    cache_dir: PathBuf,
    done: HashMap<(String, String), Result<PathBuf, BuildFailure>>,
}

impl Builds {
    pub fn new(cache_dir: PathBuf) -> Builds {
        Builds {
            cache_dir,
            done: HashMap::new(),
        }
    }

    /// The build output directory, building first if needed. `announce` is
    /// told before a build that actually runs (they can take minutes).
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
        announce(&format!("building {} ({mode})", server.name));
        let r = build::ensure_built(server, mode, &self.cache_dir)
            .map(|o| o.out_dir)
            .map_err(|e| BuildFailure {
                reason: format!("build failed: {e}"),
                log_tail: e.log_tail().to_vec(),
            });
        self.done.insert(key, r.clone());
        r
    }
}
