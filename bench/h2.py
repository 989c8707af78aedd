"""Driver for bench/h2.sh: fairbench, h2load and oha over h2c and h2 on one
nginx, alternating. CPU per request is each generator process's user+system
time (wait4's rusage, as bench/loadgen.py measures it) over the requests it
had answered."""

import argparse
import json
import os
import re
import shutil
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import loadgen  # noqa: E402  (ports, CPUs, nginx, wait4)
import tls  # noqa: E402  (the CA and certificate made for the run)


def fairbench(a, url, ca, extra, lossy=False):
    """`lossy`: a run with unanswered requests returns None (the caller
    says so) instead of ending the benchmark."""
    argv = [a.fairbench, "load", "--json", "--http2", "-t", "1", *extra]
    if ca:
        argv += ["--cacert", ca]
    out, cpu, rss = loadgen.run(["taskset", "-c", a.gen_cpu, *argv, url])
    j = json.loads(out)
    if j["ledger"]["answered"] != j["ledger"]["planned"]:
        if lossy:
            print(f"     not every request was answered: {j['ledger']}")
            return None
        sys.exit(f"bench/h2.sh: not every request was answered: {j['ledger']}")
    return j["requests"], j["duration_s"], cpu, rss


def h2load(a, url, ca):
    out, cpu, _ = loadgen.run(["taskset", "-c", a.gen_cpu, "h2load", "-t", "1",
                               "-c", str(a.connections), "-m", str(a.streams),
                               "-D", str(a.duration), url])
    m = re.search(r"requests: \d+ total, \d+ started, (\d+) done, (\d+) succeeded", out)
    if not m:
        sys.exit("bench/h2.sh: cannot read h2load's output:\n" + out)
    return int(m.group(2)), float(a.duration), cpu, 0


def oha(a, url, ca):
    argv = ["oha", "--no-tui", "--output-format", "json", "--http2", "-c", str(a.connections),
            "-p", str(a.streams), "-z", f"{a.duration}s"]
    if ca:
        argv.append("--insecure")
    out, cpu, _ = loadgen.run(["taskset", "-c", a.gen_cpu, *argv, url])
    j = json.loads(out)
    done = sum(j.get("statusCodeDistribution", {}).values())
    return done, float(a.duration), cpu, 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fairbench", required=True)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--duration", type=int, default=5)
    ap.add_argument("--connections", type=int, default=10)
    ap.add_argument("--streams", type=int, default=10)
    a = ap.parse_args()
    server_cpu, a.gen_cpu = loadgen.cpus()
    port, tls_port = loadgen.free_port(), loadgen.free_port()
    work = tempfile.mkdtemp(prefix="fairbench-h2-bench-")
    ca, cert, key = tls.make_pki(work)
    nginx = loadgen.start_nginx(port, server_cpu, work, "nginx-h2.conf",
                                {"__TLS_PORT__": str(tls_port), "__CERT__": cert, "__KEY__": key})
    urls = {"h2c": (f"http://127.0.0.1:{port}/", None),
            "h2": (f"https://127.0.0.1:{tls_port}/", ca)}
    closed = ["-c", str(a.connections), "--streams", str(a.streams), "-d", f"{a.duration}s"]
    tools = {
        "fairbench": lambda url, ca: fairbench(a, url, ca, closed),
        "h2load": lambda url, ca: h2load(a, url, ca),
        "oha": lambda url, ca: oha(a, url, ca),
    }
    rows = {}
    lost = {}
    try:
        print(f"nginx on CPU {server_cpu}; generators on CPU {a.gen_cpu}; "
              f"{a.connections} connections x {a.streams} streams, {a.duration} s, "
              f"{a.runs} alternating runs")
        print(f"{'run':>3}  {'proto':<5} {'tool':<10} {'req/s':>10} {'CPU-us/req':>11}")
        for i in range(a.runs):
            for proto, (url, ca_) in urls.items():
                for name, tool in tools.items():
                    n, secs, cpu, _ = tool(url, ca_)
                    rps, us = n / secs, cpu * 1e6 / max(n, 1)
                    rows.setdefault((proto, name), []).append((rps, us))
                    print(f"{i + 1:>3}  {proto:<5} {name:<10} {rps:>10.0f} {us:>11.2f}")
                # Constant rate at 80 % of this protocol's closed-loop
                # median so far, same connections x streams.
                base = statistics.median(r[0] for r in rows[(proto, "fairbench")])
                # A run that timed requests out (the generator or the
                # server could not keep the rate: a loaded machine) is
                # shown, counted, and left out of the medians.
                rate = ["-R", str(int(base * 0.8)), *closed]
                got = fairbench(a, url, ca_, rate, lossy=True)
                if got is None:
                    lost[proto] = lost.get(proto, 0) + 1
                    print(f"{i + 1:>3}  {proto:<5} {'fb -R80%':<10} {'lost':>10} {'-':>11}")
                    continue
                n, secs, cpu, _ = got
                us = cpu * 1e6 / max(n, 1)
                rows.setdefault((proto, "fairbench -R"), []).append((n / secs, us))
                print(f"{i + 1:>3}  {proto:<5} {'fb -R80%':<10} {n / secs:>10.0f} {us:>11.2f}")
        print()
        print(f"median {'proto':<5} {'tool':<13} {'req/s':>10} {'CPU-us/req':>11}")
        med = {}
        for (proto, name), v in rows.items():
            med[(proto, name)] = (statistics.median(r[0] for r in v),
                                  statistics.median(r[1] for r in v))
            print(f"       {proto:<5} {name:<13} {med[(proto, name)][0]:>10.0f} "
                  f"{med[(proto, name)][1]:>11.2f}")
        for proto in urls:
            fb = med[(proto, "fairbench")][1]
            rate = med.get((proto, "fairbench -R"))
            print(f"{proto}: CPU per request fairbench/h2load {fb / med[(proto, 'h2load')][1]:.2f}x, "
                  f"fairbench/oha {fb / med[(proto, 'oha')][1]:.2f}x, "
                  f"constant rate at 80 %/closed loop "
                  f"{f'{rate[1] / fb:.2f}x' if rate else 'not measured'}")
            if lost.get(proto):
                print(f"WARNING: {proto}: {lost[proto]} of {a.runs} constant-rate runs timed "
                      f"requests out (not kept up: a loaded machine or a saturated generator) "
                      f"and are left out of its median")
        # 10,000 streams in flight: 100 connections x 100 streams.
        _, _, _, rss = fairbench(a, urls["h2c"][0], None,
                                 ["-c", "100", "--streams", "100", "-d", "3s"])
        print(f"peak RSS, 100 connections x 100 streams (10,000 in flight): {rss / 1024:.1f} MiB")
    finally:
        loadgen.stop(nginx)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
