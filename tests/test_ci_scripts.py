"""The CI scripts' parsers on libtest's own output: the flake hunt must name
each failing test with its message, and `make test` its slowest tests."""

import importlib.util
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"


def load(name):
    spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


FAILED_RUN = """
running 3 tests
test a_fine_one ... ok
test two_streams_of_one_connection ... FAILED
test another ... FAILED

failures:

---- two_streams_of_one_connection stdout ----

thread 'two_streams_of_one_connection' (1234) panicked at crates/engine/tests/h2.rs:150:5:
assertion `left == right` failed
  left: 4
 right: 2
note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace

---- another stdout ----
some output of its own
thread 'another' panicked at crates/x.rs:1:1:
it broke

failures:
    two_streams_of_one_connection
    another

test result: FAILED. 1 passed; 2 failed; 0 ignored; 0 measured; 0 filtered out; finished in 20.86s
"""


def test_the_hunt_names_each_failing_test_with_its_message():
    hunt = load("flake_hunt")
    got = dict(hunt.parse_failures(FAILED_RUN))
    assert set(got) == {"two_streams_of_one_connection", "another"}
    assert got["two_streams_of_one_connection"] == (
        "crates/engine/tests/h2.rs:150:5: assertion `left == right` failed left: 4 right: 2"
    )
    assert got["another"] == "crates/x.rs:1:1: it broke"
    assert hunt.summary_counts(FAILED_RUN) == (1, 2)
    assert hunt.summary_counts("killed before the end") is None


def test_the_hunt_reads_package_names_of_both_id_forms():
    hunt = load("flake_hunt")
    assert hunt.package_name("path+file:///w/crates/engine#fairbench-engine@0.1.0") == "fairbench-engine"
    assert hunt.package_name("path+file:///w/crates/fairbench#0.1.0") == "fairbench"
    assert hunt.package_name("fairbench-sys 0.1.0 (path+file:///w/crates/sys)") == "fairbench-sys"


TIMED_LOG = """
     Running unittests src/lib.rs (target/debug/deps/fairbench_engine-0123456789abcdef)
test quick ... ok <0.001s>
     Running tests/h2.rs (target/debug/deps/h2-129dfbf8b7ae5ad0)
test slow_one ... ok <12.500s>
test failing_one ... FAILED <3.250s>
"""


def test_make_test_names_its_slowest_tests_with_their_binary():
    times = load("test_times")
    top, count, total = times.slowest(TIMED_LOG.splitlines(), n=2)
    assert count == 3
    assert abs(total - 15.751) < 1e-9
    assert top == [
        (12.5, "slow_one", "ok", "h2"),
        (3.25, "failing_one", "FAILED", "h2"),
    ]


def test_the_hunt_snapshots_the_tree_so_edits_cannot_reach_it(tmp_path, monkeypatch):
    """The hunt runs its tests from a copy of the tree: an edit made while
    it runs (a golden file, a source the house rules read) changes nothing
    hunted, and the next snapshot follows the tree again."""
    import os
    import subprocess

    hunt = load("flake_hunt")
    root, snap = tmp_path / "repo", tmp_path / "snap"
    (root / "src").mkdir(parents=True)
    (root / "src" / "a.rs").write_text("one")
    (root / "gone.txt").write_text("old")
    (root / ".gitignore").write_text("target/\n")
    (root / "target").mkdir()
    (root / "target" / "big").write_text("ignored")
    git = lambda *a: subprocess.run(["git", *a], cwd=root, check=True, capture_output=True)
    git("init", "-q")
    git("add", ".")
    (root / "untracked.txt").write_text("new")
    monkeypatch.setattr(hunt, "ROOT", root)
    monkeypatch.setattr(hunt, "SNAPSHOT", snap)
    hunt.snapshot()
    assert (snap / "src" / "a.rs").read_text() == "one"
    assert (snap / "untracked.txt").read_text() == "new"
    assert not (snap / "target").exists()
    assert not (snap / ".git").exists()
    mtime = (snap / "src" / "a.rs").stat().st_mtime_ns
    assert mtime == (root / "src" / "a.rs").stat().st_mtime_ns
    # An edit after the snapshot does not reach it...
    (root / "src" / "a.rs").write_text("two")
    assert (snap / "src" / "a.rs").read_text() == "one"
    # ...the next snapshot takes it, drops what the tree lost, and leaves
    # unchanged files as they were (cargo's next build stays incremental).
    os.remove(root / "gone.txt")
    before = (snap / "untracked.txt").stat().st_ino
    hunt.snapshot()
    assert (snap / "src" / "a.rs").read_text() == "two"
    assert not (snap / "gone.txt").exists()
    assert (snap / "untracked.txt").stat().st_ino == before


def test_a_tree_that_does_not_build_is_one_line_and_exit_1(tmp_path, monkeypatch, capsys):
    """A hunt of a tree that does not compile says so in one line (cargo
    has printed why above it), not with a Python traceback."""
    import subprocess

    hunt = load("flake_hunt")

    def broken(_select_all):
        raise subprocess.CalledProcessError(101, ["cargo", "test", "--no-run"])

    monkeypatch.setattr(hunt, "build", broken)
    code = hunt.main(["--quick", "--out", str(tmp_path / "hunt")])
    assert code == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "did not build" in err[0], err


def test_the_hunt_runs_each_binary_once_a_round_and_never_more_than_jobs_at_once():
    import threading
    import time

    hunt = load("flake_hunt")
    copies = [(f"b{i}", None, None) for i in range(7)]
    ordered = hunt.longest_first(copies, {"b3": 9.0, "b5": 4.0, "b1": 1.0})
    assert [c[0] for c in ordered[:3]] == ["b3", "b5", "b1"]
    seen, running, peak = [], [0], [0]
    lock = threading.Lock()

    def start_one(copy):
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        time.sleep(0.02)
        with lock:
            running[0] -= 1
            seen.append(copy[0])

    hunt.run_round(ordered, 3, start_one)
    assert sorted(seen) == sorted(c[0] for c in copies)
    assert peak[0] == 3
    seen.clear()
    peak[0] = 0
    hunt.run_round(ordered, 1, start_one)
    assert seen == [c[0] for c in ordered] and peak[0] == 1


def test_the_hunt_refuses_jobs_below_one(tmp_path, capsys):
    hunt = load("flake_hunt")
    assert hunt.main(["--jobs", "0", "--out", str(tmp_path / "h")]) == 2
    assert "--jobs" in capsys.readouterr().err


def test_the_hunt_names_its_slowest_tests_by_median():
    from collections import defaultdict

    hunt = load("flake_hunt")
    r = {"a::x": {"tests": defaultdict(list, {"slow": [5.0, 7.0, 6.0], "fast": [0.1]})}}
    lines = hunt.slowest_tests([("a::x", None, None)], r, n=1)
    assert lines[1].split() == ["6.0", "slow", "(a::x)"]


def test_the_hunt_says_what_its_build_cache_holds_and_cleans_it_when_asked(
    tmp_path, monkeypatch, capsys
):
    """A hunt's build cache is a second target folder (17 GiB here): the
    hunt names its size, and removes it with --clean."""
    hunt = load("flake_hunt")
    # The test binary's crate folder, where the hunt runs it (no earlier
    # hunt's snapshot is needed: a clean clone has none).
    (tmp_path / "Cargo.toml").write_text("")
    cache = tmp_path / "cache"
    (cache / "debug").mkdir(parents=True)
    (cache / "debug" / "big").write_bytes(b"x" * (3 << 20))
    exe = tmp_path / "a-test"
    exe.write_text("#!/bin/sh\necho 'test result: ok. 1 passed; 0 failed; 0 ignored'\n")
    exe.chmod(0o755)
    fb = tmp_path / "fairbench"
    fb.write_text("")
    monkeypatch.setattr(hunt, "HUNT_TARGET", cache)
    monkeypatch.setattr(hunt, "TIMINGS", tmp_path / "timings.json")
    monkeypatch.setattr(hunt, "build", lambda _all: ([("x::a", exe, tmp_path)], fb))
    args = ["--quiet", "1", "--loaded", "0", "--out"]
    assert hunt.main(args + [str(tmp_path / "h1")]) == 0
    said = capsys.readouterr().out
    assert "its build cache holds 0.0 GiB" in said and "--clean removes it" in said, said
    assert cache.exists()
    assert hunt.main(args + [str(tmp_path / "h2"), "--clean"]) == 0
    assert "removed its build cache" in capsys.readouterr().out
    assert not cache.exists()
