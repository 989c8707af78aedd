//! The report model's unit tests.
use super::*;
use crate::args::{resolve_run, RunSel};
use crate::report::fixture;

#[test]
fn the_fixture_aggregates_as_expected() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.db");
    fixture::standard_db(&path);
    let store = Store::open_existing(&path).unwrap();
    let run = resolve_run(&store, RunSel::Id(1)).unwrap();
    let r = build(&store, &run).unwrap();
    assert_eq!(
        r.servers
            .iter()
            .map(|s| s.name.as_str())
            .collect::<Vec<_>>(),
        ["dart-shelf", "go-nethttp"]
    );
    assert_eq!(r.groups.len(), 18);
    assert_eq!(r.groups.iter().filter(|g| g.is_sweep_step()).count(), 6);
    assert_eq!(r.parity.len(), 6);
    assert_eq!(r.problems.len(), 1);
    let failed = r.groups.iter().find(|g| g.failed == 1).unwrap();
    assert_eq!((failed.planned, failed.done), (3, 2));
    let rps = failed.rps.as_ref().unwrap();
    assert_eq!((rps.n, rps.confidence), (2, 0.5));
    let go = &r.groups[0];
    assert_eq!(go.label, "go-nethttp default/normalized");
    assert_eq!(go.rps.as_ref().unwrap().median, 100_000.0);
    let sp = go.spectrum.as_ref().unwrap();
    assert_eq!(sp.count, 60_000);
    assert_eq!(sp.points.len(), 20, "0 … 4.75 nines for 60 000 samples");
    assert_eq!(go.warmup.as_ref().unwrap().points.len(), 13);
    assert_eq!(r.sweeps.len(), 2);
    let offered: Vec<f64> = r.sweeps[0].steps.iter().map(|s| s.offered_rps).collect();
    assert_eq!(offered, [1_000.0, 2_000.0, 4_000.0]);
    assert_eq!(
        r.sweeps[1].steps.iter().map(|s| s.met).collect::<Vec<_>>(),
        [Some(true), Some(true), Some(false)]
    );
}

#[test]
fn load_info_falls_back_to_the_label() {
    let l = LoadInfo::parse("not json", "rate 5000/s c=50 t=1");
    assert_eq!((l.model.as_str(), l.rate), ("rate", Some(5000.0)));
    assert!(LoadInfo::parse("{}", "closed c=50 t=1").is_closed());
}

#[test]
fn the_byte_difference_to_the_reference_comes_from_the_stored_bytes() {
    let row = |server: &str, response: &str, total: Option<i64>, vs: Option<i64>| ParityRow {
        server: server.into(),
        mode: "native".into(),
        response: response.into(),
        scenario: "static".into(),
        protocol: "http/1.1".into(),
        header_bytes: None,
        header_block: None,
        body_bytes: None,
        total_bytes: total,
        fair: None,
        grade: None,
        rules: Vec::new(),
        framing: None,
        date: None,
        ipv4: None,
        ipv6: None,
        vs_reference: vs,
        header_names: Vec::new(),
        raw_response: None,
        note: None,
    };
    let mut p = vec![
        row("go-nethttp", "normalized", Some(130), None),
        row("node-http", "normalized", Some(142), None),
        row("node-http", "default", Some(200), None),
        row("dart-io", "normalized", Some(150), Some(7)),
        row("rust-hyper", "normalized", None, None),
    ];
    fill_vs_reference(&mut p);
    let vs: Vec<Option<i64>> = p.iter().map(|r| r.vs_reference).collect();
    // No default reference row: no difference; a stored one is kept.
    assert_eq!(vs, [Some(0), Some(12), None, Some(7), None]);
}
