"""Driver for bench/wrk_agreement.sh: fairbench's wrk-compatible figures
(`load --timeout-mode wrk`, the "As wrk prints" block and the JSON's `wrk`
object) against what Debian's wrk 4.x printed, on the same server process.

The server (bench/stall) stalls every STALL_EVERY-th request for STALL_MS,
so that wrk's own latency correction (stats_correct) adds samples and its
printed mean, stdev and p99 differ from the raw answers'. fairbench and wrk
run alternately, each pinned to the generator CPU with the server on the
other, with the same connections, one thread, duration and timeout. Prints
every run, then the medians and the ratio fairbench/wrk of each figure, and
each tool's own run-to-run spread (max/min over its runs) beside it: the
wrk-compatible figures agree when the ratio sits within the spreads.
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from loadgen import cpus, free_port, stop, wait_port  # noqa: E402

UNITS = {"us": 1.0, "ms": 1e3, "s": 1e6, "m": 60e6, "h": 3600e6}
FIGURES = ["requests", "mean_us", "stdev_us", "max_us", "p50_us", "p75_us", "p90_us", "p99_us"]


def us(text):
    m = re.fullmatch(r"([0-9.]+)(us|ms|s|m|h)", text)
    if not m:
        raise ValueError(f"not a wrk time: {text!r}")
    return float(m.group(1)) * UNITS[m.group(2)]


def parse_wrk(out):
    """wrk 4.x's `--latency` output: the Latency line, the distribution and
    the request count."""
    fig = {}
    m = re.search(r"^\s+Latency\s+(\S+)\s+(\S+)\s+(\S+)\s+([0-9.]+)%", out, re.M)
    if not m:
        raise ValueError("no Latency line in wrk's output:\n" + out)
    fig["mean_us"], fig["stdev_us"], fig["max_us"] = (us(m.group(i)) for i in (1, 2, 3))
    for p in (50, 75, 90, 99):
        m = re.search(rf"^\s+{p}%\s+(\S+)", out, re.M)
        fig[f"p{p}_us"] = us(m.group(1))
    m = re.search(r"^\s+(\d+) requests in", out, re.M)
    fig["requests"] = float(m.group(1))
    return fig


def run_wrk(cpu, url, a):
    out = subprocess.run(
        ["taskset", "-c", cpu, "wrk", "-t1", f"-c{a.connections}", f"-d{a.duration}s",
         "--timeout", f"{a.timeout}s", "--latency", url],
        check=True, capture_output=True, text=True,
    ).stdout
    return parse_wrk(out)


def run_fairbench(cpu, url, a):
    out = subprocess.run(
        ["taskset", "-c", cpu, a.fairbench, "load", "-c", str(a.connections), "--threads", "1",
         "-d", f"{a.duration}s", "--timeout", f"{a.timeout}s", "--timeout-mode", "wrk",
         "--json", url],
        check=True, capture_output=True, text=True,
    ).stdout
    w = json.loads(out)["wrk"]
    fig = {k: float(w["latency"][k]) for k in FIGURES if k != "requests"}
    fig["requests"] = float(w["requests"])
    return fig


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fairbench", required=True)
    ap.add_argument("--stall-server", required=True)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--duration", type=int, default=10)
    ap.add_argument("--connections", type=int, default=50)
    ap.add_argument("--timeout", type=int, default=2)
    ap.add_argument("--stall-every", type=int, default=200)
    ap.add_argument("--stall-ms", type=int, default=100)
    a = ap.parse_args()
    server_cpu, gen_cpu = cpus()
    port = free_port()
    env = dict(os.environ, PORT=str(port), STALL_EVERY=str(a.stall_every), STALL_MS=str(a.stall_ms))
    # GOMAXPROCS=1: one CPU, so a stall holds one request, not the thread.
    env["GOMAXPROCS"] = "1"
    srv = subprocess.Popen(["taskset", "-c", server_cpu, a.stall_server], env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/"
    try:
        wait_port(port, srv, "the stall server did not start")
        runs = {"wrk": [], "fairbench": []}
        for i in range(a.runs):
            for tool, fn in (("wrk", run_wrk), ("fairbench", run_fairbench)):
                fig = fn(gen_cpu, url, a)
                runs[tool].append(fig)
                print(f"run {i + 1} {tool:<9} " + "  ".join(f"{k} {fig[k]:.0f}" for k in FIGURES), flush=True)
    finally:
        stop(srv)
    print()
    print(f"{'figure':<10} {'wrk':>12} {'fairbench':>12} {'ratio':>7} {'wrk spread':>11} {'fb spread':>10}")
    for k in FIGURES:
        w = [r[k] for r in runs["wrk"]]
        f = [r[k] for r in runs["fairbench"]]
        mw, mf = statistics.median(w), statistics.median(f)
        spread = lambda xs: max(xs) / min(xs) if min(xs) > 0 else float("inf")  # noqa: E731
        print(f"{k:<10} {mw:>12.0f} {mf:>12.0f} {mf / mw if mw else float('nan'):>7.3f} "
              f"{spread(w):>11.3f} {spread(f):>10.3f}")
    print(f"(medians of {a.runs} alternating runs; -c{a.connections} -t1 -d{a.duration}s "
          f"--timeout {a.timeout}s; every {a.stall_every}th request held {a.stall_ms} ms)")


if __name__ == "__main__":
    main()
