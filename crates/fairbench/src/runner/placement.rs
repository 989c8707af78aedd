//! Which CPUs the server gets and which the load generator gets.
//!
//! The server takes the highest-numbered CPUs (CPU 0 usually carries more of
//! the kernel's interrupt work) and the generator the rest. When the server
//! needs every CPU there is nothing left to separate, and the case says so.

use serde::Serialize;

use crate::args::format_cpus;
use crate::fleet::split::GeneratorSite;
use crate::topology::Layout;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Placement {
    pub server: Vec<usize>,
    pub generator: Vec<usize>,
    /// Server and generator share CPUs: the numbers compete with the load.
    pub shared: bool,
}

pub fn place(cpus: &[usize], cores: usize) -> Placement {
    let cores = cores.clamp(1, cpus.len().max(1));
    if cores >= cpus.len() {
        return Placement {
            server: cpus.to_vec(),
            generator: cpus.to_vec(),
            shared: true,
        };
    }
    let split = cpus.len() - cores;
    Placement {
        server: cpus[split..].to_vec(),
        generator: cpus[..split].to_vec(),
        shared: false,
    }
}

/// Where one case's server and load generators run on their machines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sites {
    /// The server's CPUs, on the server's machine.
    pub server: Vec<usize>,
    /// Per load generator: the CPUs its threads are pinned to (`None` for
    /// a machine of its own: all of its CPUs), and its threads when the
    /// load profile names none.
    pub generators: Vec<GeneratorSite>,
    /// A generator shares CPUs with the server.
    pub shared: bool,
}

impl Sites {
    /// For the results database: the generators' CPU list on the server's
    /// machine, or `elsewhere` when they all run on other machines.
    pub fn generator_label(&self) -> String {
        let mut here: Vec<usize> = self
            .generators
            .iter()
            .filter_map(|g| g.cpus.as_ref())
            .flatten()
            .copied()
            .collect();
        here.sort_unstable();
        here.dedup();
        if here.is_empty() {
            "elsewhere".into()
        } else {
            format_cpus(&here)
        }
    }
}

/// The server gets `cores` CPUs of its machine; a generator on that machine
/// gets the others (shared between such generators), a generator on a
/// machine of its own gets all of that machine.
pub fn sites(layout: &Layout, local: &[usize], cores: usize) -> Sites {
    let p = place(&layout.server_cpus(local), cores);
    let mut generators = Vec::new();
    let mut shared = false;
    for c in &layout.clients {
        let share = c.machine_share.max(1);
        if c.with_server {
            shared |= p.shared;
            generators.push(GeneratorSite {
                cpus: Some(p.generator.clone()),
                default_threads: (p.generator.len() / share).max(1),
            });
        } else {
            generators.push(GeneratorSite {
                cpus: None,
                default_threads: (c.info.cpus.len() / share).max(1),
            });
        }
    }
    Sites {
        server: p.server,
        generators,
        shared,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn separates_when_it_can() {
        assert_eq!(
            place(&[0, 1], 1),
            Placement {
                server: vec![1],
                generator: vec![0],
                shared: false
            }
        );
        let p = place(&[0, 1, 2, 3], 2);
        assert_eq!(
            (p.server, p.generator, p.shared),
            (vec![2, 3], vec![0, 1], false)
        );
    }

    #[test]
    fn shares_when_the_server_needs_everything() {
        let p = place(&[0, 1], 2);
        assert!(p.shared);
        assert_eq!(p.server, vec![0, 1]);
        assert_eq!(p.generator, vec![0, 1]);
    }
}
