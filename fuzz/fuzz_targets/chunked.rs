//! Fuzz target: see `fairbench_engine::fuzzing::chunked` and fuzz/README.md.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    fairbench_engine::fuzzing::chunked(data);
});
