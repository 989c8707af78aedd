//! The results database schema and its migrations.
//!
//! `PRAGMA user_version` holds the schema version. Each migration moves the
//! database one version forward inside a transaction; a database newer than
//! this fairbench is refused rather than misread. Documented in
//! docs/results-db.md: change both together.

use rusqlite::{Connection, Transaction};

/// Migrations in order; index `i` takes the schema from version `i` to `i+1`.
const MIGRATIONS: &[&str] = &[
    V1, V2, V3, V4, V5, V6, V7, V8, V9, V10, V11, V12, V13, V14, V15,
];

pub const VERSION: i64 = MIGRATIONS.len() as i64;

const V1: &str = r#"
CREATE TABLE runs (
    id                INTEGER PRIMARY KEY,
    started_at        TEXT NOT NULL,              -- RFC 3339, UTC
    finished_at       TEXT,
    suite             TEXT NOT NULL,              -- suite name
    suite_toml        TEXT NOT NULL,              -- the suite as run, overrides applied
    state             TEXT NOT NULL CHECK (state IN ('running', 'done', 'interrupted', 'failed')),
    reason            TEXT,                       -- why it failed or was interrupted
    fairbench_version TEXT NOT NULL,
    git_revision      TEXT,
    host_json         TEXT NOT NULL,              -- machine metadata, see docs
    toolchains_json   TEXT NOT NULL DEFAULT '{}', -- server -> {toolchain, version, framework_version}
    planned_cases     INTEGER NOT NULL,
    pid               INTEGER                     -- the fairbench process running it
);

CREATE TABLE cases (
    id                  INTEGER PRIMARY KEY,
    run_id              INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    seq                 INTEGER NOT NULL,         -- position in the plan, from 0
    server              TEXT NOT NULL,
    language            TEXT NOT NULL,
    framework           TEXT NOT NULL,
    mode                TEXT NOT NULL,            -- compile/run mode of the variant
    response            TEXT NOT NULL,            -- 'default' or 'normalized'
    variant_params_json TEXT NOT NULL DEFAULT '{}',
    scenario            TEXT NOT NULL,
    cores               INTEGER NOT NULL,         -- CPUs the server was given ('all' resolved)
    cores_requested     TEXT NOT NULL,            -- as the suite said: a number or 'all'
    server_cpus         TEXT,                     -- CPU list, e.g. '1' or '0-1'
    generator_cpus      TEXT,
    cpus_shared         INTEGER NOT NULL DEFAULT 0, -- 1: too few CPUs to separate server and load
    load_label          TEXT NOT NULL,            -- e.g. 'closed c=50 t=1'; matches cases across runs
    load_json           TEXT NOT NULL,            -- model, connections, threads, rate, pipeline, durations
    sweep               TEXT,                     -- sweep group key when the case is a sweep step
    repetition          INTEGER NOT NULL,         -- from 1
    state               TEXT NOT NULL CHECK (state IN ('pending', 'running', 'done', 'failed', 'skipped')),
    reason              TEXT,
    log_tail            TEXT,
    fair                INTEGER,                  -- 1 passed its contract, 0 flagged, NULL unchecked
    parity_json         TEXT,                     -- check results: bytes, framing, rule grades
    header_bytes        INTEGER,
    body_bytes          INTEGER,
    started_at          TEXT,
    finished_at         TEXT,
    -- Figures of the measurement (NULL until done). Latencies in µs.
    requests            INTEGER,
    duration_s          REAL,
    rps                 REAL,
    rps_stdev           REAL,                     -- across 1 s intervals
    rps_max             REAL,
    bytes_read          INTEGER,
    err_connect         INTEGER,
    err_read            INTEGER,
    err_write           INTEGER,
    err_timeout         INTEGER,
    err_status          INTEGER,
    err_parse           INTEGER,
    timeouts_per_million REAL,
    lat_min             INTEGER,
    lat_mean            REAL,
    lat_stdev           REAL,
    lat_max             INTEGER,
    lat_p50             INTEGER,
    lat_p75             INTEGER,
    lat_p90             INTEGER,
    lat_p99             INTEGER,
    lat_p999            INTEGER,
    lat_p9999           INTEGER,
    unc_p50             INTEGER,                  -- service time (from the actual send)
    unc_p99             INTEGER,
    lateness_p99        INTEGER,                  -- constant rate: generator send lateness
    generator_cpu_s     REAL,
    generator_busy      REAL,
    saturated           INTEGER,
    server_cpu_s        REAL,                     -- whole process tree, measurement only
    server_cpu_us_per_request REAL,
    server_rss_peak     INTEGER,                  -- bytes
    server_rss_mean     INTEGER,
    server_threads_max  INTEGER,
    warnings_json       TEXT NOT NULL DEFAULT '[]',
    UNIQUE (run_id, seq)
);
CREATE INDEX cases_by_run ON cases (run_id, state);

-- Full latency histograms, HdrHistogram V2 + DEFLATE encoding, values in µs.
CREATE TABLE histograms (
    case_id  INTEGER NOT NULL REFERENCES cases(id) ON DELETE CASCADE,
    kind     TEXT NOT NULL CHECK (kind IN ('latency', 'uncorrected', 'lateness')),
    encoding TEXT NOT NULL DEFAULT 'hdr-v2-deflate',
    data     BLOB NOT NULL,
    PRIMARY KEY (case_id, kind)
);

-- Per-second series, warm-up included (second < 0), with server metrics.
CREATE TABLE samples (
    case_id      INTEGER NOT NULL REFERENCES cases(id) ON DELETE CASCADE,
    second       INTEGER NOT NULL,
    phase        TEXT NOT NULL CHECK (phase IN ('warmup', 'measure')),
    start_s      REAL NOT NULL,
    duration_s   REAL NOT NULL,
    requests     INTEGER NOT NULL,
    errors       INTEGER NOT NULL,
    bytes        INTEGER NOT NULL,
    p50_us       INTEGER NOT NULL,
    p99_us       INTEGER NOT NULL,
    interval_hist BLOB,                           -- the interval's histogram (hdr-v2-deflate)
    server_cpu   REAL,                            -- cores in use during the second
    server_rss   INTEGER,                         -- bytes
    server_threads INTEGER,
    PRIMARY KEY (case_id, second)
);

-- Rate sweeps: the knee found for one server/variant/scenario/cores.
CREATE TABLE sweeps (
    id          INTEGER PRIMARY KEY,
    run_id      INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    sweep       TEXT NOT NULL,                    -- the key shared by its step cases
    server      TEXT NOT NULL,
    mode        TEXT NOT NULL,
    response    TEXT NOT NULL,
    scenario    TEXT NOT NULL,
    cores       INTEGER NOT NULL,
    slo_quantile REAL NOT NULL,                   -- e.g. 0.99
    slo_us      INTEGER NOT NULL,                 -- e.g. 10000
    knee_rps    REAL,                             -- highest rate meeting the objective; NULL: none did
    state       TEXT NOT NULL CHECK (state IN ('done', 'failed')),
    reason      TEXT,
    UNIQUE (run_id, sweep)
);
"#;

/// Version 2: where things ran (topologies, ssh hosts) and, when several
/// load generators shared a case, each one's own part of the merged result.
const V2: &str = r#"
ALTER TABLE runs ADD COLUMN topology_json TEXT;   -- where the server and the load ran; NULL: this machine

-- One row per load generator of a case measured by several (or by one in a
-- namespace or on an ssh host). The case row holds the exact merge of these.
CREATE TABLE case_parts (
    case_id         INTEGER NOT NULL REFERENCES cases(id) ON DELETE CASCADE,
    part            INTEGER NOT NULL,             -- generator index, from 0
    host            TEXT NOT NULL,                -- 'local', 'netns NAME', 'ssh DEST'
    url             TEXT NOT NULL,                -- as this generator addressed the server
    connections     INTEGER NOT NULL,
    threads         INTEGER NOT NULL,
    rate            REAL,                         -- its share of a constant rate; NULL: closed loop
    requests        INTEGER NOT NULL,
    duration_s      REAL NOT NULL,
    rps             REAL NOT NULL,
    bytes_read      INTEGER NOT NULL,
    err_connect     INTEGER NOT NULL,
    err_read        INTEGER NOT NULL,
    err_write       INTEGER NOT NULL,
    err_timeout     INTEGER NOT NULL,
    err_status      INTEGER NOT NULL,
    err_parse       INTEGER NOT NULL,
    lat_p50         INTEGER,
    lat_p99         INTEGER,
    lat_max         INTEGER,
    generator_cpu_s REAL,
    generator_busy  REAL,
    saturated       INTEGER,
    latency         BLOB NOT NULL,                -- hdr-v2-deflate, µs, like histograms.data
    uncorrected     BLOB NOT NULL,
    lateness        BLOB,
    warnings_json   TEXT NOT NULL DEFAULT '[]',
    PRIMARY KEY (case_id, part)
);

-- Each generator's own per-second series.
CREATE TABLE part_samples (
    case_id       INTEGER NOT NULL,
    part          INTEGER NOT NULL,
    second        INTEGER NOT NULL,
    phase         TEXT NOT NULL CHECK (phase IN ('warmup', 'measure')),
    start_s       REAL NOT NULL,
    duration_s    REAL NOT NULL,
    requests      INTEGER NOT NULL,
    errors        INTEGER NOT NULL,
    bytes         INTEGER NOT NULL,
    p50_us        INTEGER NOT NULL,
    p99_us        INTEGER NOT NULL,
    interval_hist BLOB,
    PRIMARY KEY (case_id, part, second),
    FOREIGN KEY (case_id, part) REFERENCES case_parts (case_id, part) ON DELETE CASCADE
);
"#;

// Hypervisor steal time during a case: on a shared cloud host the machine
// itself is slowed from outside, and a case measured then is not steady.
const V3: &str = r#"
ALTER TABLE cases ADD COLUMN steal_fraction REAL;
"#;

// The ledger (issue: every planned request accounted for): how many requests
// the window planned, how many were still unanswered at the end, the drain
// after the window as a phase of the series, and the histogram of answered
// requests alone beside the honest one. SQLite cannot alter a CHECK, so the
// tables whose CHECKs change are rebuilt.
const V4: &str = r#"
ALTER TABLE cases ADD COLUMN planned INTEGER;
ALTER TABLE cases ADD COLUMN err_unanswered INTEGER;
ALTER TABLE case_parts ADD COLUMN planned INTEGER;
ALTER TABLE case_parts ADD COLUMN err_unanswered INTEGER;

CREATE TABLE histograms_v4 (
    case_id  INTEGER NOT NULL REFERENCES cases(id) ON DELETE CASCADE,
    kind     TEXT NOT NULL CHECK (kind IN ('latency', 'answered', 'uncorrected', 'lateness')),
    encoding TEXT NOT NULL DEFAULT 'hdr-v2-deflate',
    data     BLOB NOT NULL,
    PRIMARY KEY (case_id, kind)
);
INSERT INTO histograms_v4 SELECT case_id, kind, encoding, data FROM histograms;
DROP TABLE histograms;
ALTER TABLE histograms_v4 RENAME TO histograms;

CREATE TABLE samples_v4 (
    case_id      INTEGER NOT NULL REFERENCES cases(id) ON DELETE CASCADE,
    second       INTEGER NOT NULL,
    phase        TEXT NOT NULL CHECK (phase IN ('warmup', 'measure', 'drain')),
    start_s      REAL NOT NULL,
    duration_s   REAL NOT NULL,
    requests     INTEGER NOT NULL,
    errors       INTEGER NOT NULL,
    bytes        INTEGER NOT NULL,
    p50_us       INTEGER NOT NULL,
    p99_us       INTEGER NOT NULL,
    interval_hist BLOB,
    server_cpu   REAL,
    server_rss   INTEGER,
    server_threads INTEGER,
    PRIMARY KEY (case_id, second)
);
INSERT INTO samples_v4 SELECT * FROM samples;
DROP TABLE samples;
ALTER TABLE samples_v4 RENAME TO samples;

CREATE TABLE part_samples_v4 (
    case_id       INTEGER NOT NULL,
    part          INTEGER NOT NULL,
    second        INTEGER NOT NULL,
    phase         TEXT NOT NULL CHECK (phase IN ('warmup', 'measure', 'drain')),
    start_s       REAL NOT NULL,
    duration_s    REAL NOT NULL,
    requests      INTEGER NOT NULL,
    errors        INTEGER NOT NULL,
    bytes         INTEGER NOT NULL,
    p50_us        INTEGER NOT NULL,
    p99_us        INTEGER NOT NULL,
    interval_hist BLOB,
    PRIMARY KEY (case_id, part, second),
    FOREIGN KEY (case_id, part) REFERENCES case_parts (case_id, part) ON DELETE CASCADE
);
INSERT INTO part_samples_v4 SELECT * FROM part_samples;
DROP TABLE part_samples;
ALTER TABLE part_samples_v4 RENAME TO part_samples;
"#;

// Containment (issue 12): how the server and the load generator were held
// to their CPUs, the cpuset the kernel enforced, and the server's control
// group's own CPU and memory figures beside the /proc ones.
const V5: &str = r#"
ALTER TABLE cases ADD COLUMN containment TEXT;
ALTER TABLE cases ADD COLUMN server_cpuset TEXT;
ALTER TABLE cases ADD COLUMN server_group_cpu_s REAL;
ALTER TABLE cases ADD COLUMN server_group_cpu_us_per_request REAL;
ALTER TABLE cases ADD COLUMN server_group_memory_peak INTEGER;
ALTER TABLE cases ADD COLUMN generator_containment TEXT;
ALTER TABLE cases ADD COLUMN generator_cpuset TEXT;
"#;

// HTTP/2 (issue 21): the protocol each case and sweep spoke to its server.
// Every case before it spoke HTTP/1.1, which the default says.
const V6: &str = r#"
ALTER TABLE cases ADD COLUMN protocol TEXT NOT NULL DEFAULT 'http/1.1';
ALTER TABLE sweeps ADD COLUMN protocol TEXT NOT NULL DEFAULT 'http/1.1';
"#;

// The database scenarios (issue 26): the database's own control group's
// CPU over the measurement and per request, its memory peak during the
// case, its cpuset, and the connection pool the server was told to keep.
// NULL for cases without a database.
const V7: &str = r#"
ALTER TABLE cases ADD COLUMN db_cpu_s REAL;
ALTER TABLE cases ADD COLUMN db_cpu_us_per_request REAL;
ALTER TABLE cases ADD COLUMN db_memory_peak INTEGER;
ALTER TABLE cases ADD COLUMN db_cpus TEXT;
ALTER TABLE cases ADD COLUMN db_pool INTEGER;
"#;

// Version 8 was reserved for saved loads, which needed no column: it
// changes nothing.
const V8: &str = "";

// The figures the studies took from wrk (issue 24): its per-thread Req/Sec
// (mean, stdev, max of every load thread's 100 ms rates) and, for timeouts
// counted wrk's way, the answers that came after the timeout.
const V9: &str = r#"
ALTER TABLE cases ADD COLUMN thread_rps_mean REAL;
ALTER TABLE cases ADD COLUMN thread_rps_stdev REAL;
ALTER TABLE cases ADD COLUMN thread_rps_max REAL;
ALTER TABLE cases ADD COLUMN thread_rps_samples INTEGER;
ALTER TABLE cases ADD COLUMN late_answers INTEGER;
"#;

// The latency and request count wrk 4.x prints (its own correction and
// timeout rule, issue 39), for cases whose timeouts were counted its way,
// and the most cores the server kept busy in one second (the study
// reported cores in use).
const V10: &str = r#"
ALTER TABLE cases ADD COLUMN wrk_requests INTEGER;
ALTER TABLE cases ADD COLUMN wrk_lat_mean REAL;
ALTER TABLE cases ADD COLUMN wrk_lat_stdev REAL;
ALTER TABLE cases ADD COLUMN wrk_lat_within_stdev REAL;
ALTER TABLE cases ADD COLUMN wrk_lat_max INTEGER;
ALTER TABLE cases ADD COLUMN wrk_lat_p50 INTEGER;
ALTER TABLE cases ADD COLUMN wrk_lat_p75 INTEGER;
ALTER TABLE cases ADD COLUMN wrk_lat_p90 INTEGER;
ALTER TABLE cases ADD COLUMN wrk_lat_p99 INTEGER;
ALTER TABLE cases ADD COLUMN wrk_interval_us INTEGER;
ALTER TABLE cases ADD COLUMN server_cores_peak REAL;
"#;

// Calibration (issue 39): the publication's own tool run on the same case,
// what it printed kept whole and as figures.
const V11: &str = r#"
CREATE TABLE calibrations (
    case_id INTEGER PRIMARY KEY REFERENCES cases(id) ON DELETE CASCADE,
    tool TEXT NOT NULL,
    command TEXT NOT NULL,
    state TEXT NOT NULL,
    reason TEXT,
    output TEXT NOT NULL,
    figures_json TEXT
);
"#;

// Ladders (issue 39): the suite's `[[step]]` each case measured, which
// its key holds beside server, scenario, cores and load. NULL without one.
const V12: &str = r#"
ALTER TABLE cases ADD COLUMN step TEXT;
-- What each case measured, by version (store/versions.rs).
-- Where a run's machine time went (runner/time_spent.rs).
ALTER TABLE runs ADD COLUMN time_spent_json TEXT;
CREATE TABLE case_versions (
    case_id       INTEGER PRIMARY KEY REFERENCES cases(id) ON DELETE CASCADE,
    versions_json TEXT NOT NULL
);
"#;

// Adaptive repetitions (issue 42): why a run asking for a precision
// stopped, at which repetition, and what a fixed design would have spent
// (runner/stopping.rs). NULL for runs of a fixed count and before it.
const V13: &str = r#"
ALTER TABLE runs ADD COLUMN stopped_json TEXT;
"#;

// What the load's successes carried, so a run shows the work it measured: how
// many answers had each body size (`fairbench_engine::bodies`), beside the
// one answer the check graded (`body_bytes`), and for a scenario of a
// fixed body how many were not that size. NULL before it.
const V14: &str = r#"
ALTER TABLE cases ADD COLUMN body_sizes_json TEXT;
ALTER TABLE cases ADD COLUMN body_unlike INTEGER;
"#;

// Whether the load generator bounded the case's figures by any cause the
// engine knows (`Outcome::generator_limited`): saturated, paused by a CPU
// quota, sending a constant rate late, or failing connects on its own
// machine. `saturated` and `lateness_p99` keep only two of them, so a
// verdict drawn from stored rows would charge the others to the server.
// And how many connects failed on this machine: then the failed requests
// are the generator's too, and not the server's to be judged by. NULL
// before it.
const V15: &str = r#"
ALTER TABLE cases ADD COLUMN generator_limited INTEGER;
ALTER TABLE cases ADD COLUMN connect_local INTEGER;
"#;

/// A database as an older fairbench left it: the migrations up to
/// `version` only (tests of the later migrations).
#[cfg(test)]
pub(crate) fn create_at(conn: &mut Connection, version: usize) {
    for (i, sql) in MIGRATIONS.iter().enumerate().take(version) {
        conn.execute_batch(sql).unwrap();
        conn.pragma_update(None, "user_version", (i + 1) as i64)
            .unwrap();
    }
}

/// Brings `conn` to the current schema version.
pub fn migrate(conn: &mut Connection) -> Result<(), String> {
    let current: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .map_err(|e| e.to_string())?;
    if current > VERSION {
        return Err(format!(
            "the database has schema version {current}, newer than this fairbench understands ({VERSION}); use a newer fairbench"
        ));
    }
    for (i, sql) in MIGRATIONS.iter().enumerate().skip(current as usize) {
        let tx: Transaction = conn.transaction().map_err(|e| e.to_string())?;
        tx.execute_batch(sql)
            .map_err(|e| format!("migration to version {}: {e}", i + 1))?;
        tx.pragma_update(None, "user_version", (i + 1) as i64)
            .map_err(|e| e.to_string())?;
        tx.commit().map_err(|e| e.to_string())?;
    }
    Ok(())
}
