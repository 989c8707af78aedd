//! The fuzz targets on the stable toolchain: every stored input (the
//! corpus under `fuzz/corpus/<target>/`, the findings under
//! `fuzz/regressions/<target>/`) replayed through the same entry points
//! the libFuzzer targets call (`fairbench_engine::fuzzing`), then a bounded
//! number of fresh random inputs for each. None may panic; the entry
//! points' own checks (the same answers however the bytes are cut, the
//! HPACK decoder agreeing with `loona-hpack`) hold.

use std::path::{Path, PathBuf};

use fairbench_engine::fuzzing::{self, Agreement};
use proptest::prelude::*;

/// The differential target's reference: `loona-hpack` with the table
/// limit the client holds the server to.
fn differential(data: &[u8]) -> Agreement {
    let mut reference = loona_hpack::Decoder::new();
    reference.set_max_allowed_table_size(4096);
    fuzzing::hpack_differential(data, |block| {
        reference.decode(block).map_err(|e| format!("{e:?}"))
    })
}

/// Runs one stored input through the target its folder is named after.
fn run(target: &str, data: &[u8]) {
    match target {
        "h2_frames" => fuzzing::h2_frames(data),
        "hpack_decode" => drop(fuzzing::hpack_decode(data)),
        "hpack_differential" => drop(differential(data)),
        "http1_response" => fuzzing::http1_response(data),
        "chunked" => fuzzing::chunked(data),
        "conversation" => fuzzing::conversation(data),
        "h3_frames" => fuzzing::h3_frames(data),
        "qpack_decode" => drop(fuzzing::qpack_decode(data)),
        other => panic!("fuzz/*/{other}: no such target (add it here)"),
    }
}

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz")
}

/// Every file under `fuzz/<kind>/<target>/`, with its target's name.
fn inputs(kind: &str) -> Vec<(String, PathBuf)> {
    let mut out = Vec::new();
    let Ok(targets) = std::fs::read_dir(fuzz_dir().join(kind)) else {
        return out;
    };
    for t in targets.flatten() {
        let name = t.file_name().to_string_lossy().into_owned();
        for f in std::fs::read_dir(t.path()).into_iter().flatten().flatten() {
            out.push((name.clone(), f.path()));
        }
    }
    out.sort();
    out
}

fn replay(kind: &str) -> usize {
    let all = inputs(kind);
    for (target, path) in &all {
        // A running fuzzer replaces inputs by smaller ones as it goes.
        let data = match std::fs::read(path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            r => r.unwrap(),
        };
        let r = std::panic::catch_unwind(|| run(target, &data));
        assert!(r.is_ok(), "{} failed", path.display());
    }
    all.len()
}

#[test]
fn the_corpus_replays_without_a_finding() {
    let n = replay("corpus");
    // Every target has its seeds: a missing folder would test nothing.
    let targets: std::collections::BTreeSet<_> =
        inputs("corpus").into_iter().map(|(t, _)| t).collect();
    assert_eq!(targets.len(), 8, "{targets:?}");
    assert!(n >= 30, "only {n} inputs");
}

/// The seeds mean what they say: a cut-anywhere target that errs on
/// every input would replay "without a finding" too.
#[test]
fn the_h3_seeds_decode_as_the_rfcs_say() {
    let fields = fuzzing::qpack_decode(&[0x00, 0x00, 0xd9]).unwrap();
    assert_eq!(fields, vec![(b":status".to_vec(), b"200".to_vec())]);
    let path = std::fs::read(fuzz_dir().join("corpus/qpack_decode/rfc9204_b1_path")).unwrap();
    let fields = fuzzing::qpack_decode(&path).unwrap();
    assert_eq!(fields, vec![(b":path".to_vec(), b"/index.html".to_vec())]);
    // A section that needs the dynamic table the client did not allow.
    assert_eq!(fuzzing::qpack_decode(&[0x03, 0x81, 0x10]), Err(0x200));
}

#[test]
fn every_finding_stays_fixed() {
    replay("regressions");
}

/// The two ways the decoders may rightly disagree are met, and named.
#[test]
fn the_accepted_hpack_differences_are_the_documented_ones() {
    assert_eq!(
        differential(&[3, 0x82, 0x20, 0x82]),
        Agreement::Differ("a size update after a field")
    );
    assert_eq!(
        differential(&[1, 0x20]),
        Agreement::Differ("a block of size updates alone")
    );
    assert_eq!(differential(&[2, 0x82, 0x84]), Agreement::Same);
}

proptest! {
    // A few hundred fresh inputs each (well under a second in all);
    // PROPTEST_CASES runs more.
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(300),
        ..ProptestConfig::default()
    })]

    #[test]
    fn random_inputs_find_nothing(
        target in prop::sample::select(vec![
            "h2_frames", "hpack_decode", "hpack_differential",
            "http1_response", "chunked", "conversation", "h3_frames", "qpack_decode",
        ]),
        data in prop::collection::vec(any::<u8>(), 0..600),
    ) {
        run(target, &data);
    }
}
