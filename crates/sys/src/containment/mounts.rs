//! Where control groups can be made on this machine: the cgroup v2
//! hierarchy when it carries the controllers, else the cgroup v1
//! hierarchies that are mounted. Found from /proc/self/mountinfo and
//! /proc/self/cgroup, never assumed: machines mount them differently (pure
//! v2, pure v1, or v1 controllers beside an empty v2 tree).

use std::path::{Path, PathBuf};

/// The v1 controllers fairbench uses.
pub const V1_CONTROLLERS: &[&str] = &["cpuset", "cpu", "cpuacct", "memory", "pids", "freezer"];

/// The v2 controllers fairbench enables for its groups when it can.
pub const V2_CONTROLLERS: &[&str] = &["cpuset", "cpu", "memory", "pids"];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    V1,
    V2,
}

/// One mounted hierarchy and fairbench's own group in it, under which its
/// groups are made (so that whatever limits fairbench itself is under,
/// its servers are under too).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hierarchy {
    /// v1: the controllers bound to this mount (e.g. `["cpu", "cpuacct"]`);
    /// v2: those fairbench's own group may hand to its children.
    pub controllers: Vec<String>,
    /// fairbench's own group's directory.
    pub parent: PathBuf,
}

impl Hierarchy {
    pub fn has(&self, controller: &str) -> bool {
        self.controllers.iter().any(|c| c == controller)
    }
}

/// The hierarchies a group is made in: one for v2, one per mount for v1.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hierarchies {
    pub version: Version,
    pub list: Vec<Hierarchy>,
}

impl Hierarchies {
    /// This machine's, as seen by this process; `Err` says why there are
    /// none to use.
    pub fn detect() -> Result<Hierarchies, String> {
        Hierarchies::detect_from("/proc/self/cgroup")
    }

    /// The same, for the groups `cgroup` (a /proc cgroup file) names:
    /// `/proc/thread-self/cgroup` for the calling thread's, which cgroup v1
    /// may place apart from its process.
    pub fn detect_from(cgroup: &str) -> Result<Hierarchies, String> {
        let mountinfo = std::fs::read_to_string("/proc/self/mountinfo")
            .map_err(|e| format!("cannot read /proc/self/mountinfo: {e}"))?;
        let own =
            std::fs::read_to_string(cgroup).map_err(|e| format!("cannot read {cgroup}: {e}"))?;
        choose(&parse_mounts(&mountinfo), &own, &|p: &Path| {
            std::fs::read_to_string(p.join("cgroup.controllers")).ok()
        })
    }

    /// A v2 hierarchy rooted at `parent` (which must be a cgroup2
    /// directory), whatever controllers it has: for tests of the v2 paths
    /// on machines whose v2 tree has none.
    pub fn v2_at(parent: &Path) -> Hierarchies {
        let controllers = std::fs::read_to_string(parent.join("cgroup.controllers"))
            .unwrap_or_default()
            .split_whitespace()
            .map(str::to_string)
            .collect();
        Hierarchies {
            version: Version::V2,
            list: vec![Hierarchy {
                controllers,
                parent: parent.to_path_buf(),
            }],
        }
    }

    pub fn find(&self, controller: &str) -> Option<&Hierarchy> {
        self.list.iter().find(|h| h.has(controller))
    }
}

/// A cgroup mount from mountinfo.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mount {
    /// The hierarchy's directory that is mounted (`/` unless a container
    /// sees only part of it).
    pub root: String,
    pub point: PathBuf,
    pub version: Version,
    /// v1: the controllers named in the super options.
    pub controllers: Vec<String>,
}

/// The cgroup and cgroup2 mounts of a mountinfo text.
pub fn parse_mounts(mountinfo: &str) -> Vec<Mount> {
    let mut out = Vec::new();
    for line in mountinfo.lines() {
        // id parent maj:min root point opts [optional…] - fstype source superopts
        let Some((left, right)) = line.split_once(" - ") else {
            continue;
        };
        let l: Vec<&str> = left.split(' ').collect();
        let r: Vec<&str> = right.split(' ').collect();
        if l.len() < 5 || r.is_empty() {
            continue;
        }
        let version = match r[0] {
            "cgroup" => Version::V1,
            "cgroup2" => Version::V2,
            _ => continue,
        };
        let controllers = match version {
            Version::V2 => Vec::new(),
            Version::V1 => r
                .get(2)
                .map(|o| {
                    o.split(',')
                        .filter(|c| V1_CONTROLLERS.contains(c))
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default(),
        };
        out.push(Mount {
            root: unescape(l[3]),
            point: PathBuf::from(unescape(l[4])),
            version,
            controllers,
        });
    }
    out
}

/// mountinfo writes space, tab, newline and backslash as octal escapes.
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 3 < b.len()
            && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c))
        {
            let v = (b[i + 1] - b'0') * 64 + (b[i + 2] - b'0') * 8 + (b[i + 3] - b'0');
            out.push(v);
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The directory of this process's group `path` (from /proc/self/cgroup)
/// in `mount`, when the mount shows it.
fn own_dir(mount: &Mount, path: &str) -> Option<PathBuf> {
    let rel = if mount.root == "/" {
        path
    } else {
        let rest = path.strip_prefix(mount.root.as_str())?;
        if !(rest.is_empty() || rest.starts_with('/')) {
            return None;
        }
        rest
    };
    Some(mount.point.join(rel.trim_start_matches('/')))
}

/// v2 when a v2 mount offers at least cpu and memory to fairbench's own
/// group; else the v1 mounts of the controllers fairbench uses.
/// `controllers_of` reads a v2 directory's `cgroup.controllers`.
pub fn choose(
    mounts: &[Mount],
    own_cgroup: &str,
    controllers_of: &dyn Fn(&Path) -> Option<String>,
) -> Result<Hierarchies, String> {
    let mut v2_path = None;
    let mut v1_paths: Vec<(Vec<String>, String)> = Vec::new();
    for line in own_cgroup.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(id), Some(ctrls), Some(path)) = (parts.next(), parts.next(), parts.next()) else {
            continue;
        };
        if id == "0" && ctrls.is_empty() {
            v2_path = Some(path.to_string());
        } else {
            let mut c: Vec<String> = ctrls
                .split(',')
                .filter(|c| V1_CONTROLLERS.contains(c))
                .map(str::to_string)
                .collect();
            c.sort();
            if !c.is_empty() {
                v1_paths.push((c, path.to_string()));
            }
        }
    }
    if let Some(path) = &v2_path {
        for m in mounts.iter().filter(|m| m.version == Version::V2) {
            let Some(dir) = own_dir(m, path) else {
                continue;
            };
            let ctrls: Vec<String> = controllers_of(&dir)
                .unwrap_or_default()
                .split_whitespace()
                .map(str::to_string)
                .collect();
            if ctrls.iter().any(|c| c == "cpu") && ctrls.iter().any(|c| c == "memory") {
                return Ok(Hierarchies {
                    version: Version::V2,
                    list: vec![Hierarchy {
                        controllers: ctrls,
                        parent: dir,
                    }],
                });
            }
        }
    }
    let mut list: Vec<Hierarchy> = Vec::new();
    for m in mounts.iter().filter(|m| m.version == Version::V1) {
        if m.controllers.is_empty() {
            continue;
        }
        let mut key = m.controllers.clone();
        key.sort();
        // The same hierarchy may be mounted twice: take it once.
        if list.iter().any(|h| {
            let mut k = h.controllers.clone();
            k.sort();
            k == key
        }) {
            continue;
        }
        let Some((_, path)) = v1_paths.iter().find(|(c, _)| *c == key) else {
            continue;
        };
        if let Some(dir) = own_dir(m, path) {
            list.push(Hierarchy {
                controllers: m.controllers.clone(),
                parent: dir,
            });
        }
    }
    if list.is_empty() {
        return Err(if mounts.is_empty() {
            "no control group file system is mounted".into()
        } else {
            "no mounted control group hierarchy has the cpu or memory controllers".into()
        });
    }
    Ok(Hierarchies {
        version: Version::V1,
        list,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const HYBRID: &str = "\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
34 31 0:31 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
36 31 0:33 / /sys/fs/cgroup/devices rw,relatime - cgroup cgroup rw,devices
37 31 0:34 / /sys/fs/cgroup/freezer rw,relatime - cgroup cgroup rw,freezer
39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";
    const HYBRID_OWN: &str = "\
9:name=systemd:/
8:pids:/
6:freezer:/
5:devices:/
4:memory:/process_api/abc
3:cpuset:/
2:cpuacct:/
1:cpu:/
0::/
";

    #[test]
    fn v1_controllers_beside_an_empty_v2_tree_choose_v1() {
        let mounts = parse_mounts(HYBRID);
        assert_eq!(mounts.len(), 9);
        let h = choose(&mounts, HYBRID_OWN, &|_| Some("hugetlb\n".into())).unwrap();
        assert_eq!(h.version, Version::V1);
        let mut names: Vec<&str> = h.list.iter().map(|h| h.controllers[0].as_str()).collect();
        names.sort();
        assert_eq!(
            names,
            ["cpu", "cpuacct", "cpuset", "freezer", "memory", "pids"]
        );
        assert_eq!(
            h.find("memory").unwrap().parent,
            PathBuf::from("/sys/fs/cgroup/memory/process_api/abc")
        );
        assert_eq!(
            h.find("cpuset").unwrap().parent,
            PathBuf::from("/sys/fs/cgroup/cpuset")
        );
        assert!(h.find("devices").is_none());
    }

    #[test]
    fn v2_with_controllers_is_preferred() {
        let info = "30 23 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n";
        let own = "0::/user.slice/session-1.scope\n";
        let h = choose(&parse_mounts(info), own, &|p| {
            assert_eq!(p, Path::new("/sys/fs/cgroup/user.slice/session-1.scope"));
            Some("cpuset cpu io memory pids\n".into())
        })
        .unwrap();
        assert_eq!(h.version, Version::V2);
        assert_eq!(h.list.len(), 1);
        assert!(h.list[0].has("cpuset") && h.list[0].has("memory"));
    }

    #[test]
    fn comounted_controllers_and_container_roots() {
        let info = "\
1 0 0:1 /docker/x /sys/fs/cgroup/cpu,cpuacct ro - cgroup cgroup rw,cpu,cpuacct
2 0 0:2 /docker/x /sys/fs/cgroup/memory ro - cgroup cgroup rw,memory
";
        let own = "3:cpuacct,cpu:/docker/x\n2:memory:/docker/x/inner\n";
        let h = choose(&parse_mounts(info), own, &|_| None).unwrap();
        assert_eq!(h.version, Version::V1);
        let cpu = h.find("cpuacct").unwrap();
        assert!(cpu.has("cpu"));
        assert_eq!(cpu.parent, PathBuf::from("/sys/fs/cgroup/cpu,cpuacct"));
        assert_eq!(
            h.find("memory").unwrap().parent,
            PathBuf::from("/sys/fs/cgroup/memory/inner")
        );
    }

    #[test]
    fn nothing_mounted_says_so() {
        let e = choose(&[], "0::/\n", &|_| None).unwrap_err();
        assert!(e.contains("no control group file system"), "{e}");
        let info = "41 31 0:38 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n";
        let e = choose(&parse_mounts(info), "0::/\n", &|_| Some(String::new())).unwrap_err();
        assert!(e.contains("cpu or memory"), "{e}");
    }

    #[test]
    fn escaped_mount_points() {
        assert_eq!(unescape(r"/a\040b"), "/a b");
        assert_eq!(unescape(r"/plain"), "/plain");
    }
}
