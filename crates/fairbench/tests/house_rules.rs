//! The house rules of the workspace's layout (issue 25), checked on the
//! sources themselves so that a change breaking one fails here rather than
//! in a reviewer's head:
//!
//! - imports flow one way: nothing below `commands/` imports from it; the
//!   low-level crates do not depend on the ones above them;
//! - one rule per decision: the characters made visible are classified in
//!   `crates/sys/src/text.rs` only; which variant of a server runs is
//!   decided in `crates/zoo/src/runnable.rs` only;
//! - no source file grows past 700 lines (the few still over it may only
//!   shrink);
//! - the tests share one test kit (`crates/testkit`): no file is included by
//!   `#[path]`, and only the kit makes test certificates.
//!
//! Each check also asserts that what it looks for exists where it should,
//! so a rename cannot make it pass by finding nothing.

use std::path::{Path, PathBuf};

mod house;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every `.rs` file under `dir`, recursively, sorted.
fn sources(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display())) {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The code of a file before its unit tests: what the rules are about.
fn code(p: &Path) -> String {
    let s = read(p);
    match s.find("#[cfg(test)]") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

/// The workspace's member folders under `crates/` ("engine", ...), from the
/// root manifest: a new crate is checked without anyone adding it here.
fn members() -> Vec<String> {
    let toml: toml::Table = read(&workspace().join("Cargo.toml"))
        .parse()
        .expect("Cargo.toml");
    let members: Vec<String> = toml["workspace"]["members"]
        .as_array()
        .expect("[workspace] members")
        .iter()
        .map(|m| {
            let m = m.as_str().expect("a member path");
            m.strip_prefix("crates/").unwrap_or(m).to_string()
        })
        .collect();
    for known in ["engine", "sys", "zoo", "fairbench", "testkit"] {
        assert!(members.iter().any(|m| m == known), "no member {known}");
    }
    members
}

/// Every `.rs` file of a member: its library, tests, benchmarks and build
/// scripts.
fn all_sources(krate: &str) -> Vec<PathBuf> {
    let root = workspace().join(format!("crates/{krate}"));
    let mut out = Vec::new();
    for sub in ["src", "tests", "benches", "build", "examples"] {
        if root.join(sub).exists() {
            out.extend(sources(&root.join(sub)));
        }
    }
    if root.join("build.rs").exists() {
        out.push(root.join("build.rs"));
    }
    out
}

fn rel(p: &Path) -> String {
    p.strip_prefix(workspace())
        .unwrap_or(p)
        .display()
        .to_string()
}

#[test]
fn nothing_below_commands_imports_from_it() {
    let src = workspace().join("crates/fairbench/src");
    assert!(
        read(&src.join("lib.rs")).contains("pub mod commands;"),
        "the command layer is `commands`"
    );
    let mut offenders = Vec::new();
    let mut seen = 0;
    for p in sources(&src) {
        let r = rel(&p);
        let above =
            r.contains("/src/commands/") || r.ends_with("/cli.rs") || r.ends_with("/main.rs");
        let text = read(&p);
        let imports = text.contains("crate::commands") || text.contains("fairbench::commands");
        if above {
            seen += 1;
        } else if imports {
            offenders.push(r);
        }
    }
    assert!(seen > 5, "the command modules were not found");
    assert!(offenders.is_empty(), "import from commands/: {offenders:?}");
}

#[test]
fn the_crates_depend_downwards_only() {
    // sys: nothing of ours; engine: sys (the machine's control groups, as
    // the generator sees them); zoo: the engine (its Protocol) and sys.
    let deps = |krate: &str| -> Vec<String> {
        let path = workspace().join(format!("crates/{krate}/Cargo.toml"));
        let toml: toml::Table = read(&path).parse().expect("Cargo.toml");
        let mut ours: Vec<String> = toml["dependencies"]
            .as_table()
            .expect("[dependencies]")
            .keys()
            .filter(|k| k.starts_with("fairbench"))
            .cloned()
            .collect();
        ours.sort();
        ours
    };
    assert_eq!(deps("engine"), vec!["fairbench-sys"]);
    assert_eq!(deps("testkit"), Vec::<String>::new());
    assert_eq!(deps("sys"), Vec::<String>::new());
    assert_eq!(deps("zoo"), vec!["fairbench-engine", "fairbench-sys"]);
    assert_eq!(
        deps("fairbench"),
        vec!["fairbench-engine", "fairbench-sys", "fairbench-zoo"]
    );
}

#[test]
fn one_rule_makes_foreign_text_visible() {
    // What marks the rule: the C1 control range and the bidirectional
    // overrides, as character ranges.
    let marks = ["'\\u{7f}'..='\\u{9f}'", "'\\u{2028}'..='\\u{202e}'"];
    let home = workspace().join("crates/sys/src/text.rs");
    let home_code = code(&home);
    for m in marks {
        assert!(home_code.contains(m), "text.rs no longer classifies {m}");
    }
    let mut offenders = Vec::new();
    for krate in ["engine", "sys", "zoo", "fairbench"] {
        for p in sources(&workspace().join(format!("crates/{krate}/src"))) {
            if p.ends_with("sys/src/text.rs") {
                continue;
            }
            let c = code(&p);
            if marks.iter().any(|m| c.contains(m)) || c.contains(".is_control()") {
                offenders.push(rel(&p));
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "control characters classified outside crates/sys/src/text.rs (use fairbench_sys::text): {offenders:?}"
    );
}

#[test]
fn one_rule_decides_what_runs() {
    // The manifest's availability predicates, and a mode's `unsupported`
    // read as a condition, are the zoo's runnable rule's business.
    let home = code(&workspace().join("crates/zoo/src/runnable.rs"));
    for needle in [".implements(", ".has_response(", ".unsupported"] {
        assert!(home.contains(needle), "runnable.rs no longer uses {needle}");
    }
    let deciding = [
        ".implements(",
        ".has_response(",
        "unsupported.is_none()",
        "unsupported.is_some()",
        "= &mode.unsupported",
    ];
    let mut offenders = Vec::new();
    for p in sources(&workspace().join("crates/fairbench/src")) {
        let c = code(&p);
        if let Some(n) = deciding.iter().find(|n| c.contains(**n)) {
            offenders.push(format!("{} ({n})", rel(&p)));
        }
    }
    assert!(
        offenders.is_empty(),
        "a second runnability rule (use fairbench_zoo::runnable): {offenders:?}"
    );
}

#[test]
fn one_stage_makes_a_case_ready() {
    // Starting a server, the database or a CA, and building, are the
    // stage's: `check` and `run` differed while each did them itself.
    let making = [
        "start::start",
        "start::{start",
        "Database::start(",
        "RunPki::create(",
        "ensure_built",
    ];
    let home = workspace().join("crates/fairbench/src/stage");
    let mut seen = Vec::new();
    let mut offenders = Vec::new();
    for p in sources(&workspace().join("crates/fairbench/src")) {
        let c = code(&p);
        for n in making.iter().filter(|n| c.contains(**n)) {
            if p.starts_with(&home) {
                seen.push(*n);
            } else {
                offenders.push(format!("{} ({n})", rel(&p)));
            }
        }
    }
    for n in [
        "start::{start",
        "Database::start(",
        "RunPki::create(",
        "ensure_built",
    ] {
        assert!(
            seen.contains(&n),
            "stage/ no longer uses {n}: update this rule"
        );
    }
    assert!(
        offenders.is_empty(),
        "a case made ready outside crates/fairbench/src/stage (use stage::Stage): {offenders:?}"
    );
}

/// Files still over the limit, with the most lines each may have: they may
/// only shrink (lower the figure when one does; remove it once under 700).
/// None is, today: keep it so.
const STILL_OVER: &[(&str, usize)] = &[];

const MAX_LINES: usize = 700;

#[test]
fn no_source_file_grows_past_700_lines() {
    let mut over = Vec::new();
    for krate in members() {
        for p in all_sources(&krate) {
            let n = read(&p).lines().count();
            let r = rel(&p);
            let limit = STILL_OVER
                .iter()
                .find(|(f, _)| *f == r)
                .map_or(MAX_LINES, |&(_, n)| n);
            if n > limit {
                over.push(format!("{r}: {n} lines (at most {limit})"));
            }
        }
    }
    assert!(over.is_empty(), "split these: {over:?}");
    for (f, _) in STILL_OVER {
        assert!(
            workspace().join(f).exists(),
            "{f} is gone: remove it from STILL_OVER"
        );
    }
}

/// This file, which names what it looks for.
const THIS_FILE: &str = "crates/fairbench/tests/house_rules.rs";

/// Whether `text` has a `#[path = ...]` attribute, however it is spaced
/// (`# [ path=`, inner or outer).
fn has_path_attribute(text: &str) -> bool {
    let squeezed: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    squeezed.contains("#[path=") || squeezed.contains("#![path=")
}

#[test]
fn no_file_is_included_by_path() {
    assert!(has_path_attribute("#[path = \"../x.rs\"]\nmod x;"));
    assert!(has_path_attribute("# [ path\n= \"x.rs\" ] mod x;"));
    assert!(!has_path_attribute("#[cfg(test)]\nmod tests;"));
    let mut seen = 0;
    let mut offenders = Vec::new();
    for krate in members() {
        for p in all_sources(&krate) {
            seen += 1;
            // This file names the attribute in its own examples above.
            if rel(&p) != THIS_FILE && has_path_attribute(&read(&p)) {
                offenders.push(rel(&p));
            }
        }
    }
    assert!(seen > 100, "the sources were not found");
    assert!(
        offenders.is_empty(),
        "a file included by #[path] (share it through crates/testkit or the crate's API): {offenders:?}"
    );
}

/// What making a certificate looks like, whatever the crate is imported as.
const CERTIFICATE_MAKING: [&str; 5] = [
    "rcgen",
    "KeyPair::generate",
    "CertificateParams",
    "self_signed(",
    "signed_by(",
];

#[test]
fn only_the_test_kit_makes_test_certificates() {
    let kit = code(&workspace().join("crates/testkit/src/pki.rs"));
    for needle in CERTIFICATE_MAKING {
        assert!(
            kit.contains(needle),
            "the test kit's pki.rs no longer uses {needle}"
        );
    }
    let mut offenders = Vec::new();
    for krate in members() {
        // Which members may depend on rcgen at all: the kit, and the zoo,
        // whose run CA (crates/zoo/src/pki.rs) is what runs serve, not tests.
        let manifest: toml::Table = read(&workspace().join(format!("crates/{krate}/Cargo.toml")))
            .parse()
            .expect("Cargo.toml");
        for section in ["dependencies", "dev-dependencies", "build-dependencies"] {
            let Some(deps) = manifest.get(section).and_then(|d| d.as_table()) else {
                continue;
            };
            let on_rcgen = deps.iter().any(|(name, spec)| {
                name == "rcgen" || spec.get("package").and_then(|p| p.as_str()) == Some("rcgen")
            });
            let allowed = krate == "testkit" || (krate == "zoo" && section == "dependencies");
            if on_rcgen && !allowed {
                offenders.push(format!("crates/{krate}/Cargo.toml [{section}]"));
            }
        }
        for p in all_sources(&krate) {
            let r = rel(&p);
            if r.starts_with("crates/testkit/") || r == "crates/zoo/src/pki.rs" || r == THIS_FILE {
                continue;
            }
            let text = read(&p);
            if let Some(n) = CERTIFICATE_MAKING.iter().find(|n| text.contains(**n)) {
                offenders.push(format!("{r} ({n})"));
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "certificates made outside crates/testkit (use fairbench_testkit::pki): {offenders:?}"
    );
}

/// A module's path from its file's path under `src/` ("suite/file/mod.rs"
/// is `suite::file`, "suite/order.rs" `suite::order`).
fn module_path(file: &str) -> Vec<String> {
    let mut parts: Vec<String> = file
        .trim_end_matches(".rs")
        .split('/')
        .map(str::to_string)
        .collect();
    if parts.last().is_some_and(|l| l == "mod" || l == "lib") {
        parts.pop();
    }
    parts
}

/// Every module path `code` (in module `at`) names through `crate::`,
/// `super::` or `self::`, use-trees' first level expanded, resolved to an
/// absolute path.
fn named_paths(code: &str, at: &[String]) -> Vec<Vec<String>> {
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    let b = code.as_bytes();
    let mut out = Vec::new();
    for root in ["crate::", "super::", "self::"] {
        let mut from = 0;
        while let Some(i) = code[from..].find(root).map(|i| i + from) {
            from = i + root.len();
            if i > 0 && (ident(b[i - 1] as char) || b[i - 1] == b':') {
                continue;
            }
            let mut path: Vec<String> = match root {
                "crate::" => Vec::new(),
                "super::" => at[..at.len().saturating_sub(1)].to_vec(),
                _ => at.to_vec(),
            };
            let mut rest = &code[from..];
            loop {
                let end = rest.find(|c: char| !ident(c)).unwrap_or(rest.len());
                let seg = &rest[..end];
                match seg {
                    "" => break,
                    "super" => {
                        path.pop();
                    }
                    "self" => {}
                    s => path.push(s.to_string()),
                }
                rest = &rest[end..];
                if !rest.starts_with("::") {
                    break;
                }
                rest = &rest[2..];
            }
            if let Some(inner) = rest.strip_prefix('{') {
                for item in inner[..inner.find('}').unwrap_or(inner.len())].split(',') {
                    let first: String = item.trim().chars().take_while(|c| ident(*c)).collect();
                    if !first.is_empty() && first != "self" {
                        let mut p = path.clone();
                        p.push(first);
                        out.push(p);
                    }
                }
            }
            out.push(path);
        }
    }
    out
}

/// Import cycles among the modules of one folder: for each folder, its
/// files and subfolders are the nodes (a subfolder is one node with all
/// its files), and a node imports another when its code names a path into
/// it. `files` are (path under `src/`, code); returns each cycle found, as
/// the folder's module names in order.
fn folder_cycles(files: &[(String, String)]) -> Vec<Vec<String>> {
    use std::collections::{BTreeMap, BTreeSet};
    let mut folders: BTreeSet<Vec<String>> = BTreeSet::new();
    for (f, _) in files {
        let dirs: Vec<String> = f.split('/').map(str::to_string).collect();
        for n in 0..dirs.len() {
            folders.insert(dirs[..n].to_vec());
        }
    }
    let mut cycles = Vec::new();
    for folder in folders {
        let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        let node_of = |path: &[String]| -> Option<String> {
            (path.len() > folder.len() && path[..folder.len()] == folder[..])
                .then(|| path[folder.len()].clone())
        };
        for (f, code) in files {
            let at = module_path(f);
            // The folder's own mod.rs only gathers its modules.
            let Some(from) = node_of(&at) else { continue };
            for p in named_paths(code, &at) {
                if let Some(to) = node_of(&p) {
                    if to != from {
                        edges.entry(from.clone()).or_default().insert(to);
                    }
                }
            }
        }
        // A depth-first search: a node met again on the current path closes
        // a cycle.
        fn visit(
            n: &str,
            edges: &BTreeMap<String, BTreeSet<String>>,
            path: &mut Vec<String>,
            done: &mut BTreeSet<String>,
            found: &mut Vec<Vec<String>>,
        ) {
            if let Some(i) = path.iter().position(|p| p == n) {
                found.push(path[i..].to_vec());
                return;
            }
            if !done.insert(n.to_string()) {
                return;
            }
            path.push(n.to_string());
            for next in edges.get(n).into_iter().flatten() {
                visit(next, edges, path, done, found);
            }
            path.pop();
        }
        let mut done = BTreeSet::new();
        for n in edges.keys() {
            let mut found = Vec::new();
            visit(n, &edges, &mut Vec::new(), &mut done, &mut found);
            for c in found {
                let mut named: Vec<String> = folder.clone();
                named.push(c.join(" -> "));
                cycles.push(vec![named.join("/")]);
            }
        }
    }
    cycles
}

#[test]
fn the_cycle_finder_finds_cycles_and_only_cycles() {
    let files = |list: &[(&str, &str)]| -> Vec<(String, String)> {
        list.iter()
            .map(|(f, c)| (f.to_string(), c.to_string()))
            .collect()
    };
    // a -> b/ (through a file inside it) -> a, the way back through super::super.
    let cyclic = files(&[
        ("x/mod.rs", "mod a; mod b; pub use a::A;"),
        ("x/a.rs", "use super::b::inner::B;"),
        ("x/b/mod.rs", "pub mod inner;"),
        ("x/b/inner.rs", "use super::super::{a::A, c};"),
        ("x/c.rs", "use crate::x::a::A;"),
    ]);
    let found = folder_cycles(&cyclic);
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(found.iter().flatten().any(|c| c == "x/a -> b"), "{found:?}");
    assert!(
        found.iter().flatten().any(|c| c == "x/a -> b -> c"),
        "{found:?}"
    );
    // The two cycles suite/ had: a type each way between two modules.
    let suite = files(&[
        (
            "suite/mod.rs",
            "mod engine; mod file; pub mod order; mod plan;",
        ),
        ("suite/engine.rs", "use super::file::{Ends, LoadProfile};"),
        (
            "suite/file/mod.rs",
            "use super::engine::Timing;\nuse super::order::Interleave;",
        ),
        (
            "suite/order.rs",
            "use super::plan::PlanItem;\nuse crate::seeded::SplitMix64;",
        ),
        (
            "suite/plan.rs",
            "use super::file::{CoreCount, Suite};\nuse super::order::Interleave;",
        ),
    ]);
    let found = folder_cycles(&suite);
    assert!(
        found.iter().flatten().any(|c| c == "suite/engine -> file"),
        "{found:?}"
    );
    assert!(
        found.iter().flatten().any(|c| c.contains("order -> plan")),
        "{found:?}"
    );
    let acyclic = files(&[
        ("x/mod.rs", "mod a; mod b; pub use a::A; pub use b::B;"),
        (
            "x/a.rs",
            "use super::b::B; use crate::y::Y; // use super::a",
        ),
        ("x/b.rs", "use crate::y::{self, Y};"),
        ("y.rs", "use crate::z::Z;"),
    ]);
    assert_eq!(folder_cycles(&acyclic), Vec::<Vec<String>>::new());
}

#[test]
fn no_two_modules_of_one_folder_import_each_other() {
    let mut cycles = Vec::new();
    for krate in members() {
        let src = workspace().join(format!("crates/{krate}/src"));
        let files: Vec<(String, String)> = sources(&src)
            .into_iter()
            .map(|p| {
                let r = p.strip_prefix(&src).unwrap().display().to_string();
                // Comments are not imports.
                let c: String = code(&p)
                    .lines()
                    .filter(|l| !l.trim_start().starts_with("//"))
                    .collect::<Vec<_>>()
                    .join("\n");
                (r, c)
            })
            .collect();
        assert!(!files.is_empty(), "crates/{krate}/src not found");
        cycles.extend(
            folder_cycles(&files)
                .into_iter()
                .map(|c| format!("crates/{krate}: {}", c.join(" → "))),
        );
    }
    assert!(
        cycles.is_empty(),
        "import cycles inside a folder: {cycles:?}"
    );
}

#[test]
fn no_function_grows_past_100_lines() {
    use house::functions::{long_in, MAX_FN_LINES, STILL_LONG};
    let mut files = Vec::new();
    for krate in members() {
        for p in sources(&workspace().join(format!("crates/{krate}/src"))) {
            // Unit tests in files of their own are tests, not the code.
            if !p.ends_with("tests.rs") {
                files.push((rel(&p), code(&p)));
            }
        }
    }
    let long = long_in(&files, MAX_FN_LINES);
    let listed: std::collections::BTreeMap<&str, usize> = STILL_LONG.iter().copied().collect();
    let mut wrong = Vec::new();
    for (f, &n) in &long {
        match listed.get(f.as_str()) {
            None => wrong.push(format!("{f}: {n} lines (at most {MAX_FN_LINES}): split it")),
            Some(&was) if n > was => wrong.push(format!(
                "{f}: {n} lines, {was} when listed: it may only shrink"
            )),
            _ => {}
        }
    }
    for f in listed.keys() {
        if !long.contains_key(*f) {
            wrong.push(format!(
                "{f} is short now (or gone): remove it from STILL_LONG"
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// Files kept as copies on purpose, and why: each must stay the same as
/// its twin, so a fix made to one is made to both.
const COPIES: &[(&str, &str, &str)] = &[(
    "servers/node-express/db.js",
    "servers/node-http/db.js",
    "each server folder is self-contained, so the two node servers carry the same database code",
)];

#[test]
fn copies_that_must_stay_copies_are_the_same() {
    for (a, b, why) in COPIES {
        let (x, y) = (read(&workspace().join(a)), read(&workspace().join(b)));
        assert!(
            x == y,
            "{a} and {b} differ; they are copies ({why}): make the same change to both"
        );
    }
}

#[test]
fn the_architecture_page_names_what_exists_and_every_part() {
    let page = read(&workspace().join("docs/architecture.md"));
    let mut wrong = Vec::new();
    for krate in members() {
        if !page.contains(&format!("crates/{krate}")) {
            wrong.push(format!("crate {krate} is not on the page"));
        }
    }
    let lib = code(&workspace().join("crates/fairbench/src/lib.rs"));
    for line in lib.lines() {
        if let Some(m) = line.trim().strip_prefix("pub mod ") {
            let m = m.trim_end_matches(';');
            if !page.contains(&format!("`{m}`")) {
                wrong.push(format!("module {m} of the CLI crate is not on the page"));
            }
        }
    }
    // Every file or folder it names in code spans is somewhere in a crate.
    for span in page.split('`').skip(1).step_by(2) {
        if !(span.ends_with(".rs") || span.ends_with('/')) || span.contains(' ') {
            continue;
        }
        let found = workspace().join(span).exists()
            || members()
                .iter()
                .any(|k| workspace().join(format!("crates/{k}/src/{span}")).exists());
        if !found {
            wrong.push(format!("`{span}` names nothing that exists"));
        }
    }
    assert!(wrong.is_empty(), "docs/architecture.md: {wrong:?}");
}
