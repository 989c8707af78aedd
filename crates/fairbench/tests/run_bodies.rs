//! A run measures the work the check proved: a server that answers some
//! requests under load with another body than the one the check graded
//! (here a byte short, far from the "short" of half the largest) has a
//! warning naming how many, and every case stores its successes by body
//! size, which `show --json` gives; its speed is not compared with the
//! reference's.

mod support;

use serde_json::Value;
use support::root::Root;
use support::{serial, text};

#[test]
fn answers_unlike_the_checked_one_are_warned_and_every_size_is_stored() {
    let _serial = serial();
    let root = Root::new(&[("fine", &[]), ("odd", &["--other-body-after", "50"])]);
    root.one_case_suite("bodies", 2, "1s");
    let out = root.run(&["run", "--suite", "bodies", "--quiet"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let rows = root.rows(
        "SELECT server, body_bytes, body_sizes_json, warnings_json, body_unlike FROM cases ORDER BY server",
    );
    assert_eq!(rows.len(), 2, "{rows:?}");
    let sizes = |r: &[String]| -> Value { serde_json::from_str(&r[2]).unwrap() };
    let (fine, odd) = (&rows[0], &rows[1]);
    assert_eq!((fine[0].as_str(), odd[0].as_str()), ("fine", "odd"));
    // Both proved the same 13 bytes to the check.
    assert_eq!((fine[1].as_str(), odd[1].as_str()), ("13", "13"));

    let f = sizes(fine);
    assert_eq!(f["counts"].as_object().unwrap().len(), 1, "{f}");
    assert!(f["counts"]["13"].as_u64().unwrap() > 50, "{f}");
    assert!(!fine[3].contains("the check proved"), "{}", fine[3]);
    assert_eq!(fine[4], "0");

    let o = sizes(odd);
    let (thirteen, twelve) = (
        o["counts"]["13"].as_u64().unwrap(),
        o["counts"]["12"].as_u64().unwrap(),
    );
    assert!(twelve > 20 && thirteen > twelve / 2, "{o}");
    assert_eq!(odd[4], twelve.to_string());
    let warnings: Vec<String> = serde_json::from_str(&odd[3]).unwrap();
    let w = warnings
        .iter()
        .find(|w| w.contains("other than the 13 B the check proved"))
        .unwrap_or_else(|| panic!("no warning about the bodies: {warnings:?}"));
    assert!(
        w.starts_with(&format!("{twelve} of {} answers", twelve + thirteen)),
        "{w}"
    );

    let show = root.run(&["show", "--json", "--reference", "fine"]);
    assert_eq!(show.status.code(), Some(0), "{}", text(&show));
    let j: Value = serde_json::from_slice(&show.stdout).unwrap();
    let cases = j["cases"].as_array().unwrap();
    let odd_case = cases.iter().find(|c| c["server"] == "odd").unwrap();
    assert_eq!(odd_case["body_sizes"]["counts"]["12"], twelve, "{odd_case}");
    // Its ratio to the reference is shown, its verdict withheld.
    let rows = j["paired"]["rows"].as_array().unwrap();
    let odd_row = rows.iter().find(|r| r["key"]["server"] == "odd").unwrap();
    let why = odd_row["failed"].as_str().unwrap_or_default();
    assert!(
        why.starts_with(
            "not compared: this case answered over 1 % of its successes with another body"
        ),
        "{odd_row}"
    );
    root.assert_no_servers_left();
}
