//! How the build script finds the git revision `--version` names, compiled
//! into the library too so that its test calls the very code build.rs runs
//! (build scripts cannot be imported; both include the one file).

include!("../build/revision.rs");
