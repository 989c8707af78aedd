"""Driver for bench/revision.sh: the engine against an earlier revision.

Both builds run alternately (the order swapped every run) against the same
nginx on one CPU, each pinned to the other. CPU per request is the process's
user+system time from wait4 divided by the requests it completed
(bench/loadgen.py's `run`): the same measure for both. A constant-rate run
that left requests unanswered is shown and kept out of the medians.
"""

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile

import loadgen
import tls


def shapes(ca):
    """(name, scheme, flags): what each build is asked to do."""
    h1 = ["-c", "50"]
    return [
        ("h1 closed loop", "http", h1),
        ("h1 rate 20000/s", "http", h1 + ["-R", "20000"]),
        ("h1 rate 60000/s", "http", h1 + ["-R", "60000"]),
        ("h2c closed loop", "h2c", ["--http2", "-c", "10", "--streams", "10"]),
        ("tls closed loop", "https", h1 + ["--cacert", ca]),
    ]


def flags_known(binary):
    """The long flags a build's `load --help` lists."""
    out = subprocess.run([binary, "load", "--help"], capture_output=True, text=True).stdout
    return set(re.findall(r"--[a-z0-9-]+", out))


def runnable(builds, ca):
    """The shapes every build can run: an old revision may predate a flag."""
    known = {name: flags_known(b) for name, b in builds.items()}
    keep = []
    for shape in shapes(ca):
        missing = {n: [f for f in shape[2] if f.startswith("--") and f not in k]
                   for n, k in known.items()}
        missing = {n: m for n, m in missing.items() if m}
        if missing:
            why = "; ".join(f"{n} has no {' '.join(m)}" for n, m in missing.items())
            print(f"skipped: {shape[0]} ({why})")
        else:
            keep.append(shape)
    return keep


def one(binary, gen_cpu, duration, flags, url):
    argv = [binary, "load", "--json", "-t", "1", "-d", f"{duration}s", *flags, url]
    out, cpu, _ = loadgen.run(["taskset", "-c", gen_cpu, *argv])
    j = json.loads(out)
    whole = j["ledger"]["answered"] == j["ledger"]["planned"]
    n = max(j["requests"], 1)
    return whole, n / j["duration_s"], cpu * 1e6 / n


def parser(runs):
    """The options every alternating bench takes: --runs (default `runs`)
    and --duration in seconds."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=runs)
    ap.add_argument("--duration", type=int, default=6)
    return ap


def alternate(runs, shapes, sides, measure):
    """Measures every shape (a tuple, its name first) on every side (a
    name) `runs` times, the sides' order reversed every other run so that
    drift favours neither; prints each run. `measure(shape, side)` gives
    (every request answered, req/s, CPU-µs per request). Returns
    {(shape name, side): {run: (req/s, µs)}} of the runs answered whole."""
    rows = {}
    print(f"{'run':>3}  {'shape':<16} {'side':<8} {'req/s':>9} {'CPU-µs/req':>11}")
    for i in range(runs):
        order = sides if i % 2 == 0 else sides[::-1]
        for shape in shapes:
            for side in order:
                whole, rps, us = measure(shape, side)
                mark = "" if whole else "  (unanswered requests: left out)"
                print(f"{i + 1:>3}  {shape[0]:<16} {side:<8} {rps:>9.0f} {us:>11.2f}{mark}")
                if whole:
                    rows.setdefault((shape[0], side), {})[i] = (rps, us)
    return rows


def main():
    ap = parser(runs=3)
    ap.add_argument("--old", required=True)
    ap.add_argument("--old-name", required=True)
    ap.add_argument("--new", required=True)
    a = ap.parse_args()
    server_cpu, gen_cpu = loadgen.cpus()
    work = tempfile.mkdtemp(prefix="fairbench-revision-bench-")
    ca, cert, key = tls.make_pki(work)
    port, tls_port = loadgen.free_port(), loadgen.free_port()
    h2c_port, h2_tls_port = loadgen.free_port(), loadgen.free_port()
    subs = {"__CERT__": cert, "__KEY__": key}
    h1 = loadgen.start_nginx(port, server_cpu, work + "/h1", "nginx-tls.conf",
                             {**subs, "__TLS_PORT__": str(tls_port)})
    h2 = loadgen.start_nginx(h2c_port, server_cpu, work + "/h2", "nginx-h2.conf",
                             {**subs, "__TLS_PORT__": str(h2_tls_port)})
    urls = {"http": f"http://127.0.0.1:{port}/", "https": f"https://127.0.0.1:{tls_port}/",
            "h2c": f"http://127.0.0.1:{h2c_port}/"}
    builds = {a.old_name: a.old, "current": a.new}
    todo = runnable(builds, ca)
    try:
        print(f"nginx on CPU {server_cpu}; fairbench on CPU {gen_cpu}; {a.duration} s runs, "
              f"{a.runs} alternating runs of {a.old_name} and the current tree")
        rows = alternate(a.runs, todo, list(builds),
                         lambda shape, name: one(builds[name], gen_cpu, a.duration,
                                                 shape[2], urls[shape[1]]))
    finally:
        loadgen.stop(h1)
        loadgen.stop(h2)
    print()
    print(f"medians; ratio = current / {a.old_name}")
    print(f"{'shape':<16} {'req/s ' + a.old_name:>14} {'req/s now':>10} {'ratio':>6} "
          f"{'µs ' + a.old_name:>11} {'µs now':>8} {'ratio':>6}")
    for shape, _, _ in todo:
        old, new = rows.get((shape, a.old_name)), rows.get((shape, "current"))
        if not old or not new:
            print(f"{shape:<16} no complete run of both builds")
            continue
        med = lambda rs, k: statistics.median(r[k] for r in rs.values())  # noqa: E731
        r0, r1, u0, u1 = med(old, 0), med(new, 0), med(old, 1), med(new, 1)
        print(f"{shape:<16} {r0:>14.0f} {r1:>10.0f} {r1 / r0:>6.3f} {u0:>11.2f} {u1:>8.2f} {u1 / u0:>6.3f}")


if __name__ == "__main__":
    sys.exit(main())
