//! The one load planner: a load configuration split over the generators of
//! a layout — connections, threads and rate shared out, each generator's
//! schedule offset so that together they are one evenly spaced stream, its
//! CPUs, and the server as it reaches it — for `fairbench load` and for the
//! runner alike.

use fairbench_engine::{ConfigError, GeneratorShare, LoadConfig, LoadModel};

use super::Job;
use crate::topology::Layout;

/// Where one generator may run its threads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GeneratorSite {
    /// The CPUs its threads are pinned to; `None`: its machine's own choice.
    pub cpus: Option<Vec<usize>>,
    /// Its threads when the load names none.
    pub default_threads: usize,
}

/// How the generators address the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Aim {
    /// At the target as given (a URL the user chose for all of them).
    AsGiven,
    /// At the server address of each generator's place in the layout, the
    /// target's port and path kept.
    EachSite,
}

/// The load as its generators run it: one job per generator.
pub struct LoadSplit {
    pub jobs: Vec<Job>,
    /// One generator, on this machine's own network: run in this process.
    here: bool,
    /// Each generator's link to the server.
    link: crate::topology::Link,
}

#[derive(Debug)]
pub enum SplitError {
    /// Fewer connections than generators.
    TooFewConnections {
        connections: usize,
        generators: usize,
    },
    /// A generator's address of the server is not a target.
    Target(ConfigError),
}

impl std::fmt::Display for SplitError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SplitError::TooFewConnections {
                connections,
                generators,
            } => write!(
                f,
                "{connections} connections cannot be split over {generators} load generators"
            ),
            SplitError::Target(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for SplitError {}

/// Splits `base` over `layout`'s generators, one [`GeneratorSite`] each:
/// connections and `threads` (or each site's default) shared out, a
/// constant rate divided, and generator `i` of `n` offsetting its schedule
/// by `i/R`. A request count stays the whole load's: each generator's
/// engine plans its share of the whole schedule's slots
/// (`LoadConfig::requests`). For a single generator this is `base` with its
/// site's threads and CPUs.
pub fn split(
    base: &LoadConfig,
    layout: &Layout,
    sites: &[GeneratorSite],
    threads: Option<usize>,
    aim: Aim,
) -> Result<LoadSplit, SplitError> {
    let n = layout.clients.len();
    debug_assert_eq!(sites.len(), n, "one site per generator");
    if base.connections < n {
        return Err(SplitError::TooFewConnections {
            connections: base.connections,
            generators: n,
        });
    }
    let mut jobs = Vec::with_capacity(n);
    for (i, (c, site)) in layout.clients.iter().zip(sites).enumerate() {
        let mut cfg = base.clone();
        if aim == Aim::EachSite {
            cfg.target = base
                .target
                .on_host(&c.server_addr)
                .map_err(SplitError::Target)?;
        }
        cfg.connections = share(base.connections, n, i);
        // Threads beyond the connections would have nothing to do.
        cfg.threads = match threads {
            Some(t) => share(t.max(n), n, i),
            None => site.default_threads,
        }
        .min(cfg.connections)
        .max(1);
        if let LoadModel::ConstantRate { rps } = base.model {
            cfg.model = LoadModel::ConstantRate {
                rps: rps / n as f64,
            };
        }
        // Generator i of n offsets its schedule by i/R: together they are
        // one evenly spaced stream, not n requests at the same instant.
        cfg.share = GeneratorShare { index: i, count: n };
        cfg.cpus = site.cpus.clone();
        jobs.push(Job {
            host: c.host.clone(),
            config: cfg,
        });
    }
    Ok(LoadSplit {
        jobs,
        here: layout.in_process(),
        link: layout.link,
    })
}

impl LoadSplit {
    /// The fleet's warnings, and one for each generator whose answers
    /// filled its shaped link (see [`crate::topology::Link::filled`]).
    pub fn warnings(&self, f: &crate::fleet::FleetOutcome) -> Vec<String> {
        let filled = f
            .parts
            .iter()
            .filter_map(|p| self.link.filled(&p.host, &p.outcome));
        f.warnings.iter().cloned().chain(filled).collect()
    }

    /// The configuration to run in this process, when the load is one
    /// generator here.
    pub fn in_process(&self) -> Option<&LoadConfig> {
        self.here.then(|| &self.jobs[0].config)
    }

    /// The first generator's configuration: the request and timeout all
    /// share.
    pub fn first(&self) -> &LoadConfig {
        &self.jobs[0].config
    }
}

/// Splits a total of `n` into `k` shares that differ by at most one, the
/// larger ones first.
pub fn share(n: usize, k: usize, i: usize) -> usize {
    n / k + usize::from(i < n % k)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::{ClientArgs, ServerArgs};
    use fairbench_engine::Target;

    fn local(generators: usize) -> Layout {
        let c = ClientArgs {
            clients: generators,
            ..ClientArgs::default()
        };
        Layout::for_run(&c, &ServerArgs::default()).unwrap()
    }

    fn site(cpus: &[usize], threads: usize) -> GeneratorSite {
        GeneratorSite {
            cpus: Some(cpus.to_vec()),
            default_threads: threads,
        }
    }

    #[test]
    fn one_load_over_three_generators() {
        let layout = local(3);
        let mut base = LoadConfig::new(Target::parse("http://localhost:8080/x").unwrap());
        base.connections = 50;
        base.model = LoadModel::ConstantRate { rps: 3000.0 };
        base.requests = Some(10_000);
        let sites = [site(&[0], 1), site(&[1], 2), site(&[2], 40)];
        let s = split(&base, &layout, &sites, None, Aim::EachSite).unwrap();
        assert!(s.in_process().is_none(), "several generators run as agents");
        let c: Vec<&LoadConfig> = s.jobs.iter().map(|j| &j.config).collect();
        assert_eq!(
            c.iter().map(|c| c.connections).collect::<Vec<_>>(),
            [17, 17, 16]
        );
        // The whole count: each engine takes its share of the whole
        // schedule (`fairbench_engine::LoadConfig::requests`).
        assert!(c.iter().all(|c| c.requests == Some(10_000)));
        // Each site's default, but never more threads than connections.
        assert_eq!(c.iter().map(|c| c.threads).collect::<Vec<_>>(), [1, 2, 16]);
        for (i, c) in c.iter().enumerate() {
            assert_eq!(c.model, LoadModel::ConstantRate { rps: 1000.0 });
            assert_eq!(c.share, GeneratorShare { index: i, count: 3 });
            assert_eq!(c.cpus, Some(vec![i]));
            // Aimed at each generator's address of the server, port and
            // path kept.
            assert_eq!(c.target.url, "http://127.0.0.1:8080/x");
        }
        let t = split(&base, &layout, &sites, Some(4), Aim::AsGiven).unwrap();
        let threads: Vec<usize> = t.jobs.iter().map(|j| j.config.threads).collect();
        assert_eq!(threads, [2, 1, 1], "named threads are shared out too");
        assert_eq!(t.jobs[0].config.target.url, "http://localhost:8080/x");
    }

    #[test]
    fn one_generator_here_runs_in_process() {
        let layout = local(1);
        let mut base = LoadConfig::new(Target::parse("http://127.0.0.1:9/").unwrap());
        base.connections = 10;
        let s = split(&base, &layout, &[site(&[0, 1], 2)], None, Aim::EachSite).unwrap();
        let cfg = s.in_process().expect("in process");
        assert_eq!((cfg.connections, cfg.threads), (10, 2));
        assert_eq!(cfg.model, LoadModel::ClosedLoop);
        assert_eq!(cfg.share, GeneratorShare::default());
    }

    #[test]
    fn too_few_connections_are_refused() {
        let layout = local(2);
        let mut base = LoadConfig::new(Target::parse("http://127.0.0.1:9/").unwrap());
        base.connections = 1;
        let e = split(
            &base,
            &layout,
            &[site(&[0], 1), site(&[1], 1)],
            None,
            Aim::AsGiven,
        )
        .err()
        .unwrap();
        assert_eq!(
            e.to_string(),
            "1 connections cannot be split over 2 load generators"
        );
    }

    #[test]
    fn shares_add_up() {
        for (n, k) in [(50, 3), (7, 7), (100, 1), (5, 2)] {
            let total: usize = (0..k).map(|i| share(n, k, i)).sum();
            assert_eq!(total, n);
            let max = (0..k).map(|i| share(n, k, i)).max().unwrap();
            let min = (0..k).map(|i| share(n, k, i)).min().unwrap();
            assert!(max - min <= 1);
        }
    }
}
