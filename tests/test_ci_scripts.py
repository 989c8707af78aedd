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
