//! Network namespaces: whether the tests can make them here, and what a
//! fairbench process made (to check that it removed them, and to remove
//! them when a test failed).

use std::process::Command;

use super::{have, is_root, require};

/// Root, iproute2 and tc: what `--topology netns` needs.
pub fn netns_ready() -> bool {
    require(
        is_root(),
        "network namespace tests need root (CI runs as root)",
    ) && require(
        have("ip", "-V") && have("tc", "-V"),
        "network namespace tests need iproute2 (ip, tc)",
    )
}

/// Network namespaces made by the fairbench process `pid`.
pub fn namespaces_of(pid: u32) -> Vec<String> {
    let out = Command::new("ip").args(["netns", "list"]).output().unwrap();
    let prefix = format!("fairbench-{pid}-");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| n.starts_with(&prefix))
        .map(str::to_string)
        .collect()
}

/// This machine's own veth ends made by the fairbench process `pid`.
pub fn links_of(pid: u32) -> Vec<String> {
    let out = Command::new("ip")
        .args(["-o", "link", "show"])
        .output()
        .unwrap();
    let prefix = format!("fb{pid:x}-");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| Some(l.split(':').nth(1)?.trim().split('@').next()?.to_string()))
        .filter(|n| n.starts_with(&prefix))
        .collect()
}

/// Removes whatever a failed test left of process `pid`'s topology.
pub struct NetnsJanitor(pub Vec<u32>);

impl Drop for NetnsJanitor {
    fn drop(&mut self) {
        for &pid in &self.0 {
            for ns in namespaces_of(pid) {
                let _ = Command::new("ip").args(["netns", "del", &ns]).status();
            }
            for l in links_of(pid) {
                let _ = Command::new("ip").args(["link", "del", &l]).status();
            }
        }
    }
}
