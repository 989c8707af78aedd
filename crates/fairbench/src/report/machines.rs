//! One report of runs from several machines (`report RUN --with DB:RUN`):
//! the study's 8- and 40-core servers side by side. Each run is built into
//! its own report (its ratios paired within it), then their cases are put
//! together, every case key labelled with its machine as its stored host
//! record names it (as `compare` labels runs), so no chart or table row can
//! pass one machine's figure off as another's.

use super::model::{Machine, RunInfo, RunReport};
use super::palette;

/// A report's run with where it came from.
pub struct Part {
    pub report: RunReport,
    pub db: String,
    pub host_json: String,
}

/// The runs' cases in one report, the first run's header kept as the
/// report's and every run listed in `machines`.
pub fn side_by_side(parts: Vec<Part>) -> RunReport {
    let labels = labels(&parts);
    let mut iter = parts.into_iter().zip(labels);
    let (first, first_label) = iter.next().expect("at least one run");
    let mut out = first.report;
    out.machines
        .push(machine(&out.run, &first.db, &first_label));
    label_run(&mut out, &first_label, None);
    for (part, label) in iter {
        let mut r = part.report;
        let id = r.run.id;
        label_run(&mut r, &label, Some(id));
        out.machines.push(machine(&r.run, &part.db, &label));
        for s in r.servers {
            if !out.servers.iter().any(|x| x.name == s.name) {
                out.servers.push(s);
            }
        }
        out.parity.extend(r.parity);
        out.groups.extend(r.groups);
        out.sweeps.extend(r.sweeps);
        out.problems.extend(r.problems);
        out.paired.rows.extend(r.paired.rows);
        merge_ladder(&mut out, r.ladder);
        let on = format!("on {label}: ");
        out.paired
            .notes
            .extend(r.paired.notes.into_iter().map(|n| format!("{on}{n}")));
    }
    out.paired.notes.push(format!(
        "runs from {} machines side by side: each ratio is paired with the reference measured in its own run, on its own machine",
        out.machines.len()
    ));
    // One colour per server across the machines.
    out.servers.sort_by(|a, b| a.name.cmp(&b.name));
    let names: Vec<String> = out.servers.iter().map(|s| s.name.clone()).collect();
    for (i, s) in out.servers.iter_mut().enumerate() {
        s.palette_index = i;
        s.colour = palette::colour(i);
    }
    for g in &mut out.groups {
        g.palette_index = palette::index(&names, &g.key.server);
    }
    for s in &mut out.sweeps {
        s.palette_index = palette::index(&names, &s.server);
    }
    // Each scenario and load's sections machine after machine.
    out.groups
        .sort_by(|a, b| (&a.key.scenario, &a.key.load).cmp(&(&b.key.scenario, &b.key.load)));
    out
}

/// Another machine's ladder rows beside the first's when their rungs are
/// the same; the first's alone when it has one.
fn merge_ladder(out: &mut RunReport, other: Option<crate::report::ladder::Ladder>) {
    match (&mut out.ladder, other) {
        (Some(have), Some(l)) => {
            let names = |l: &crate::report::ladder::Ladder| -> Vec<String> {
                l.steps.iter().map(|s| s.name.clone()).collect()
            };
            if names(have) == names(&l) {
                have.rows.extend(l.rows);
            }
        }
        (None, l) => out.ladder = l,
        _ => {}
    }
}

/// Every case key (and ratio row) of `r` labelled with its machine; the
/// cases of a run other than the report's say which run they are.
fn label_run(r: &mut RunReport, label: &str, run: Option<i64>) {
    for row in r.ladder.iter_mut().flat_map(|l| l.rows.iter_mut()) {
        row.host = label.to_string();
    }
    for g in &mut r.groups {
        g.key.host = label.to_string();
        g.label = format!("{} · on {label}", g.label);
        g.run_id = run;
    }
    for p in &mut r.problems {
        p.key.host = label.to_string();
    }
    for row in &mut r.paired.rows {
        row.key.host = label.to_string();
        row.reference.host = label.to_string();
    }
}

fn machine(run: &RunInfo, db: &str, label: &str) -> Machine {
    Machine {
        label: label.to_string(),
        run: run.id,
        db: db.to_string(),
        suite: run.suite.clone(),
        started_at: run.started_at.clone(),
        host: run.host.clone(),
    }
}

/// The machines' labels: their host records', made distinct by the run
/// (and database) when two read the same.
fn labels(parts: &[Part]) -> Vec<String> {
    let base: Vec<String> = parts.iter().map(|p| host_label(&p.host_json)).collect();
    base.iter()
        .enumerate()
        .map(|(i, l)| {
            if base.iter().filter(|x| *x == l).count() == 1 {
                return l.clone();
            }
            let p = &parts[i];
            let same_db = parts
                .iter()
                .filter(|q| q.db == p.db && host_label(&q.host_json) == *l)
                .count()
                > 1;
            if same_db {
                format!("{l} (run {})", p.report.run.id)
            } else {
                format!("{l} (run {} of {})", p.report.run.id, p.db)
            }
        })
        .collect()
}

/// CPU model and CPU count from a run's host record; what is missing is
/// left out, an unreadable record is "unknown machine".
pub fn host_label(host_json: &str) -> String {
    let v: serde_json::Value = serde_json::from_str(host_json).unwrap_or_default();
    let model = v["cpu_model"]
        .as_str()
        .map(str::trim)
        .filter(|s| !s.is_empty());
    let cpus = v["cpus"].as_u64().map(|n| format!("{n} CPUs"));
    let parts: Vec<String> = model.map(String::from).into_iter().chain(cpus).collect();
    if parts.is_empty() {
        "unknown machine".into()
    } else {
        parts.join(" · ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_label_names_the_machine_from_what_the_run_stored() {
        assert_eq!(
            host_label(r#"{"cpu_model":" Xeon E5 ","cpus":40,"os":"x"}"#),
            "Xeon E5 · 40 CPUs"
        );
        assert_eq!(host_label(r#"{"cpus":2}"#), "2 CPUs");
        assert_eq!(host_label(r#"{"cpu_model":""}"#), "unknown machine");
        assert_eq!(host_label("not json"), "unknown machine");
    }
}
