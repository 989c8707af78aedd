//! Fuzz target: see `fairbench_engine::fuzzing::h3_frames` and fuzz/README.md.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = fairbench_engine::fuzzing::h3_frames(data);
});
