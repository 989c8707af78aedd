//! Which stored run a command means: its id, or `latest`.

use std::str::FromStr;

use crate::store::{RunRow, Store};
use crate::usage_error::UsageError;

/// A run named on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RunSel {
    #[default]
    Latest,
    Id(i64),
}

impl FromStr for RunSel {
    type Err = UsageError;

    fn from_str(s: &str) -> Result<RunSel, UsageError> {
        match s {
            "latest" => Ok(RunSel::Latest),
            _ => s
                .parse::<i64>()
                .map(RunSel::Id)
                .map_err(|_| UsageError(format!("run id `{s}`: expected a number or `latest`"))),
        }
    }
}

/// The run `sel` names in `store`; the same message everywhere when there
/// is none.
pub fn resolve_run(store: &Store, sel: RunSel) -> anyhow::Result<RunRow> {
    let db = store.path().display().to_string();
    let id = match sel {
        RunSel::Latest => store
            .latest_run()?
            .ok_or_else(|| anyhow::anyhow!("{db} holds no runs yet (run `fairbench run` first)"))?,
        RunSel::Id(id) => id,
    };
    store
        .run(id)?
        .ok_or_else(|| anyhow::anyhow!("no run {id} in {db} (`fairbench runs` lists them)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_and_latest() {
        assert_eq!("latest".parse::<RunSel>().unwrap(), RunSel::Latest);
        assert_eq!("7".parse::<RunSel>().unwrap(), RunSel::Id(7));
        let e = "x".parse::<RunSel>().unwrap_err().to_string();
        assert_eq!(e, "run id `x`: expected a number or `latest`");
    }

    #[test]
    fn resolves_in_the_store_with_one_message() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.db");
        let store = Store::open(&path).unwrap();
        let e = resolve_run(&store, RunSel::Latest).unwrap_err().to_string();
        assert!(
            e.ends_with("r.db holds no runs yet (run `fairbench run` first)"),
            "{e}"
        );
        drop(store);
        crate::report::fixture::standard_db(&path);
        let store = Store::open_existing(&path).unwrap();
        assert_eq!(resolve_run(&store, RunSel::Latest).unwrap().id, 2);
        assert_eq!(resolve_run(&store, RunSel::Id(1)).unwrap().id, 1);
        let e = resolve_run(&store, RunSel::Id(9)).unwrap_err().to_string();
        assert!(
            e.starts_with("no run 9 in ") && e.ends_with("(`fairbench runs` lists them)"),
            "{e}"
        );
    }
}
