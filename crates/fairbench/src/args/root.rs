//! The fairbench root (the folder holding servers/ and scenarios/): `--root
//! DIR`, or the nearest such folder at or above the current directory.

use std::path::{Path, PathBuf};

use anyhow::Context;
use fairbench_zoo::Zoo;

use crate::usage_error::usage;

/// `--root DIR`, checked, or the nearest root above the current directory.
pub fn resolve_root(arg: Option<&Path>) -> anyhow::Result<PathBuf> {
    match arg {
        Some(dir) => {
            if !dir.join("servers").is_dir() || !dir.join("scenarios").is_dir() {
                return Err(usage(format!(
                    "--root {}: expected a folder holding servers/ and scenarios/",
                    dir.display()
                )));
            }
            Ok(dir.to_path_buf())
        }
        None => {
            let cwd = std::env::current_dir().context("cannot read the current directory")?;
            fairbench_zoo::find_root(&cwd).ok_or_else(|| {
                usage(format!(
                    "no fairbench root (a folder with servers/ and scenarios/) at or above {}; use --root DIR",
                    cwd.display()
                ))
            })
        }
    }
}

/// Every server and scenario definition under `root`.
pub fn load_zoo(root: &Path) -> anyhow::Result<Zoo> {
    Zoo::load(root).with_context(|| format!("cannot read {}", root.display()))
}
