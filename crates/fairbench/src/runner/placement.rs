//! Which CPUs the server gets and which the load generator gets.
//!
//! The server takes the highest-numbered CPUs (CPU 0 usually carries more of
//! the kernel's interrupt work) and the generator the rest. When the server
//! needs every CPU there is nothing left to separate, and the case says so.

use serde::Serialize;

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

/// "0-3,6" style, as taskset and /proc print CPU lists.
pub fn cpu_list(cpus: &[usize]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let start = cpus[i];
        let mut end = start;
        while i + 1 < cpus.len() && cpus[i + 1] == end + 1 {
            i += 1;
            end = cpus[i];
        }
        out.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
        i += 1;
    }
    out.join(",")
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

    #[test]
    fn lists() {
        assert_eq!(cpu_list(&[0, 1, 2, 3, 6]), "0-3,6");
        assert_eq!(cpu_list(&[1]), "1");
    }
}
