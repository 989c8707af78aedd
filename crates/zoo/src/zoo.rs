//! The zoo: every server definition and scenario contract of a fairbench root.

use std::path::{Path, PathBuf};

use crate::error::DefinitionError;
use crate::manifest::Server;
use crate::scenario::Scenario;

/// Everything under a root's `servers/` and `scenarios/`. Invalid files do not
/// stop the load: their errors are kept, per file, next to what loaded.
#[derive(Debug, Clone)]
pub struct Zoo {
    pub root: PathBuf,
    /// Sorted by name.
    pub servers: Vec<Server>,
    /// Sorted by name.
    pub scenarios: Vec<Scenario>,
    pub errors: Vec<DefinitionError>,
}

impl Zoo {
    /// Loads `root/servers/*/server.toml` and `root/scenarios/*.toml`.
    /// Fails only when the folders themselves cannot be read.
    pub fn load(root: &Path) -> std::io::Result<Zoo> {
        let root = std::fs::canonicalize(root)?;
        let mut zoo = Zoo {
            root: root.clone(),
            servers: Vec::new(),
            scenarios: Vec::new(),
            errors: Vec::new(),
        };

        for dir in sorted_entries(&root.join("servers"))? {
            if !dir.is_dir() || is_hidden(&dir) {
                continue;
            }
            let manifest = dir.join("server.toml");
            let shown = relative(&root, &manifest);
            if !manifest.is_file() {
                zoo.errors.push(DefinitionError::file(
                    &shown,
                    "missing: every folder under servers/ needs a server.toml",
                ));
                continue;
            }
            match Server::load(&dir, &shown) {
                Ok(s) => zoo.servers.push(s),
                Err(e) => zoo.errors.extend(e),
            }
        }

        for file in sorted_entries(&root.join("scenarios"))? {
            if file.extension().and_then(|e| e.to_str()) != Some("toml") || !file.is_file() {
                continue;
            }
            let shown = relative(&root, &file);
            match Scenario::load(&file, &shown) {
                Ok(s) => zoo.scenarios.push(s),
                Err(e) => zoo.errors.extend(e),
            }
        }
        zoo.check_scenario_names();
        Ok(zoo)
    }

    /// A manifest's scenario names (the list it implements, those it says
    /// why not, a deviation's scope) must name scenarios that exist; a server with a wrong one is
    /// invalid like any other manifest error.
    fn check_scenario_names(&mut self) {
        let known: Vec<String> = self.scenarios.iter().map(|s| s.name.clone()).collect();
        let mut errors = Vec::new();
        self.servers.retain(|s| {
            let shown = relative(&self.root, &s.manifest_path);
            let unknown = |field: String, name: &str| {
                DefinitionError::field(
                    &shown,
                    field,
                    format!(
                        "no scenario named {name:?}; there are: {}",
                        known.join(", ")
                    ),
                )
            };
            let before = errors.len();
            for (i, name) in s.scenarios.iter().flatten().enumerate() {
                if !known.contains(name) {
                    errors.push(unknown(format!("scenarios[{i}]"), name));
                }
            }
            for name in s.scenarios_unsupported.keys() {
                if !known.contains(name) {
                    errors.push(unknown(format!("scenarios_unsupported.{name}"), name));
                }
            }
            for kind in crate::manifest::ResponseKind::ALL {
                for (i, d) in s.response(kind).known_deviations.iter().enumerate() {
                    if let Some(name) = d
                        .scenario
                        .as_deref()
                        .filter(|n| !known.contains(&n.to_string()))
                    {
                        errors.push(unknown(
                            format!("responses.{kind}.known_deviations[{i}].scenario"),
                            name,
                        ));
                    }
                }
            }
            errors.len() == before
        });
        self.errors.extend(errors);
    }

    pub fn server(&self, name: &str) -> Option<&Server> {
        self.servers.iter().find(|s| s.name == name)
    }

    pub fn scenario(&self, name: &str) -> Option<&Scenario> {
        self.scenarios.iter().find(|s| s.name == name)
    }

    /// `scenarios/files/`, what the `file` scenario serves (`FILES_DIR`).
    pub fn files_dir(&self) -> PathBuf {
        self.root.join("scenarios").join("files")
    }

    /// The default work area: build outputs and logs (`<root>/.fairbench`).
    pub fn default_work_dir(&self) -> PathBuf {
        self.root.join(".fairbench")
    }

    /// Errors that belong to the server folder `name` (whose manifest may
    /// not have parsed at all).
    pub fn errors_for_server(&self, name: &str) -> Vec<&DefinitionError> {
        let prefix = Path::new("servers").join(name);
        self.errors
            .iter()
            .filter(|e| e.file.starts_with(&prefix))
            .collect()
    }

    /// Server folder names whose manifest failed to load.
    pub fn invalid_server_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .errors
            .iter()
            .filter_map(|e| {
                let mut c = e.file.components();
                match (c.next(), c.next()) {
                    (Some(a), Some(b)) if a.as_os_str() == "servers" => {
                        Some(b.as_os_str().to_string_lossy().into_owned())
                    }
                    _ => None,
                }
            })
            .collect();
        names.dedup();
        names
    }

    /// Errors in scenario files.
    /// Why the scenario `name` (`scenarios/NAME.toml`) did not load, when
    /// its file is there but broken.
    pub fn scenario_error(&self, name: &str) -> Option<&DefinitionError> {
        self.scenario_errors()
            .into_iter()
            .find(|e| e.file.file_stem().is_some_and(|s| s == name))
    }

    pub fn scenario_errors(&self) -> Vec<&DefinitionError> {
        self.errors
            .iter()
            .filter(|e| e.file.starts_with("scenarios"))
            .collect()
    }
}

/// Walks up from `start` to the first folder holding both `servers/` and
/// `scenarios/`.
pub fn find_root(start: &Path) -> Option<PathBuf> {
    let mut dir = Some(start);
    while let Some(d) = dir {
        if d.join("servers").is_dir() && d.join("scenarios").is_dir() {
            return Some(d.to_path_buf());
        }
        dir = d.parent();
    }
    None
}

fn sorted_entries(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    match std::fs::read_dir(dir) {
        Ok(rd) => {
            for e in rd {
                out.push(e?.path());
            }
        }
        // A root without servers yet is an empty zoo, not an error.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    out.sort();
    Ok(out)
}

fn is_hidden(p: &Path) -> bool {
    p.file_name()
        .map(|n| n.to_string_lossy().starts_with('.'))
        .unwrap_or(false)
}

fn relative(root: &Path, p: &Path) -> PathBuf {
    p.strip_prefix(root).unwrap_or(p).to_path_buf()
}

/// Comma-separated glob patterns on server (or scenario) names, as in
/// `--servers 'go-*,node-http'`.
#[derive(Debug, Clone)]
pub struct NameFilter(Vec<glob::Pattern>);

impl NameFilter {
    pub fn parse(list: &str) -> Result<NameFilter, String> {
        let mut out = Vec::new();
        for p in list.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            out.push(glob::Pattern::new(p).map_err(|e| format!("{p}: {e}"))?);
        }
        if out.is_empty() {
            return Err("expected at least one name or glob pattern".into());
        }
        Ok(NameFilter(out))
    }

    pub fn matches(&self, name: &str) -> bool {
        self.0.iter().any(|p| p.matches(name))
    }
}
