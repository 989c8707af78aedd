//! The HTML report in a real browser: Debian's chromium, headless, loads the
//! report from a file URL. No console error, no exception, no dialog (nothing
//! ran), no request but the file itself, no script or external element in the
//! DOM, every chart laid out, and a screenshot that is not blank.
//!
//! Needs `chromium` (apt-get install chromium) or $FAIRBENCH_CHROMIUM. When
//! it is missing the test fails under CI=true and is skipped (with the
//! reason printed) otherwise. Screenshots are left in the target directory.

mod support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use fairbench::report::fixture;
use fairbench::store;
use serde_json::{json, Value};
use support::chrome::{decode_png, find, Chrome};
use support::*;

fn chromium_or_skip() -> Option<PathBuf> {
    match find() {
        Some(p) => Some(p),
        None if std::env::var("CI").is_ok_and(|v| v == "true") => {
            panic!("chromium is not installed, and CI=true requires the browser test (apt-get install chromium)")
        }
        None => {
            // Straight to stderr, past the test harness's capture, so the skip shows.
            use std::io::Write;
            let _ = writeln!(
                std::io::stderr(),
                "SKIPPED report_browser: chromium not found (apt-get install chromium, or set FAIRBENCH_CHROMIUM)"
            );
            None
        }
    }
}

struct Loaded {
    events: Vec<Value>,
    dom: Value,
    png: Vec<u8>,
}

fn load(browser: &Path, file: &Path, shot: &Path) -> Loaded {
    let url = format!("file://{}", file.canonicalize().unwrap().display());
    let mut c = Chrome::launch(browser, 1280, 4000);
    let targets = c.call(None, "Target.getTargets", json!({}));
    let target = targets["targetInfos"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["type"] == "page"))
        .map(|t| t["targetId"].as_str().unwrap().to_string())
        .unwrap_or_else(|| {
            c.call(None, "Target.createTarget", json!({ "url": "about:blank" }))["targetId"]
                .as_str()
                .unwrap()
                .to_string()
        });
    let session = c.call(
        None,
        "Target.attachToTarget",
        json!({ "targetId": target, "flatten": true }),
    )["sessionId"]
        .as_str()
        .unwrap()
        .to_string();
    let s = Some(session.as_str());
    for domain in [
        "Page.enable",
        "Runtime.enable",
        "Log.enable",
        "Network.enable",
    ] {
        c.call(s, domain, json!({}));
    }
    c.call(
        s,
        "Emulation.setDeviceMetricsOverride",
        json!({ "width": 1280, "height": 4000, "deviceScaleFactor": 1, "mobile": false }),
    );
    c.events.clear();
    let nav = c.call(s, "Page.navigate", json!({ "url": url }));
    assert!(nav.get("errorText").is_none(), "navigation failed: {nav}");
    assert!(
        c.wait_event("Page.loadEventFired", Duration::from_secs(60)),
        "the report did not finish loading within 60 s"
    );
    c.settle(Duration::from_millis(800));
    let dom = c.call(
        s,
        "Runtime.evaluate",
        json!({
            "returnByValue": true,
            "expression": "({ scripts: document.querySelectorAll('script').length, \
                external: document.querySelectorAll('iframe, object, embed, img, link[href], [src]').length, \
                charts: document.querySelectorAll('svg.chart').length, \
                laidOut: Array.from(document.querySelectorAll('svg.chart')).filter(e => e.getBoundingClientRect().width > 300).length, \
                title: document.title, \
                height: document.documentElement.scrollHeight })"
        }),
    )["result"]["value"]
        .clone();
    let shot_b64 = c.call(s, "Page.captureScreenshot", json!({ "format": "png" }))["data"]
        .as_str()
        .unwrap()
        .to_string();
    let png = base64_decode(&shot_b64);
    std::fs::write(shot, &png).unwrap();
    eprintln!("screenshot: {}", shot.display());
    c.settle(Duration::from_millis(200));
    Loaded {
        events: c.events.clone(),
        dom,
        png,
    }
}

/// Console errors, exceptions, dialogs and requests other than the report.
fn problems(events: &[Value], url_prefix: &str) -> Vec<String> {
    let mut out = Vec::new();
    for e in events {
        let p = &e["params"];
        match e["method"].as_str().unwrap_or("") {
            "Runtime.consoleAPICalled"
                if matches!(p["type"].as_str(), Some("error" | "assert" | "warning")) =>
            {
                out.push(format!("console {}: {}", p["type"], p["args"]))
            }
            "Runtime.exceptionThrown" => out.push(format!("exception: {}", p["exceptionDetails"])),
            "Log.entryAdded"
                if matches!(p["entry"]["level"].as_str(), Some("error" | "warning")) =>
            {
                out.push(format!(
                    "log {}: {}",
                    p["entry"]["level"], p["entry"]["text"]
                ))
            }
            "Page.javascriptDialogOpening" => {
                out.push(format!("a dialog opened: {}", p["message"]))
            }
            "Network.requestWillBeSent" => {
                let u = p["request"]["url"].as_str().unwrap_or("");
                if !u.starts_with(url_prefix) && !u.starts_with("data:") {
                    out.push(format!("request left the file: {u}"));
                }
            }
            "Network.loadingFailed" => out.push(format!("loading failed: {p}")),
            _ => {}
        }
    }
    out
}

fn check_report(browser: &Path, html: &Path, shot: &Path, min_charts: u64) {
    let url = format!("file://{}", html.canonicalize().unwrap().display());
    let l = load(browser, html, shot);
    let requests: Vec<&Value> = l
        .events
        .iter()
        .filter(|e| e["method"] == "Network.requestWillBeSent")
        .collect();
    assert!(
        !requests.is_empty(),
        "the browser reported no request at all: is the Network domain on?"
    );
    let bad = problems(&l.events, &url);
    assert!(bad.is_empty(), "{}:\n{}", html.display(), bad.join("\n"));
    assert_eq!(l.dom["scripts"], 0, "{}", l.dom);
    assert_eq!(l.dom["external"], 0, "{}", l.dom);
    assert!(l.dom["charts"].as_u64().unwrap() >= min_charts, "{}", l.dom);
    assert_eq!(
        l.dom["charts"], l.dom["laidOut"],
        "every chart is laid out: {}",
        l.dom
    );

    let img = decode_png(&l.png);
    assert_eq!((img.width, img.height), (1280, 4000));
    let white = img
        .rgb
        .iter()
        .filter(|p| p[0] > 245 && p[1] > 245 && p[2] > 245)
        .count();
    let ink = 1.0 - white as f64 / img.rgb.len() as f64;
    let mut colours: Vec<[u8; 3]> = img.rgb.iter().step_by(7).copied().collect();
    colours.sort();
    colours.dedup();
    eprintln!(
        "{}: {:.1} % not white, {} colours",
        shot.display(),
        ink * 100.0,
        colours.len()
    );
    assert!(
        ink > 0.03,
        "the screenshot is (nearly) blank: {:.2} % ink",
        ink * 100.0
    );
    assert!(
        colours.len() > 20,
        "the screenshot has only {} colours",
        colours.len()
    );
}

fn shots_dir() -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("report_browser");
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn report_loads_offline_in_chromium() {
    let Some(browser) = chromium_or_skip() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    fixture::standard_db(&dir.path().join("results.db"));
    ok(
        dir.path(),
        &["report", "1", "--db", "results.db", "-o", "report.html"],
    );
    check_report(
        &browser,
        &dir.path().join("report.html"),
        &shots_dir().join("fixture-report.png"),
        12,
    );
}

#[test]
fn hostile_strings_run_nothing_in_chromium() {
    let Some(browser) = chromium_or_skip() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("results.db");
    let run = {
        let mut s = store::Store::open(&db).unwrap();
        fixture::hostile_run(&mut s)
    };
    ok(
        dir.path(),
        &[
            "report",
            &run.to_string(),
            "--db",
            "results.db",
            "-o",
            "hostile.html",
        ],
    );
    check_report(
        &browser,
        &dir.path().join("hostile.html"),
        &shots_dir().join("hostile-report.png"),
        3,
    );
}

/// The harness itself: a page that runs a script and fetches from elsewhere
/// (loopback, a closed port) must be caught, or the tests above prove nothing.
#[test]
fn the_harness_sees_scripts_and_requests() {
    let Some(browser) = chromium_or_skip() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("bad.html");
    std::fs::write(
        &page,
        "<!DOCTYPE html><html><head><title>bad</title></head><body><p>x</p>\
         <script>console.error('ran'); throw new Error('boom');</script>\
         <img src=\"http://127.0.0.1:9/pixel.png\"></body></html>",
    )
    .unwrap();
    let url = format!("file://{}", page.canonicalize().unwrap().display());
    let l = load(&browser, &page, &dir.path().join("bad.png"));
    let bad = problems(&l.events, &url);
    assert!(bad.iter().any(|p| p.starts_with("console")), "{bad:?}");
    assert!(bad.iter().any(|p| p.starts_with("exception")), "{bad:?}");
    assert!(
        bad.iter()
            .any(|p| p.contains("request left the file: http://127.0.0.1:9/pixel.png")),
        "{bad:?}"
    );
    assert_eq!(l.dom["scripts"], 1);
}
