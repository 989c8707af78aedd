//! The versions every stored case is recorded with (store::Versions):
//! gathered once per run (fairbench, the machine) and per server (its
//! toolchain's probe), and per case (the source key of what was built).

use std::collections::HashMap;

use fairbench_zoo::toolchain::{Prober, ToolchainStatus};
use fairbench_zoo::Server;

use super::metadata;
use crate::store::Versions;

/// fairbench's own version, as `--version` prints it.
pub fn fairbench() -> String {
    format!(
        "{} ({})",
        env!("CARGO_PKG_VERSION"),
        env!("FAIRBENCH_GIT_REVISION")
    )
}

/// The machine in one line: CPU model, CPU count, kernel.
pub fn machine() -> String {
    let h = metadata::host(&[]);
    format!(
        "{} · {} CPUs · Linux {}",
        h.cpu_model.as_deref().unwrap_or("unknown CPU"),
        h.cpus,
        h.kernel.as_deref().unwrap_or("?")
    )
}

/// The versions of a case at a URL (`load --save`, a `[[service]]`):
/// what its server runs is known only as declared.
pub fn of_url(declared: Option<String>) -> Versions {
    Versions {
        fairbench: fairbench(),
        declared,
        machine: machine(),
        ..Versions::default()
    }
}

/// Gathers the versions of a run's zoo cases.
pub struct CaseVersions {
    base: Versions,
    prober: Prober,
    toolchains: HashMap<String, Option<String>>,
}

impl Default for CaseVersions {
    fn default() -> Self {
        CaseVersions {
            base: of_url(None),
            prober: Prober::new(),
            toolchains: HashMap::new(),
        }
    }
}

impl CaseVersions {
    /// The versions of a case of `server` whose build had `source_key`.
    pub fn of(&mut self, server: &Server, source_key: Option<String>) -> Versions {
        let prober = &mut self.prober;
        let toolchain = self
            .toolchains
            .entry(server.toolchain.name.clone())
            .or_insert_with(|| match prober.probe(&server.toolchain) {
                ToolchainStatus::Present { version } => Some(match version {
                    Some(v) => format!("{} {v}", server.toolchain.name),
                    None => server.toolchain.name.clone(),
                }),
                ToolchainStatus::Unavailable { .. } => None,
            })
            .clone();
        Versions {
            server_source: source_key,
            declared: Some(format!("{} {}", server.framework, server.framework_version)),
            toolchain,
            ..self.base.clone()
        }
    }
}
