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
        if c.with_server {
            shared |= p.shared;
            generators.push(GeneratorSite {
                cpus: Some(p.generator.clone()),
                default_threads: threads_per_generator(p.generator.len(), c.machine_share),
            });
        } else {
            generators.push(GeneratorSite {
                cpus: None,
                default_threads: threads_per_generator(c.info.cpus.len(), c.machine_share),
            });
        }
    }
    Sites {
        server: p.server,
        generators,
        shared,
    }
}

/// Where `load`'s generators run (the server is not ours to place): one on
/// an ssh host has that machine's CPUs; the ones on this machine (here or
/// in namespaces) are held to `cpus` when given, else to every CPU this
/// process may use. Generators on one machine share its CPUs.
pub fn load_sites(layout: &Layout, cpus: Option<&[usize]>) -> Vec<GeneratorSite> {
    layout
        .clients
        .iter()
        .map(|c| match c.host {
            crate::host::Host::Ssh(_) => GeneratorSite {
                cpus: None,
                default_threads: threads_per_generator(c.info.cpus.len(), c.machine_share),
            },
            _ => local_site(cpus, c.machine_share),
        })
        .collect()
}

/// Where the one load generator of a load at a URL runs when nothing is
/// split (`load`, a suite of `[[service]]`s): on this machine, held to
/// `cpus` when given, a thread per CPU it may use; the rule of
/// [`load_sites`] for one generator, so both decide alike.
pub fn url_generator(cpus: Option<&[usize]>) -> GeneratorSite {
    local_site(cpus, 1)
}

/// A generator on this machine, one of `machine_share` there.
fn local_site(cpus: Option<&[usize]>, machine_share: usize) -> GeneratorSite {
    GeneratorSite {
        cpus: cpus.map(<[usize]>::to_vec),
        default_threads: threads_per_generator(
            cpus.map_or_else(fairbench_engine::default_threads, <[usize]>::len),
            machine_share,
        ),
    }
}

/// A generator's default thread count: one per CPU of its machine's share,
/// at least one (several generators on a 1-CPU share still each need a
/// thread).
pub fn threads_per_generator(cpus: usize, machine_share: usize) -> usize {
    (cpus / machine_share.max(1)).max(1)
}

/// Where the database of the database scenarios runs for one case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DbPlace {
    pub cpus: Vec<usize>,
    /// Why it shares CPUs, when it does: the warning the case carries.
    pub warning: Option<String>,
}

/// Takes CPUs for the database out of the generators' side of `sites`,
/// never out of the server's: the server's cpuset always excludes the
/// database's, so that the server's CPU time holds none of the database's
/// work. One CPU of its own when the generators keep at least one;
/// otherwise it shares the generators' CPUs (or, with nothing else left,
/// the server's), and the case says so.
pub fn place_database(sites: &mut Sites, all: &[usize]) -> DbPlace {
    let mut generator: Vec<usize> = sites
        .generators
        .iter()
        .filter_map(|g| g.cpus.clone())
        .flatten()
        .filter(|c| !sites.server.contains(c))
        .collect();
    generator.sort_unstable();
    generator.dedup();
    if generator.len() >= 2 {
        let db = *generator.last().expect("two CPUs");
        for g in sites.generators.iter_mut() {
            if let Some(c) = g.cpus.as_mut() {
                if c.len() > 1 {
                    c.retain(|&x| x != db);
                    g.default_threads = g.default_threads.min(c.len()).max(1);
                }
            }
        }
        return DbPlace {
            cpus: vec![db],
            warning: None,
        };
    }
    if !generator.is_empty() {
        return DbPlace {
            warning: Some(format!(
                "the database shared CPU {} with the load generator: this machine has too few CPUs to give it one of its own (the server's CPUs were its own)",
                format_cpus(&generator)
            )),
            cpus: generator,
        };
    }
    // The generators run elsewhere (or share the server's CPUs).
    let rest: Vec<usize> = all
        .iter()
        .copied()
        .filter(|c| !sites.server.contains(c))
        .collect();
    if !rest.is_empty() && !sites.shared {
        return DbPlace {
            cpus: rest,
            warning: None,
        };
    }
    DbPlace {
        cpus: sites.server.clone(),
        warning: Some(format!(
            "the database shared CPUs {} with the server: this machine has too few CPUs to separate them; its CPU is counted apart, but both competed for the same CPUs",
            format_cpus(&sites.server)
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn local(server: Vec<usize>, generator: Vec<usize>, shared: bool) -> Sites {
        Sites {
            server,
            generators: vec![GeneratorSite {
                default_threads: generator.len(),
                cpus: Some(generator),
            }],
            shared,
        }
    }

    #[test]
    fn generators_on_one_machine_share_its_cpus_and_each_keeps_a_thread() {
        let layout = Layout::for_load(&crate::topology::ClientArgs {
            clients: 3,
            ..Default::default()
        })
        .unwrap();
        let six = load_sites(&layout, Some(&[0, 1, 2, 3, 4, 5]));
        assert_eq!(six.len(), 3);
        for g in &six {
            assert_eq!(g.default_threads, 2);
            assert_eq!(g.cpus.as_deref(), Some(&[0, 1, 2, 3, 4, 5][..]));
        }
        // Three generators on one CPU: one thread each, never none.
        for g in load_sites(&layout, Some(&[0])) {
            assert_eq!(g.default_threads, 1);
        }
        assert_eq!(threads_per_generator(1, 3), 1);
        assert_eq!(threads_per_generator(8, 0), 8);
    }

    #[test]
    fn the_database_gets_a_generator_cpu_when_one_is_left() {
        let mut s = local(vec![3], vec![0, 1, 2], false);
        let d = place_database(&mut s, &[0, 1, 2, 3]);
        assert_eq!(
            d,
            DbPlace {
                cpus: vec![2],
                warning: None
            }
        );
        assert_eq!(s.generators[0].cpus, Some(vec![0, 1]));
        assert_eq!(s.generators[0].default_threads, 2);
        assert_eq!(s.server, vec![3]);
    }

    #[test]
    fn on_two_cpus_it_shares_the_generators_never_the_servers() {
        let mut s = local(vec![1], vec![0], false);
        let d = place_database(&mut s, &[0, 1]);
        assert_eq!(d.cpus, vec![0]);
        assert!(d
            .warning
            .unwrap()
            .starts_with("the database shared CPU 0 with the load generator"));
        assert_eq!(s.generators[0].cpus, Some(vec![0]));
        let mut s = local(vec![0, 1], vec![0, 1], true);
        let d = place_database(&mut s, &[0, 1]);
        assert_eq!(d.cpus, vec![0, 1]);
        assert!(d.warning.unwrap().contains("with the server"));
    }

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
