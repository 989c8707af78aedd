//! Fuzz target: our HPACK decoder against `loona-hpack`'s on the same
//! blocks (see `fairbench_engine::fuzzing::hpack_differential`, whose
//! `accepted_difference` lists where the two may rightly disagree).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut reference = loona_hpack::Decoder::new();
    // The limit our decoder holds the server to (the HTTP/2 default).
    reference.set_max_allowed_table_size(4096);
    fairbench_engine::fuzzing::hpack_differential(data, |block| {
        reference.decode(block).map_err(|e| format!("{e:?}"))
    });
});
