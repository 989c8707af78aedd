//! The versions every stored case is recorded with (store::Versions):
//! gathered once per run (fairbench, the machine) and per server (its
//! toolchain's probe), and per case (the source key of what was built).

use std::collections::BTreeMap;
use std::sync::OnceLock;

use fairbench_zoo::toolchain::ToolchainStatus;
use fairbench_zoo::Server;

use super::metadata;
use crate::store::Versions;

/// fairbench's own version, as `--version` prints it.
pub const FAIRBENCH: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (git ",
    env!("FAIRBENCH_GIT_REVISION"),
    ")"
);

/// The machine in one line: CPU model, CPU count, kernel.
/// Read from /proc once per process: it does not change during a run.
pub fn machine() -> String {
    static MACHINE: OnceLock<String> = OnceLock::new();
    MACHINE
        .get_or_init(|| {
            let h = metadata::host(&[]);
            format!(
                "{} · {} CPUs · Linux {}",
                h.cpu_model.as_deref().unwrap_or("unknown CPU"),
                h.cpus,
                h.kernel.as_deref().unwrap_or("?")
            )
        })
        .clone()
}

/// The versions of a case at a URL (`load --save`, a `[[service]]`):
/// what its server runs is known only as declared.
pub fn of_url(declared: Option<String>) -> Versions {
    Versions {
        fairbench: FAIRBENCH.to_string(),
        declared,
        machine: machine(),
        ..Versions::default()
    }
}

/// Each server's toolchain with its version ("go 1.22.1"), taken from the
/// probes the plan already made; `None` when the toolchain is unavailable.
pub type Toolchains = BTreeMap<String, Option<String>>;

/// The plan's probes (server name → server and toolchain status) as
/// [`Toolchains`].
pub fn toolchains(probes: &crate::suite::Probes) -> Toolchains {
    probes
        .iter()
        .map(|(name, (server, status))| {
            let line = match status {
                ToolchainStatus::Present { version } => Some(match version {
                    Some(v) => format!("{} {v}", server.toolchain.name),
                    None => server.toolchain.name.clone(),
                }),
                ToolchainStatus::Unavailable { .. } => None,
            };
            (name.clone(), line)
        })
        .collect()
}

/// Gathers the versions of a run's zoo cases.
pub struct CaseVersions {
    base: Versions,
    toolchains: Toolchains,
}

impl CaseVersions {
    pub fn new(toolchains: Toolchains) -> Self {
        CaseVersions {
            base: of_url(None),
            toolchains,
        }
    }

    /// The versions of a case of `server` whose build had `source_key`.
    pub fn of(&self, server: &Server, source_key: Option<String>) -> Versions {
        Versions {
            server_source: source_key,
            declared: Some(format!("{} {}", server.framework, server.framework_version)),
            toolchain: self.toolchains.get(&server.name).cloned().flatten(),
            ..self.base.clone()
        }
    }
}
