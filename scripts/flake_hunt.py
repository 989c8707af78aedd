#!/usr/bin/env python3
"""The flake hunt: every test binary run many times, quiet and beside a
busy loop on each CPU, from copies taken once, so that a test that fails
one run in five is found before CI finds it.

    bash scripts/flake-hunt.sh            # 10 quiet + 5 loaded runs per binary
    bash scripts/flake-hunt.sh --quick    # 3 quiet + 2 loaded
    bash scripts/flake-hunt.sh --only 'engine|load_'   # binaries matching
    bash scripts/flake-hunt.sh --quick --clean         # and remove its build cache

It copies the working tree (tracked and untracked files, not ignored ones)
to target/flake-hunt/src and builds the test binaries there once (`cargo
test --no-run`, into target/flake-hunt/target, kept between hunts so that
the next build is incremental), then copies them and the `fairbench`
binary into the hunt's folder and runs each copy from its crate's folder
in the snapshot, as cargo would. Neither a rebuild nor an edit during the
hunt can change what is hunted: the tests read their golden files, the
house rules read the sources, and both come from the snapshot. Runs
alternate by round: every binary once, then the next round; the loaded
rounds start one busy loop pinned to each CPU and end them (by PID)
before the next round. Within a round one binary runs at a time, as in
CI, or `--jobs J` at once, the longest first: harsher than CI (a timing
test meets another binary's threads, sockets and builds), and faster.
Each binary runs as CI runs it (libtest's
--report-time). It prints one line per binary (runs, failures, the median
wall and CPU time of a run) and, under it, each failing test with how
often it failed and the first line of its message; then the ten slowest
tests. Exit status: 0 when nothing failed, 1 otherwise, 2 on bad
arguments.
"""

import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
from test_times import TIMED  # noqa: E402  (one reading of libtest's timed lines)

# The hunt covers the integration tests of the engine and the CLI and the
# unit tests of every crate: a sys unit test that raced a thread's exit
# failed CI while the hunt left it out. --all adds every other test binary
# of the workspace.
DEFAULT_SET = [
    ("fairbench-engine", "test"),
    ("fairbench", "test"),
]
UNIT_KINDS = ("lib", "bin")
# Binaries run at once within a round: one, as CI runs them. More halve
# the hunt's time but put every timing test beside another binary's
# threads, sockets and builds, which CI never does; on 2026-11-29 `--jobs
# 2` failed nine tests that pass one binary at a time beside busy loops
# (README, "the flake hunt").
DEFAULT_JOBS = 1

FAILED_LINE = re.compile(r"^test (\S+) \.\.\. FAILED")
STDOUT_HEAD = re.compile(r"^---- (\S+) stdout ----$")
# "thread 'name' (1234) panicked at file:line:col:" (the id since Rust 1.88)
PANIC_HEAD = re.compile(r"^thread '.*?'(?: \(\d+\))? panicked at (\S+):$")
SUMMARY = re.compile(r"^test result: (ok|FAILED)\. (\d+) passed; (\d+) failed")


def parse_failures(text):
    """The failing tests of one libtest run and each one's message: the
    panic's location and its first line (an assertion's `left`/`right`
    follow on the next lines and are joined in)."""
    failed = [m.group(1) for m in map(FAILED_LINE.match, text.splitlines()) if m]
    messages = {}
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        head = STDOUT_HEAD.match(lines[i])
        if head:
            name = head.group(1)
            msg = ""
            j = i + 1
            while j < len(lines) and not STDOUT_HEAD.match(lines[j]) and lines[j] != "failures:":
                panic = PANIC_HEAD.match(lines[j])
                if panic:
                    rest = []
                    for extra in lines[j + 1 : j + 4]:
                        if not extra.strip() or extra.startswith("note:") or STDOUT_HEAD.match(extra):
                            break
                        rest.append(extra.strip())
                    msg = f"{panic.group(1)}: {' '.join(rest)}"
                    break
                j += 1
            messages[name] = msg[:300]
            i = j
        else:
            i += 1
    return [(name, messages.get(name, "")) for name in failed]


def summary_counts(text):
    """(passed, failed) from libtest's closing line, or None when the
    binary never printed one (it crashed, hung or was killed)."""
    for line in reversed(text.splitlines()):
        m = SUMMARY.match(line)
        if m:
            return int(m.group(2)), int(m.group(3))
    return None


SNAPSHOT = ROOT / "target" / "flake-hunt" / "src"
HUNT_TARGET = ROOT / "target" / "flake-hunt" / "target"
TIMINGS = ROOT / "target" / "flake-hunt" / "timings.json"


def tree_files():
    """The working tree's files relative to ROOT: git's tracked and
    untracked ones without the ignored, or, outside a git checkout, every
    file but target/ and .git/."""
    try:
        out = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, check=True,
        ).stdout
        return [os.fsdecode(f) for f in out.split(b"\0") if f]
    except (OSError, subprocess.CalledProcessError):
        files = []
        for d, dirs, names in os.walk(ROOT):
            if Path(d) == ROOT:
                dirs[:] = [x for x in dirs if x not in ("target", ".git")]
            files.extend(str(Path(d, n).relative_to(ROOT)) for n in names)
        return files


def snapshot():
    """Makes SNAPSHOT the working tree as it is now. Files keep their
    modification times, and unchanged ones are not rewritten, so cargo's
    next build there is incremental."""
    keep = set()
    for rel in tree_files():
        src, dst = ROOT / rel, SNAPSHOT / rel
        if not (src.is_file() or src.is_symlink()):
            continue  # tracked, deleted in the tree
        keep.add(rel)
        if dst.is_symlink() or (dst.exists() and src.is_symlink()):
            dst.unlink()
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_symlink():
            os.symlink(os.readlink(src), dst)
            continue
        st = src.stat()
        if dst.exists():
            d = dst.stat()
            if d.st_size == st.st_size and d.st_mtime_ns == st.st_mtime_ns:
                continue
        shutil.copy2(src, dst)
    for p in sorted(SNAPSHOT.rglob("*"), reverse=True):
        rel = str(p.relative_to(SNAPSHOT))
        if (p.is_file() or p.is_symlink()) and rel not in keep:
            p.unlink()
        elif p.is_dir() and not p.is_symlink() and not any(p.iterdir()):
            p.rmdir()


def build(select_all):
    """Builds the test binaries once, from a snapshot of the tree; returns
    [(label, path, crate dir in the snapshot)] and the fairbench binary."""
    snapshot()
    cmd = [
        "cargo", "test", "--workspace", "--no-run",
        "--message-format=json-render-diagnostics",
    ]
    # Without incremental caches: each hunt's snapshot differs, and their
    # caches piled up until the hunt's target filled the disk (39 GB after
    # a few days' hunts, on 2026-11-30); the dependencies stay built.
    env = dict(os.environ, CARGO_TARGET_DIR=str(HUNT_TARGET), CARGO_INCREMENTAL="0")
    out = subprocess.run(
        cmd, cwd=SNAPSHOT, env=env, stdout=subprocess.PIPE, check=True, text=True,
    )
    found = []
    for line in out.stdout.splitlines():
        try:
            msg = json.loads(line)
        except json.JSONDecodeError:
            continue
        if msg.get("reason") != "compiler-artifact" or not msg.get("executable"):
            continue
        if not msg.get("profile", {}).get("test"):
            continue
        target = msg["target"]
        kind = target["kind"][0]
        package = package_name(msg["package_id"])
        if not select_all and kind not in UNIT_KINDS and (package, kind) not in DEFAULT_SET:
            continue
        if kind == "test":
            label = f"{package}::{target['name']}"
        else:
            label = f"{package} ({kind} unit tests)"
        found.append((label, Path(msg["executable"]), Path(target["src_path"]).parent))
    fairbench = HUNT_TARGET / "debug" / "fairbench"
    return sorted(found), fairbench


def package_name(package_id):
    # "path+file:///…/crates/engine#fairbench-engine@0.1.0" or the older
    # "fairbench-engine 0.1.0 (path+file://…)".
    # "…/crates/fairbench#0.1.0" when the folder is named as the package.
    if "#" in package_id:
        head, tail = package_id.rsplit("#", 1)
        return tail.split("@", 1)[0] if "@" in tail else head.rstrip("/").rsplit("/", 1)[-1]
    return package_id.split(" ", 1)[0]


def crate_dir(src_dir):
    """The folder holding the crate's Cargo.toml: cargo runs tests there."""
    d = src_dir
    while d != d.parent:
        if (d / "Cargo.toml").exists():
            return d
        d = d.parent
    return SNAPSHOT


class BusyLoops:
    """One busy loop pinned to each CPU, ended by PID."""

    def __init__(self):
        self.procs = []

    def start(self):
        for cpu in range(os.cpu_count() or 1):
            self.procs.append(
                subprocess.Popen(
                    ["taskset", "-c", str(cpu), "sh", "-c", "while :; do :; done"],
                    stdin=subprocess.DEVNULL,
                    start_new_session=True,
                )
            )

    def stop(self):
        for p in self.procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
            p.wait()
        self.procs = []


def run_one(binary, cwd, env, log, limit):
    """Runs one copy to its end or `limit` seconds; returns its failures,
    its wall time and the CPU time of the binary and every process it
    waited for (its test servers among them)."""
    started = time.monotonic()
    cpu = 0.0
    with open(log, "w") as f:
        # As CI runs them (scripts/test-runner.sh): every test's time in
        # the log, so that a slow or slowing test can be named.
        p = subprocess.Popen(
            [str(binary), "-Z", "unstable-options", "--report-time"],
            cwd=cwd, env=dict(env, RUSTC_BOOTSTRAP="1"), stdout=f, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, start_new_session=True,
        )
        RUNNING.add(p.pid)
        code = None
        # wait4 rather than wait: it gives this child's own resource use,
        # which RUSAGE_CHILDREN cannot when several binaries run at once.
        while code is None:
            pid, status, usage = os.wait4(p.pid, os.WNOHANG)
            if pid == p.pid:
                code = os.waitstatus_to_exitcode(status)
                cpu = usage.ru_utime + usage.ru_stime
                p.returncode = code
            elif time.monotonic() - started > limit:
                os.killpg(p.pid, signal.SIGKILL)
                _, _, usage = os.wait4(p.pid, 0)
                cpu = usage.ru_utime + usage.ru_stime
                p.returncode = -9
                code = "timeout"
            else:
                time.sleep(0.05)
        RUNNING.discard(p.pid)
    took = time.monotonic() - started
    text = Path(log).read_text(errors="replace")
    failures = parse_failures(text)
    if code == "timeout":
        failures.append(("(binary)", f"killed after {limit} s"))
    elif code != 0 and not failures:
        failures.append(("(binary)", f"exit {code} with no failing test named"))
    return failures, took, cpu


# The process groups of the copies running now, ended on Ctrl-C.
RUNNING = set()


def longest_first(copies, expected):
    """The round's order: the binaries expected to take longest first, so
    that with several running at once the last to start is a short one
    (the makespan of a longest-processing-time-first schedule is within
    4/3 of the best possible)."""
    return sorted(copies, key=lambda c: -expected.get(c[0], 0.0))


def run_round(copies, jobs, start_one):
    """Runs `start_one(copy)` for every copy, `jobs` at a time."""
    if jobs <= 1:
        for c in copies:
            start_one(c)
        return
    queue = list(copies)
    lock = threading.Lock()

    def worker():
        while True:
            with lock:
                if not queue:
                    return
                c = queue.pop(0)
            start_one(c)

    threads = [threading.Thread(target=worker) for _ in range(min(jobs, len(copies)))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="3 quiet + 2 loaded runs per binary")
    ap.add_argument("--quiet", type=int, default=None, metavar="N", help="quiet runs per binary (10)")
    ap.add_argument("--loaded", type=int, default=None, metavar="M", help="runs beside a busy loop on each CPU (5)")
    ap.add_argument("--only", default=None, metavar="REGEX", help="only binaries whose label matches")
    ap.add_argument("--all", action="store_true", help="every test binary of the workspace")
    ap.add_argument(
        "--jobs", type=int, default=DEFAULT_JOBS, metavar="J",
        help=f"binaries run at once, longest first ({DEFAULT_JOBS})",
    )
    ap.add_argument("--limit", type=int, default=1800, metavar="S", help="seconds one run may take (1800)")
    ap.add_argument("--out", default=None, metavar="DIR", help="the hunt's folder (target/flake-hunt/TIME)")
    ap.add_argument(
        "--clean", action="store_true",
        help="remove the hunt's build cache (target/flake-hunt/target, 17 GiB on 2026-11-30) when done",
    )
    args = ap.parse_args(argv)
    quiet = args.quiet if args.quiet is not None else (3 if args.quick else 10)
    loaded = args.loaded if args.loaded is not None else (2 if args.quick else 5)
    if args.jobs < 1:
        print("flake-hunt: --jobs must be ≥ 1", file=sys.stderr)
        return 2
    if quiet < 0 or loaded < 0 or quiet + loaded == 0:
        print("flake-hunt: --quiet and --loaded must be ≥ 0 and not both 0", file=sys.stderr)
        return 2
    try:
        only = re.compile(args.only) if args.only else None
    except re.error as e:
        print(f"flake-hunt: --only: not a regular expression: {e}", file=sys.stderr)
        return 2

    out = Path(args.out) if args.out else ROOT / "target" / "flake-hunt" / time.strftime("%Y%m%d-%H%M%S")
    (out / "bin").mkdir(parents=True, exist_ok=True)
    (out / "logs").mkdir(exist_ok=True)
    print(f"flake-hunt: building the test binaries once, from {SNAPSHOT}", flush=True)
    try:
        found, fairbench = build(args.all)
    except subprocess.CalledProcessError:
        # cargo has printed why; a hunt of a tree that does not build
        # would hunt nothing.
        print(
            "flake-hunt: the test binaries did not build (cargo test --workspace --no-run, "
            f"in {SNAPSHOT}): fix the build first",
            file=sys.stderr,
        )
        return 1
    if only:
        found = [f for f in found if only.search(f[0])]
    if not found:
        print("flake-hunt: no test binary matches", file=sys.stderr)
        return 2

    # Copies, so that a rebuild during the hunt changes nothing hunted.
    copies = []
    for label, exe, src in found:
        dst = out / "bin" / exe.name
        keep(exe, dst)
        copies.append((label, dst, crate_dir(src)))
    fb_copy = out / "bin" / "fairbench"
    keep(fairbench, fb_copy)
    env = dict(os.environ)
    env["FAIRBENCH_TEST_BIN"] = str(fb_copy)
    # The README install test builds into the target folder it is told:
    # the hunt's, where everything is built already.
    env["CARGO_TARGET_DIR"] = str(HUNT_TARGET)
    env.pop("RUST_TEST_THREADS", None)

    rounds = [("quiet", i) for i in range(quiet)] + [("loaded", i) for i in range(loaded)]
    print(
        f"flake-hunt: {len(copies)} binaries × ({quiet} quiet + {loaded} loaded) runs, "
        f"in {out}",
        flush=True,
    )
    results = defaultdict(
        lambda: {"quiet": [0, 0], "loaded": [0, 0], "times": [], "cpu": [], "fail": Counter(), "msg": {},
                 "tests": defaultdict(list)}
    )
    expected = read_timings()
    busy = BusyLoops()
    lock = threading.Lock()

    def interrupted(_sig, _frame):
        busy.stop()
        for pid in list(RUNNING):
            try:
                os.killpg(pid, signal.SIGKILL)
            except OSError:
                pass
        print("\nflake-hunt: interrupted", file=sys.stderr)
        os._exit(130)

    signal.signal(signal.SIGINT, interrupted)
    signal.signal(signal.SIGTERM, interrupted)
    started = time.monotonic()
    try:
        for cond, i in rounds:
            if cond == "loaded":
                busy.start()

            def start_one(copy, cond=cond, i=i):
                label, exe, cwd = copy
                run_env = dict(env, CARGO_MANIFEST_DIR=str(cwd))
                log = out / "logs" / f"{exe.name}.{cond}{i}.log"
                failures, took, cpu = run_one(exe, cwd, run_env, log, args.limit)
                with lock:
                    r = results[label]
                    r[cond][0] += 1
                    r["times"].append(took)
                    r["cpu"].append(cpu)
                    for m in map(TIMED.match, log.read_text(errors="replace").splitlines()):
                        if m:
                            r["tests"][m.group(1)].append(float(m.group(3)))
                    expected[label] = statistics.median(r["times"])
                    if failures:
                        r[cond][1] += 1
                        for name, msg in failures:
                            r["fail"][(cond, name)] += 1
                            r["msg"].setdefault(name, msg)
                        print(
                            f"  {cond} {i + 1}: {label}: FAILED {', '.join(n for n, _ in failures)} ({log})",
                            flush=True,
                        )

            try:
                run_round(longest_first(copies, expected), args.jobs, start_one)
            finally:
                busy.stop()
            print(f"flake-hunt: {cond} round {i + 1} done ({time.monotonic() - started:.0f} s)", flush=True)
    finally:
        busy.stop()
    write_timings(expected)
    # The copies are ~150 MB each: a hunt's logs and summary are kept, its
    # binaries not (a disk filled by a few hunts' copies stops everything).
    shutil.rmtree(out / "bin", ignore_errors=True)

    lines = report(copies, results, time.monotonic() - started)
    text = "\n".join(lines)
    print(text)
    (out / "summary.txt").write_text(text + "\n")
    report_cache(args.clean)
    failed = any(r["quiet"][1] or r["loaded"][1] for r in results.values())
    return 1 if failed else 0


def report_cache(clean):
    """Says how much the build cache holds, or removes it: it is the size
    of a second target folder, and beside a fresh clone's CI build it
    filled this machine's disk (13 GB left on 2026-11-30)."""
    size = tree_bytes(HUNT_TARGET)
    if clean:
        shutil.rmtree(HUNT_TARGET, ignore_errors=True)
        print(f"flake-hunt: removed its build cache ({size / 2**30:.1f} GiB, {HUNT_TARGET})")
    else:
        print(
            f"flake-hunt: its build cache holds {size / 2**30:.1f} GiB ({HUNT_TARGET}), kept so that "
            "the next hunt builds only what changed; --clean removes it when done"
        )


def tree_bytes(path):
    """The disk space the files under `path` take (0 when it is not there)."""
    total = 0
    for d, _, files in os.walk(path):
        for f in files:
            try:
                total += os.lstat(os.path.join(d, f)).st_blocks * 512
            except OSError:
                pass
    return total


def keep(src, dst):
    """The binary as built now, whatever is built after: a hard link (the
    linker writes a new file and renames it over the old one, so the link
    keeps this build's), or a copy where links cannot be made."""
    if dst.exists():
        dst.unlink()
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def read_timings():
    """Each binary's median time in the last hunt, to start the longest
    first; empty when there was none."""
    try:
        return {k: float(v) for k, v in json.loads(TIMINGS.read_text()).items()}
    except (OSError, ValueError, AttributeError):
        return {}


def write_timings(expected):
    known = read_timings()
    known.update(expected)
    TIMINGS.parent.mkdir(parents=True, exist_ok=True)
    TIMINGS.write_text(json.dumps(known, indent=1, sort_keys=True) + "\n")


def report(copies, results, elapsed):
    width = max(len(label) for label, _, _ in copies)
    lines = ["", f"{'BINARY':<{width}}  QUIET      LOADED     MEDIAN S  CPU S"]
    total_runs = total_failed = 0
    for label, _, _ in copies:
        r = results[label]
        q, l = r["quiet"], r["loaded"]
        total_runs += q[0] + l[0]
        total_failed += q[1] + l[1]
        med = statistics.median(r["times"]) if r["times"] else 0.0
        cpu = statistics.median(r["cpu"]) if r["cpu"] else 0.0
        lines.append(
            f"{label:<{width}}  {q[0] - q[1]:>3}/{q[0]:<3} ok  {l[0] - l[1]:>3}/{l[0]:<3} ok  {med:8.1f}  {cpu:5.1f}"
        )
        for (cond, name), n in sorted(r["fail"].items()):
            lines.append(f"    {cond}: {name} failed {n}×: {r['msg'].get(name, '')}")
    lines.append(
        f"{total_runs} runs, {total_failed} failed, in {elapsed / 60:.1f} min"
    )
    lines.extend(slowest_tests(copies, results))
    return lines


def slowest_tests(copies, results, n=10):
    """The tests with the longest median time over the hunt's runs: where
    the hunt's hour goes."""
    timed = [
        (statistics.median(times), name, label)
        for label, _, _ in copies
        for name, times in results[label]["tests"].items()
    ]
    timed.sort(key=lambda t: -t[0])
    if not timed:
        return []
    out = [f"the {min(n, len(timed))} slowest tests (median s of a run):"]
    out.extend(f"{t:8.1f}  {name}  ({label})" for t, name, label in timed[:n])
    return out


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
