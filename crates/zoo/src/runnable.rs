//! Which of a server's variants can run here, and why the others cannot:
//! the one rule `servers`, `check` and `run` (the suite plan) apply, so
//! that what one command calls runnable another cannot skip.
//!
//! A server runs a (mode, response, scenario, protocol) when its toolchain
//! is present here, its manifest implements the scenario, has the response
//! shape (`study` only for the servers a publication measured), serves the
//! protocol, and does not mark the mode unsupported. The dimensions are
//! looked at in that order and the first one left empty ends the look:
//! nothing of the server runs, for that reason, and the ones after it are
//! not listed (a server without its toolchain has no protocol to miss).

use crate::manifest::{ResponseKind, Server, Socket};
use crate::toolchain::ToolchainStatus;
use crate::{Protocol, Scenario};

/// What a command asks of each server.
pub struct Wanted<'a> {
    pub scenarios: &'a [&'a Scenario],
    pub responses: &'a [ResponseKind],
    pub protocols: &'a [Protocol],
}

/// Why something asked for does not run.
#[derive(Debug, Clone, PartialEq)]
pub enum Gap {
    /// The whole server: its toolchain is not on this machine.
    Toolchain { reason: String },
    /// One scenario the manifest does not list, or says why it does not
    /// implement (`why`).
    Scenario {
        scenario: String,
        listed: Vec<String>,
        why: Option<String>,
    },
    /// The whole server: none of the response shapes asked for (only a
    /// publication's own, `study` or `post2012-*`, can be missing).
    NoResponse { asked: Vec<ResponseKind> },
    /// One protocol the server does not serve.
    Protocol { protocol: Protocol, why: String },
    /// One mode the manifest marks unsupported.
    Mode { mode: String, why: String },
    /// The whole server: it cannot be told to listen on the socket asked
    /// for (a suite's or check's `address_family = "unix"`).
    Socket { socket: Socket, why: String },
}

impl Gap {
    /// Why, in the words every command prints after the server's name
    /// (and the scenario, protocol or mode, which each prints its way).
    pub fn reason(&self) -> String {
        match self {
            Gap::Toolchain { reason } => reason.clone(),
            Gap::Scenario { why: Some(why), .. } => format!("not implemented: {why}"),
            Gap::Scenario { listed, .. } => {
                format!("not implemented (server.toml lists {})", listed.join(", "))
            }
            Gap::NoResponse { asked } => format!(
                "has no {} response (no publication measured it with that code; docs/study.md)",
                asked
                    .iter()
                    .map(|k| k.as_str())
                    .collect::<Vec<_>>()
                    .join(" or ")
            ),
            Gap::Protocol { protocol, why } => {
                format!("does not serve {}: {why}", protocol.describe())
            }
            Gap::Mode { why, .. } => format!("unsupported: {why}"),
            Gap::Socket { socket, why } => format!("cannot listen on a {socket} socket: {why}"),
        }
    }
}

/// What of a server runs, and the gaps found on the way.
#[derive(Debug)]
pub struct Runnable<'s, 'a> {
    pub modes: Vec<&'s str>,
    pub scenarios: Vec<&'a Scenario>,
    pub responses: Vec<ResponseKind>,
    pub protocols: Vec<Protocol>,
    pub gaps: Vec<Gap>,
}

impl<'a> Runnable<'_, 'a> {
    /// Nothing of the server runs.
    pub fn is_empty(&self) -> bool {
        self.modes.is_empty()
            || self.scenarios.is_empty()
            || self.responses.is_empty()
            || self.protocols.is_empty()
    }

    /// Each case of one mode: response, scenario and protocol, in that
    /// order of nesting.
    pub fn cases(&self) -> impl Iterator<Item = (ResponseKind, &'a Scenario, Protocol)> + '_ {
        self.responses.iter().flat_map(move |&r| {
            self.scenarios
                .iter()
                .flat_map(move |&sc| self.protocols.iter().map(move |&p| (r, sc, p)))
        })
    }
}

/// Why h2 is not spoken over a unix socket.
pub const NO_TLS_OVER_UNIX: &str =
    "h2 over TLS is not offered over a unix socket (HTTP/1.1 and h2c are)";

impl Runnable<'_, '_> {
    /// What of it runs listening on `socket`: nothing when its manifest
    /// does not list the socket (one gap, after a missing toolchain's), and
    /// over a unix socket no h2 (TLS is TCP's here).
    pub fn on_socket(&mut self, server: &Server, socket: Socket) {
        if socket == Socket::Tcp || self.is_empty() {
            return;
        }
        if !server.listens(socket) {
            self.gaps.push(Gap::Socket {
                socket,
                why: server.why_not_listen(socket),
            });
            self.modes.clear();
            return;
        }
        if self.protocols.contains(&Protocol::H2) {
            self.protocols.retain(|p| !p.tls());
            self.gaps.push(Gap::Protocol {
                protocol: Protocol::H2,
                why: NO_TLS_OVER_UNIX.into(),
            });
        }
    }
}

/// What of `server` runs here among `wanted` and the `modes` asked for
/// (the caller chooses those by name or pattern), given its toolchain's
/// `status`.
pub fn runnable<'s, 'a>(
    server: &'s Server,
    status: &ToolchainStatus,
    wanted: &Wanted<'a>,
    modes: impl IntoIterator<Item = &'s str>,
) -> Runnable<'s, 'a> {
    let mut r = Runnable {
        modes: Vec::new(),
        scenarios: Vec::new(),
        responses: Vec::new(),
        protocols: Vec::new(),
        gaps: Vec::new(),
    };
    if let ToolchainStatus::Unavailable { reason } = status {
        r.gaps.push(Gap::Toolchain {
            reason: reason.clone(),
        });
        return r;
    }
    for &sc in wanted.scenarios {
        if server.implements(&sc.name) {
            r.scenarios.push(sc);
        } else {
            r.gaps.push(Gap::Scenario {
                scenario: sc.name.clone(),
                listed: server.scenarios.clone().unwrap_or_default(),
                why: server.scenarios_unsupported.get(&sc.name).cloned(),
            });
        }
    }
    if r.scenarios.is_empty() {
        return r;
    }
    r.responses = wanted
        .responses
        .iter()
        .copied()
        .filter(|&k| server.has_response(k))
        .collect();
    if r.responses.is_empty() {
        r.gaps.push(Gap::NoResponse {
            asked: wanted.responses.to_vec(),
        });
        return r;
    }
    for &p in wanted.protocols {
        if server.serves(p) {
            r.protocols.push(p);
        } else {
            r.gaps.push(Gap::Protocol {
                protocol: p,
                why: server.why_not(p),
            });
        }
    }
    if r.protocols.is_empty() {
        return r;
    }
    for name in modes {
        match server.modes.get(name).and_then(|m| m.unsupported.as_ref()) {
            Some(why) => r.gaps.push(Gap::Mode {
                mode: name.to_string(),
                why: why.clone(),
            }),
            None => r.modes.push(name),
        }
    }
    r
}

/// Whether `mode` of `server` can run here at all (any scenario, response
/// and protocol its manifest has), given its toolchain's `status`: what
/// `servers` lists as runnable.
pub fn mode_runs(server: &Server, mode: &str, status: &ToolchainStatus) -> bool {
    status.is_present()
        && server
            .modes
            .get(mode)
            .is_some_and(|m| m.unsupported.is_none())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Zoo;

    fn zoo() -> Zoo {
        Zoo::load(&crate::find_root(std::path::Path::new(env!("CARGO_MANIFEST_DIR"))).unwrap())
            .unwrap()
    }

    #[test]
    fn a_missing_toolchain_ends_the_look_with_one_gap() {
        let zoo = zoo();
        let s = &zoo.servers[0];
        let scenarios: Vec<&Scenario> = zoo.scenarios.iter().collect();
        let wanted = Wanted {
            scenarios: &scenarios,
            responses: &ResponseKind::STANDARD,
            protocols: &Protocol::ALL,
        };
        let gone = ToolchainStatus::Unavailable {
            reason: "dart not found".into(),
        };
        let r = runnable(s, &gone, &wanted, s.modes.keys().map(String::as_str));
        assert!(r.is_empty());
        assert_eq!(r.gaps.len(), 1);
        assert_eq!(r.gaps[0].reason(), "dart not found");
        assert!(!mode_runs(s, s.modes.keys().next().unwrap(), &gone));
    }

    #[test]
    fn each_dimension_keeps_what_the_manifest_has_and_names_the_rest() {
        let zoo = zoo();
        let present = ToolchainStatus::Present { version: None };
        // A server that lists its scenarios, and one that serves only some
        // protocols: the zoo has both.
        let listed = zoo
            .servers
            .iter()
            .find(|s| s.scenarios.is_some())
            .expect("a server listing its scenarios");
        let scenarios: Vec<&Scenario> = zoo.scenarios.iter().collect();
        let wanted = Wanted {
            scenarios: &scenarios,
            responses: &ResponseKind::STANDARD,
            protocols: &[Protocol::Http1],
        };
        let r = runnable(
            listed,
            &present,
            &wanted,
            listed.modes.keys().map(String::as_str),
        );
        for sc in &r.scenarios {
            assert!(listed.implements(&sc.name));
        }
        let missing = scenarios
            .iter()
            .filter(|s| !listed.implements(&s.name))
            .count();
        let gaps = r
            .gaps
            .iter()
            .filter(|g| matches!(g, Gap::Scenario { .. }))
            .count();
        assert_eq!(gaps, missing);
        assert!(r.gaps.iter().all(|g| !g.reason().is_empty()));
        for s in &zoo.servers {
            let r = runnable(s, &present, &wanted, s.modes.keys().map(String::as_str));
            for m in &r.modes {
                assert!(mode_runs(s, m, &present));
                assert!(s.modes[*m].unsupported.is_none());
            }
            let unsupported = s.modes.values().filter(|m| m.unsupported.is_some());
            if !r.is_empty() {
                assert_eq!(
                    r.gaps
                        .iter()
                        .filter(|g| matches!(g, Gap::Mode { .. }))
                        .count(),
                    unsupported.count()
                );
            }
        }
    }
}
