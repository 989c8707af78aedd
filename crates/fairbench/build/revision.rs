// The git revision fairbench is built from, for `--version`: shared by
// build.rs and the library (src/build_revision.rs, which the test of it in
// tests/cli_consistency.rs calls), so what is tested is what runs. Plain
// functions only: this file is `include!`d into a build script.

/// `git rev-parse --short HEAD` of the repository holding `dir`, or
/// "unknown": no git, no repository (a tarball), or a repository that does
/// not hold this crate (a tarball unpacked inside some other checkout).
pub fn revision(dir: &std::path::Path) -> String {
    let git = |args: &[&str]| -> Option<String> {
        let out = std::process::Command::new("git")
            .args(args)
            .current_dir(dir)
            .env_remove("GIT_DIR")
            .env_remove("GIT_WORK_TREE")
            .stderr(std::process::Stdio::null())
            .output()
            .ok()?;
        let s = String::from_utf8(out.stdout).ok()?.trim().to_string();
        (out.status.success() && !s.is_empty()).then_some(s)
    };
    if git(&["ls-files", "--error-unmatch", "Cargo.toml"]).is_none() {
        return "unknown".to_string();
    }
    git(&["rev-parse", "--short", "HEAD"]).unwrap_or_else(|| "unknown".to_string())
}

/// The files whose change moves HEAD: the HEAD file and the branch it
/// names (loose, or packed), so the revision is re-read after a commit.
pub fn watched(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let git = |args: &[&str]| -> Option<String> {
        let out = std::process::Command::new("git")
            .args(args)
            .current_dir(dir)
            .stderr(std::process::Stdio::null())
            .output()
            .ok()?;
        let s = String::from_utf8(out.stdout).ok()?.trim().to_string();
        (out.status.success() && !s.is_empty()).then_some(s)
    };
    let mut paths = Vec::new();
    let mut names = vec!["HEAD".to_string(), "packed-refs".to_string()];
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
        names.push(branch);
    }
    for n in names {
        if let Some(p) = git(&["rev-parse", "--path-format=absolute", "--git-path", &n]) {
            let p = std::path::PathBuf::from(p);
            if p.exists() {
                paths.push(p);
            }
        }
    }
    paths
}
