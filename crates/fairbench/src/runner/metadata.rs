//! What a run was measured on: the machine, the kernel, the versions.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use fairbench_sys::process::bounded;
use serde::Serialize;
use serde_json::json;

#[derive(Debug, Clone, Serialize)]
pub struct Host {
    pub cpu_model: Option<String>,
    pub cpus: usize,
    pub usable_cpus: Vec<usize>,
    pub kernel: Option<String>,
    pub governor: Option<String>,
    pub memory_bytes: Option<u64>,
    pub os: Option<String>,
}

pub fn host(usable: &[usize]) -> Host {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu_model = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string());
    let cpus = cpuinfo
        .lines()
        .filter(|l| l.starts_with("processor"))
        .count();
    let read = |p: &str| {
        std::fs::read_to_string(p)
            .ok()
            .map(|s| s.trim().to_string())
    };
    let memory_bytes = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .find(|l| l.starts_with("MemTotal:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        })
        .map(|kb| kb * 1024);
    let os = std::fs::read_to_string("/etc/os-release")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("PRETTY_NAME="))
                .map(|l| l["PRETTY_NAME=".len()..].trim_matches('"').to_string())
        });
    Host {
        cpu_model,
        cpus: cpus.max(usable.len()),
        usable_cpus: usable.to_vec(),
        kernel: read("/proc/sys/kernel/osrelease"),
        governor: read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"),
        memory_bytes,
        os,
    }
}

/// The git revision of the fairbench checkout, with `-dirty` when it has
/// uncommitted changes; None outside a git checkout.
pub fn git_revision(root: &Path) -> Option<String> {
    let run = |args: &[&str]| {
        let mut git = Command::new("git");
        git.args(args).current_dir(root);
        // A minute is ages for git on one checkout; a wedged git (a lock on
        // a network file system) costs the run its revision, not the run.
        bounded::run(git, None, Duration::from_secs(60))
            .ok()
            .filter(|f| f.status.is_some_and(|s| s.success()))
            .map(|f| f.stdout_text().trim().to_string())
    };
    let rev = run(&["rev-parse", "--short=12", "HEAD"])?;
    let dirty =
        run(&["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty());
    Some(if dirty { format!("{rev}-dirty") } else { rev })
}

/// Per server: toolchain status and version, framework and its version.
pub fn toolchains(probes: &crate::suite::Probes) -> serde_json::Value {
    let mut m = serde_json::Map::new();
    for (name, (server, status)) in probes {
        m.insert(
            name.clone(),
            json!({
                "toolchain": server.toolchain.name,
                "status": status,
                "language": server.language,
                "framework": server.framework,
                "framework_version": server.framework_version,
            }),
        );
    }
    serde_json::Value::Object(m)
}
