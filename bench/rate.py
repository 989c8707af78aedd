"""Driver for bench/rate.sh: constant-rate generators side by side.

fairbench, oha (`-q RATE --latency-correction`) and, when a WRK2 path is
given, wrk2 run alternately against the same server with the same pins,
connections and duration, at three points: Go net/http (servers/go-nethttp,
static) at 35,000/s, nginx at 60,000/s, and nginx at 80 % of the closed-loop
rate fairbench measures first. CPU per request is the generator process's
user+system time from wait4 divided by the requests it completed, the same
measure for every tool (bench/loadgen.py's `run`).
"""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from loadgen import (cpus, free_port, raise_nofile, run, start_nginx, stop,  # noqa: E402
                     wait_port, wrk_requests)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def start_go(port, server_cpu, work):
    """Builds and starts servers/go-nethttp (static scenario, one core)."""
    out = os.path.join(work, "go-nethttp")
    subprocess.run(["go", "build", "-trimpath", "-o", out, "."],
                   cwd=os.path.join(ROOT, "servers", "go-nethttp"), check=True)
    env = dict(os.environ, PORT=str(port), SCENARIO="static", CORES="1")
    proc = subprocess.Popen(["taskset", "-c", server_cpu, out], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            preexec_fn=raise_nofile)
    wait_port(port, proc, f"server on port {port} did not start")
    return proc


def fairbench(a, gen_cpu, url, rate, send_ahead=None):
    argv = [a.fairbench, "load", "--json", "-c", str(a.connections), "-t", "1",
            "-d", f"{a.duration}s", "--cpus", gen_cpu, url]
    if rate:
        argv[3:3] = ["-R", str(rate)]
    if send_ahead:
        argv[3:3] = ["--send-ahead", send_ahead]
    out, cpu, _ = run(["taskset", "-c", gen_cpu] + argv)
    j = json.loads(out)
    reqs = j["requests"]
    late = (j.get("send_lateness_us") or {}).get("p99")
    busy = j.get("generator_busy_fraction")
    return dict(rate=reqs / j["duration_s"], cpu_us=cpu * 1e6 / max(reqs, 1),
                p50=j["latency_us"]["p50"] / 1e3, p99=j["latency_us"]["p99"] / 1e3,
                late_p99=late, busy=busy)


def oha(a, gen_cpu, url, rate):
    argv = [a.oha, "--no-tui", "--output-format", "json", "-z", f"{a.duration}s", "-c", str(a.connections),
            "-q", str(rate), "--latency-correction", url]
    out, cpu, _ = run(["taskset", "-c", gen_cpu] + argv)
    j = json.loads(out)
    reqs = sum(j.get("statusCodeDistribution", {}).values())
    p = j["latencyPercentiles"]
    return dict(rate=reqs / j["summary"]["total"], cpu_us=cpu * 1e6 / max(reqs, 1),
                p50=p["p50"] * 1e3, p99=p["p99"] * 1e3, late_p99=None, busy=None)


def wrk2(a, gen_cpu, url, rate):
    argv = [a.wrk2, "-t", "1", "-c", str(a.connections), "-d", f"{a.duration}s",
            "-R", str(rate), "--latency", url]
    out, cpu, _ = run(["taskset", "-c", gen_cpu] + argv)
    reqs, secs = wrk_requests(out)

    def pct(p):
        m = re.search(rf"^\s*{p}\s+([\d.]+)(us|ms|s)\s*$", out, re.M)
        if not m:
            return float("nan")
        return float(m.group(1)) * {"us": 1e-3, "ms": 1.0, "s": 1e3}[m.group(2)]
    return dict(rate=reqs / secs, cpu_us=cpu * 1e6 / max(reqs, 1),
                p50=pct(r"50\.000%"), p99=pct(r"99\.000%"), late_p99=None, busy=None)


def point(a, tools, gen_cpu, name, url, rate):
    print(f"\n== {name} @ {rate:,}/s: {a.connections} connections, 1 thread, "
          f"{a.duration} s, {a.runs} alternating runs")
    print(f"{'run':>3}  {'tool':<14} {'req/s':>10} {'CPU-µs/req':>11} {'p50 ms':>8} "
          f"{'p99 ms':>8} {'late p99 µs':>12} {'busy':>5}")
    rows = {t: [] for t in tools}
    for i in range(a.runs):
        for t, f in tools.items():
            r = f(a, gen_cpu, url, rate)
            rows[t].append(r)
            late = "" if r["late_p99"] is None else f"{r['late_p99']:.0f}"
            busy = "" if r["busy"] is None else f"{r['busy'] * 100:.0f}%"
            print(f"{i + 1:>3}  {t:<14} {r['rate']:>10.0f} {r['cpu_us']:>11.2f} "
                  f"{r['p50']:>8.3f} {r['p99']:>8.3f} {late:>12} {busy:>5}")
    med = {t: {k: statistics.median(r[k] for r in v) if v[0][k] is not None else None
               for k in v[0]} for t, v in rows.items()}
    print(f"median         {'req/s':>10} {'CPU-µs/req':>11} {'p50 ms':>8} {'p99 ms':>8} "
          f"{'late p99 µs':>12}  rate error")
    for t, m in med.items():
        late = "" if m["late_p99"] is None else f"{m['late_p99']:.0f}"
        err = (m["rate"] - rate) / rate * 100
        print(f"{t:<14} {m['rate']:>10.0f} {m['cpu_us']:>11.2f} {m['p50']:>8.3f} "
              f"{m['p99']:>8.3f} {late:>12}  {err:+.2f}%")
    for t in tools:
        if not t.startswith("f"):
            print(f"ratio fairbench/{t}: CPU per request "
                  f"{med['fairbench']['cpu_us'] / med[t]['cpu_us']:.2f}x (lower is better)")
    return med


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fairbench", required=True)
    ap.add_argument("--oha", required=True)
    ap.add_argument("--wrk2")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--duration", type=int, default=8)
    ap.add_argument("--connections", type=int, default=50)
    ap.add_argument("--send-ahead", action="append", default=[], metavar="DURATION",
                    help="also run fairbench with this --send-ahead window (repeatable)")
    a = ap.parse_args()
    server_cpu, gen_cpu = cpus()
    tools = {"fairbench": fairbench, "oha": oha}
    for w in a.send_ahead:
        tools[f"fb sa={w}"] = lambda a, g, u, r, w=w: fairbench(a, g, u, r, w)
    if a.wrk2:
        tools["wrk2"] = wrk2
    work = tempfile.mkdtemp(prefix="fairbench-rate-")
    try:
        port = free_port()
        go = start_go(port, server_cpu, work)
        try:
            point(a, tools, gen_cpu, "Go net/http", f"http://127.0.0.1:{port}/", 35_000)
        finally:
            stop(go)
        port = free_port()
        nginx = start_nginx(port, server_cpu, work)
        url = f"http://127.0.0.1:{port}/"
        try:
            point(a, tools, gen_cpu, "nginx", url, 60_000)
            closed = fairbench(a, gen_cpu, url, None)
            print(f"\nfairbench closed loop on nginx: {closed['rate']:.0f} req/s, "
                  f"{closed['cpu_us']:.2f} CPU-µs/req")
            rate = int(closed["rate"] * 0.8 // 1000 * 1000)
            med = point(a, tools, gen_cpu, "nginx (80 % of closed loop)", url, rate)
            print(f"fairbench constant rate / its own closed loop, CPU per request: "
                  f"{med['fairbench']['cpu_us'] / closed['cpu_us']:.2f}x")
        finally:
            stop(nginx)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
