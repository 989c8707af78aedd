"""Driver for bench/unix.sh: fairbench over a unix socket and over TCP, and
oha over the same socket, on one nginx.

CPU per request is each generator process's user+system time (wait4's
rusage, as bench/loadgen.py measures it) divided by the requests it counted
as answered: fairbench's JSON `requests`, oha's JSON `summary.successRate`
times its request count (every status was 200 in these runs, checked).
"""

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import loadgen  # noqa: E402  (same folder: ports, CPUs, nginx, wait4)


def fairbench_run(a, gen_cpu, target, rate):
    argv = [a.fairbench, "load", "--json", "-c", str(a.connections), "-t", "1",
            "-d", f"{a.duration}s"]
    if rate:
        argv += ["-R", str(rate)]
    if target["socket"]:
        argv += ["--unix-socket", target["socket"]]
    out, cpu, _ = loadgen.run(["taskset", "-c", gen_cpu, *argv, target["url"]])
    j = json.loads(out)
    if j["ledger"]["answered"] != j["ledger"]["planned"]:
        sys.exit(f"bench/unix.sh: {target['name']}: not every request was answered: {j['ledger']}")
    return j["requests"], j["duration_s"], cpu, j["latency_us"]["p50"]


def oha_run(a, gen_cpu, target, rate):
    argv = ["oha", "--no-tui", "--output-format", "json", "-c", str(a.connections),
            "-z", f"{a.duration}s", "--unix-socket", target["socket"]]
    if rate:
        argv += ["-q", str(rate)]
    out, cpu, _ = loadgen.run(["taskset", "-c", gen_cpu, *argv, target["url"]])
    j = json.loads(out)
    codes = j.get("statusCodeDistribution", {})
    if set(codes) - {"200"}:
        sys.exit(f"bench/unix.sh: oha saw statuses other than 200: {codes}")
    answered = sum(codes.values())
    p50 = j["latencyPercentiles"]["p50"]
    return answered, j["summary"]["total"], cpu, None if p50 is None else round(p50 * 1e6)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fairbench", required=True)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--duration", type=int, default=10)
    ap.add_argument("--connections", type=int, default=50)
    a = ap.parse_args()
    server_cpu, gen_cpu = loadgen.cpus()
    port = loadgen.free_port()
    work = tempfile.mkdtemp(prefix="fairbench-unix-bench-")
    sock = os.path.join(work, "nginx.sock")
    nginx = loadgen.start_nginx(port, server_cpu, work, "nginx-unix.conf", {"__SOCKET__": sock})
    have_oha = shutil.which("oha") is not None
    if not have_oha:
        print("oha not on the PATH (cargo install oha): its rows are skipped")
    targets = [
        {"name": "fairbench tcp", "url": f"http://127.0.0.1:{port}/", "socket": None, "run": fairbench_run},
        {"name": "fairbench unix", "url": "http://localhost/", "socket": sock, "run": fairbench_run},
    ]
    if have_oha:
        targets.append({"name": "oha unix", "url": "http://localhost/", "socket": sock, "run": oha_run})
    rows = {}
    try:
        print(f"nginx on CPU {server_cpu}; generators on CPU {gen_cpu}; {a.runs} alternating runs")
        print(f"{'run':>3}  {'shape':<11} {'generator':<15} {'req/s':>10} {'CPU-µs/req':>11} {'p50 µs':>8}")
        for i in range(a.runs):
            for shape in ("closed", "rate 60 %"):
                rate = None
                if shape == "rate 60 %":
                    # Of the slowest closed loop (TCP's): a rate every
                    # target serves, so the figures are the generators'.
                    closed = min(statistics.median(r[0] for r in rows[("closed", t["name"])])
                                 for t in targets)
                    rate = int(closed * 0.6)
                for t in targets:
                    n, secs, cpu, p50 = t["run"](a, gen_cpu, t, rate)
                    rps, us = n / secs, cpu * 1e6 / max(n, 1)
                    rows.setdefault((shape, t["name"]), []).append((rps, us))
                    print(f"{i + 1:>3}  {shape:<11} {t['name']:<15} {rps:>10.0f} {us:>11.2f} "
                          f"{'' if p50 is None else p50:>8}")
        print()
        print(f"median      {'generator':<15} {'req/s':>10} {'CPU-µs/req':>11}")
        for shape in ("closed", "rate 60 %"):
            med = {}
            for t in targets:
                v = rows[(shape, t["name"])]
                med[t["name"]] = (statistics.median(r[0] for r in v), statistics.median(r[1] for r in v))
                print(f"{shape:<11} {t['name']:<15} {med[t['name']][0]:>10.0f} {med[t['name']][1]:>11.2f}")
            u, tcp = med["fairbench unix"], med["fairbench tcp"]
            print(f"{shape:<11} fairbench unix/tcp: CPU per request {u[1] / tcp[1]:.2f}x, req/s {u[0] / tcp[0]:.2f}x")
            if have_oha:
                o = med["oha unix"]
                print(f"{shape:<11} fairbench/oha over unix: CPU per request {u[1] / o[1]:.2f}x, req/s {u[0] / o[0]:.2f}x")
    finally:
        loadgen.stop(nginx)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
