//! Puts the git revision into `fairbench --version` (FAIRBENCH_GIT_REVISION).

include!("build/revision.rs");

fn main() {
    let dir = std::path::PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    println!("cargo:rustc-env=FAIRBENCH_GIT_REVISION={}", revision(&dir));
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=build/revision.rs");
    for p in watched(&dir) {
        println!("cargo:rerun-if-changed={}", p.display());
    }
}
