"""Driver for bench/h3.sh: fairbench --http3 and oha --http-version 3 on one
quic-go HTTP/3 server, alternating. CPU per request is each generator
process's user+system time (wait4's rusage, as bench/loadgen.py measures
it) over the requests it had answered."""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import loadgen  # noqa: E402  (CPUs, wait4)
import tls  # noqa: E402  (the CA and certificate made for the run)


def start_server(a, cpu, cert, key):
    """The quic-go server pinned to `cpu`; returns (process, port). It stops
    when its standard input closes, so the pipe stays open until `stop`."""
    p = subprocess.Popen(
        ["taskset", "-c", cpu, a.server, "-cert", cert, "-key", key,
         "-streams", str(max(a.streams, 100)), "-lifetime", "4h"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        preexec_fn=loadgen.raise_nofile)
    line = p.stdout.readline().decode().strip()
    if not line.startswith("listening "):
        p.kill()
        sys.exit(f"bench/h3.sh: the HTTP/3 server said {line!r} instead of its address")
    return p, int(line.rsplit(":", 1)[1])


def stop_server(p):
    p.stdin.close()
    loadgen.stop(p)


def fairbench(a, url, ca, extra, lossy=False):
    """(answered, seconds, CPU s, peak RSS KiB, the run's http3 block);
    `lossy`: a run with unanswered requests returns None (the caller says
    so) instead of ending the benchmark."""
    argv = [a.fairbench, "load", "--json", "--http3", "-t", "1", "--cacert", ca, *extra, url]
    out, cpu, rss = loadgen.run(["taskset", "-c", a.gen_cpu, *argv])
    j = json.loads(out)
    if j["ledger"]["answered"] != j["ledger"]["planned"]:
        if lossy:
            print(f"     not every request was answered: {j['ledger']}")
            return None
        sys.exit(f"bench/h3.sh: not every request was answered: {j['ledger']}")
    return j["requests"], j["duration_s"], cpu, rss, j["http3"]


def oha(a, url, ca):
    argv = [a.oha, "--no-tui", "--output-format", "json", "--http-version", "3",
            "--cacert", ca, "-c", str(a.connections), "-p", str(a.streams),
            "-z", f"{a.duration}s", url]
    out, cpu, _ = loadgen.run(["taskset", "-c", a.gen_cpu, *argv])
    j = json.loads(out)
    done = sum(j.get("statusCodeDistribution", {}).values())
    return done, float(a.duration), cpu, 0, None


def medians(rows):
    print()
    print(f"median {'tool':<13} {'req/s':>10} {'CPU-us/req':>11}")
    med = {}
    for name, v in rows.items():
        med[name] = (statistics.median(r[0] for r in v), statistics.median(r[1] for r in v))
        print(f"       {name:<13} {med[name][0]:>10.0f} {med[name][1]:>11.2f}")
    return med


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fairbench", required=True)
    ap.add_argument("--oha", required=True)
    ap.add_argument("--server", required=True)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--duration", type=int, default=5)
    ap.add_argument("--connections", type=int, default=10)
    ap.add_argument("--streams", type=int, default=10)
    a = ap.parse_args()
    server_cpu, a.gen_cpu = loadgen.cpus()
    work = tempfile.mkdtemp(prefix="fairbench-h3-bench-")
    ca, cert, key = tls.make_pki(work)
    server, port = start_server(a, server_cpu, cert, key)
    url = f"https://127.0.0.1:{port}/"
    closed = ["-c", str(a.connections), "--streams", str(a.streams), "-d", f"{a.duration}s"]
    tools = {
        "fairbench": lambda: fairbench(a, url, ca, closed),
        "oha": lambda: oha(a, url, ca),
    }
    rows, quic, lost = {}, [], 0
    try:
        print(f"quic-go server on CPU {server_cpu}; generators on CPU {a.gen_cpu}; "
              f"{a.connections} connections x {a.streams} streams, {a.duration} s, "
              f"{a.runs} alternating runs")
        print(f"{'run':>3}  {'tool':<10} {'req/s':>10} {'CPU-us/req':>11}")
        for i in range(a.runs):
            for name, tool in tools.items():
                n, secs, cpu, _, h3 = tool()
                rps, us = n / secs, cpu * 1e6 / max(n, 1)
                rows.setdefault(name, []).append((rps, us))
                if h3:
                    quic.append((h3, n))
                print(f"{i + 1:>3}  {name:<10} {rps:>10.0f} {us:>11.2f}")
            # Constant rate at 80 % of the closed-loop median so far, same
            # connections x streams. A run that timed requests out (a
            # loaded machine) is shown, counted, and left out of the medians.
            base = statistics.median(r[0] for r in rows["fairbench"])
            got = fairbench(a, url, ca, ["-R", str(max(int(base * 0.8), 1)), *closed], lossy=True)
            if got is None:
                lost += 1
                print(f"{i + 1:>3}  {'fb -R80%':<10} {'lost':>10} {'-':>11}")
                continue
            n, secs, cpu, _, _ = got
            us = cpu * 1e6 / max(n, 1)
            rows.setdefault("fairbench -R", []).append((n / secs, us))
            print(f"{i + 1:>3}  {'fb -R80%':<10} {n / secs:>10.0f} {us:>11.2f}")
        med = medians(rows)
        fb = med["fairbench"][1]
        rate = med.get("fairbench -R")
        print(f"h3: CPU per request fairbench/oha {fb / med['oha'][1]:.2f}x, "
              f"constant rate at 80 %/closed loop {f'{rate[1] / fb:.2f}x' if rate else 'not measured'}")
        calls = statistics.median(
            (h["udp"]["send_calls"] + h["udp"]["recv_calls"]) / max(n, 1) for h, n in quic)
        wait = statistics.median(h["send_wait"]["p99_us"] for h, _ in quic)
        h = quic[-1][0]["udp"]
        print(f"fairbench closed loop: {calls:.2f} UDP system calls per answer "
              f"(GSO {'refused' if h['gso_refused'] else 'used'}, GRO {'on' if h['gro'] else 'off'}); "
              f"requests' wait for their first packet p99 {wait} us (median of runs)")
        if lost:
            print(f"WARNING: {lost} of {a.runs} constant-rate runs timed requests out (not kept "
                  f"up: a loaded machine or a saturated generator) and are left out of the median")
        # 10,000 streams in flight: 100 connections x 100 streams.
        _, _, _, rss, _ = fairbench(a, url, ca, ["-c", "100", "--streams", "100", "-d", "3s"])
        print(f"peak RSS, 100 connections x 100 streams (10,000 in flight): {rss / 1024:.1f} MiB")
    finally:
        stop_server(server)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
