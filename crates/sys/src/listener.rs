//! Whose socket a server's port is: a connect that succeeds says only that
//! *something* listens there. Another process that took the port first (a
//! stale server, a concurrent run that chose the same free port) would
//! answer the readiness probe and then every request of the run, and its
//! figures would be stored as the server's. So once the port answers, the
//! sockets bound to it (in the server's own network namespace, from
//! /proc/PID/net) are matched to the processes holding them (their
//! /proc/PID/fd links), and one held only by a process that is not the
//! server's is named and refused.
//!
//! A holder is the server's when it is one of its processes (its control
//! group, or its process group), or, without a control group, when it
//! started no earlier than the server: a daemon that left the process
//! group is the server's child, and only a process older than the server
//! can have held the port before it. Where /proc cannot tell (a holder's
//! fds unreadable, no entry for the port), nothing is refused: the check
//! only ever acts on evidence.

use std::collections::HashMap;

use crate::containment::name::start_time;

/// The transport a server listens on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Proto {
    /// A TCP socket in the LISTEN state.
    Tcp,
    /// A bound UDP socket (QUIC).
    Udp,
}

impl Proto {
    fn tables(self) -> [&'static str; 2] {
        match self {
            Proto::Tcp => ["tcp", "tcp6"],
            Proto::Udp => ["udp", "udp6"],
        }
    }
}

/// What the server's processes are, for [`foreign_holder`].
pub struct Server<'a> {
    pub leader: u32,
    pub members: &'a [u32],
    /// `members` is a control group's: every process of the server, so one
    /// outside it is not the server's whatever its age.
    pub contained: bool,
}

/// The process holding a socket on `port` that is not the server's, as
/// "pid N (comm)", when there is one.
pub fn foreign_holder(server: &Server<'_>, port: u16, proto: Proto) -> Option<String> {
    // A leader that has exited (a launcher that started the server and
    // left) has no /proc: the namespace is read through a member instead.
    let inodes = std::iter::once(&server.leader)
        .chain(server.members)
        .map(|&pid| bound_sockets(pid, port, proto))
        .find(|found| !found.is_empty())?;
    let holders = holders_of(&inodes);
    // Contained, membership alone decides, and the leader's age is not
    // needed; otherwise it is, and without it nothing is refused.
    let leader_start = match server.contained {
        true => None,
        false => Some(start_time(server.leader)?),
    };
    inodes.iter().find_map(|inode| {
        let pids = holders.get(inode)?;
        let ours = |&pid: &u32| {
            server.members.contains(&pid)
                || leader_start.is_some_and(|l| start_time(pid).is_some_and(|s| s >= l))
        };
        if pids.iter().any(ours) {
            return None;
        }
        let pid = *pids.first()?;
        Some(format!("pid {pid} ({})", comm(pid)))
    })
}

/// The inodes of the sockets bound to `port` in the network namespace of
/// process `pid`: TCP listeners, or UDP sockets.
fn bound_sockets(pid: u32, port: u16, proto: Proto) -> Vec<u64> {
    proto
        .tables()
        .iter()
        .filter_map(|t| std::fs::read_to_string(format!("/proc/{pid}/net/{t}")).ok())
        .flat_map(|text| parse_table(&text, port, proto))
        .collect()
}

/// The inodes of one /proc/net/{tcp,tcp6,udp,udp6} table's sockets bound
/// to `port` (TCP: listening only). Each line: `sl local rem st … inode`,
/// the local address as HEXADDR:HEXPORT.
fn parse_table(text: &str, port: u16, proto: Proto) -> Vec<u64> {
    text.lines()
        .skip(1)
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            let local_port = u16::from_str_radix(f.get(1)?.rsplit_once(':')?.1, 16).ok()?;
            // 0A: TCP_LISTEN; 07: TCP_CLOSE, an unconnected UDP socket's.
            let state_ok = match proto {
                Proto::Tcp => *f.get(3)? == "0A",
                Proto::Udp => true,
            };
            let inode: u64 = f.get(9)?.parse().ok()?;
            (local_port == port && state_ok && inode != 0).then_some(inode)
        })
        .collect()
}

/// Which processes hold each of `inodes` open, from every readable
/// /proc/PID/fd.
fn holders_of(inodes: &[u64]) -> HashMap<u64, Vec<u32>> {
    let mut found: HashMap<u64, Vec<u32>> = HashMap::new();
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return found;
    };
    for pid in procs.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok()) {
        let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
            continue;
        };
        for fd in fds.flatten() {
            let Some(inode) = std::fs::read_link(fd.path())
                .ok()
                .and_then(|l| socket_inode(l.to_str()?))
            else {
                continue;
            };
            if inodes.contains(&inode) {
                let pids = found.entry(inode).or_default();
                if !pids.contains(&pid) {
                    pids.push(pid);
                }
            }
        }
    }
    found
}

/// `socket:[12345]` → 12345.
fn socket_inode(link: &str) -> Option<u64> {
    link.strip_prefix("socket:[")?
        .strip_suffix(']')?
        .parse()
        .ok()
}

fn comm(pid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .map(|s| crate::text::visible(s.trim_end()))
        .unwrap_or_else(|_| "gone".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{TcpListener, UdpSocket};

    const TCP: &str = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4242 1 0000000000000000 100 0 0 10 0
   1: 0100007F:1F90 0100007F:C350 01 00000000:00000000 00:00000000 00000000     0        0 4343 1 0000000000000000 20 4 30 10 -1
   2: 0100007F:1F91 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4444 1 0000000000000000 100 0 0 10 0
";

    #[test]
    fn a_table_gives_the_listeners_on_the_port_only() {
        // 0x1F90 = 8080: the listener, not the connection accepted on it.
        assert_eq!(parse_table(TCP, 8080, Proto::Tcp), vec![4242]);
        assert_eq!(parse_table(TCP, 8081, Proto::Tcp), vec![4444]);
        assert!(parse_table(TCP, 80, Proto::Tcp).is_empty());
        assert_eq!(parse_table(TCP, 8080, Proto::Udp), vec![4242, 4343]);
        assert_eq!(socket_inode("socket:[77]"), Some(77));
        assert_eq!(socket_inode("pipe:[77]"), None);
    }

    #[test]
    fn a_port_held_by_an_older_process_is_foreign_and_named() {
        // This test process took the port; a "server" started after it
        // (the shell) holds nothing there.
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        // Start times count in clock ticks (10 ms at USER_HZ 100): a test
        // run first in its binary could spawn within this process's own
        // tick, and a holder as old as the server is taken for its.
        std::thread::sleep(std::time::Duration::from_millis(30));
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        let server = Server {
            leader: child.id(),
            members: &[child.id()],
            contained: false,
        };
        let me = std::process::id();
        let found = foreign_holder(&server, port, Proto::Tcp);
        assert_eq!(
            found
                .as_deref()
                .map(|s| s.starts_with(&format!("pid {me} ("))),
            Some(true),
            "{found:?}"
        );
        // Ours when we are among the server's processes.
        let ours = Server {
            leader: child.id(),
            members: &[child.id(), me],
            contained: true,
        };
        assert_eq!(foreign_holder(&ours, port, Proto::Tcp), None);
        let u = UdpSocket::bind("127.0.0.1:0").unwrap();
        let uport = u.local_addr().unwrap().port();
        assert!(foreign_holder(&server, uport, Proto::Udp).is_some());
        // Nothing bound there: nothing to refuse.
        drop(l);
        assert_eq!(foreign_holder(&server, port, Proto::Tcp), None);
        let _ = child.kill();
        let _ = child.wait();
    }

    #[test]
    fn without_a_control_group_a_younger_holder_is_taken_for_the_servers() {
        // A daemon that left the server's process group started after it.
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let me = std::process::id();
        let server = Server {
            // The leader is this process's parent, started before it.
            leader: std::os::unix::process::parent_id(),
            members: &[],
            contained: false,
        };
        assert_eq!(foreign_holder(&server, port, Proto::Tcp), None);
        let contained = Server {
            contained: true,
            ..server
        };
        let found = foreign_holder(&contained, port, Proto::Tcp);
        assert!(found.is_some_and(|s| s.starts_with(&format!("pid {me} "))));
    }

    #[test]
    fn a_contained_server_whose_leader_left_is_still_checked() {
        // The leader exited (a launcher); the group's one member is a
        // child started after this process, which holds the port.
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let mut gone = std::process::Command::new("true").spawn().unwrap();
        let leader = gone.id();
        gone.wait().unwrap();
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        let me = std::process::id();
        let server = Server {
            leader,
            members: &[child.id()],
            contained: true,
        };
        let found = foreign_holder(&server, port, Proto::Tcp);
        let _ = child.kill();
        let _ = child.wait();
        assert!(
            found
                .as_deref()
                .is_some_and(|s| s.starts_with(&format!("pid {me} "))),
            "{found:?}"
        );
    }
}
