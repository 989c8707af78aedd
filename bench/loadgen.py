"""Driver for bench/loadgen.sh: runs nginx, then fairbench and wrk alternately.

CPU per request is the generator process's user+system time (from wait4's
rusage, the same measure for both tools) divided by the requests it completed.
"""

import argparse
import json
import os
import re
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpus():
    have = sorted(os.sched_getaffinity(0))
    if len(have) < 2:
        sys.exit("bench/loadgen.sh: needs 2 CPUs to keep server and generator apart")
    return str(have[-1]), str(have[0])  # server, generator


def raise_nofile():
    """10,000 connections need more descriptors than the default soft limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = 65536 if hard == resource.RLIM_INFINITY else min(65536, hard)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, want), hard))


def start_nginx(port, server_cpu, workdir, conf_name="nginx.conf", subs=None):
    """nginx from HERE/conf_name with __PORT__, __WORK__ (and `subs`) filled
    in, pinned to server_cpu; returns once `port` accepts connections. The
    work folder gets files/16k.txt for the RSS measurement."""
    conf = open(os.path.join(HERE, conf_name)).read().replace("__PORT__", str(port))
    conf = conf.replace("__WORK__", workdir)
    for k, v in (subs or {}).items():
        conf = conf.replace(k, v)
    os.makedirs(os.path.join(workdir, "files"), exist_ok=True)
    with open(os.path.join(workdir, "files", "16k.txt"), "w") as f:
        f.write("x" * 16383 + "\n")
    path = os.path.join(workdir, "nginx.conf")
    open(path, "w").write(conf)
    proc = subprocess.Popen(
        ["taskset", "-c", server_cpu, "nginx", "-p", workdir, "-c", path],
        stdout=subprocess.DEVNULL, stderr=open(os.path.join(workdir, "err.log"), "w"),
        preexec_fn=raise_nofile,
    )
    wait_port(port, proc, "nginx did not start; see " + workdir + "/err.log")
    return proc


def wait_port(port, proc, failure):
    """Returns once 127.0.0.1:port accepts connections; kills proc and exits
    with `failure` after 10 s."""
    deadline = time.time() + 10
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    proc.kill()
    sys.exit("bench: " + failure)


def stop(proc):
    """Ends a server started here: TERM, then KILL after 5 s."""
    proc.terminate()
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def run(argv):
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=raise_nofile)
    # wait4 on the child itself gives its own rusage, unaffected by other children.
    deadline = time.time() + 600
    while True:
        pid, status, ru = os.wait4(p.pid, os.WNOHANG)
        if pid:
            break
        if time.time() > deadline:
            p.kill()
        time.sleep(0.05)
    out = p.stdout.read().decode()
    err = p.stderr.read().decode()
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        sys.exit(f"bench/loadgen.sh: {' '.join(argv)} exited {code}: {err.strip()[:500]}")
    return out, ru.ru_utime + ru.ru_stime, ru.ru_maxrss


def wrk_requests(out):
    """(requests, seconds) from wrk's or wrk2's summary line."""
    m = re.search(r"(\d+) requests in ([\d.]+)(m?s)", out)
    if not m:
        sys.exit("bench: cannot read wrk output:\n" + out)
    secs = float(m.group(2)) / (1000 if m.group(3) == "ms" else 1)
    return int(m.group(1)), secs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fairbench", required=True)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--duration", type=int, default=10)
    ap.add_argument("--connections", type=int, default=50)
    ap.add_argument("--rss-connections", type=int, default=10000)
    a = ap.parse_args()
    server_cpu, gen_cpu = cpus()
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    work = tempfile.mkdtemp(prefix="fairbench-bench-")
    nginx = start_nginx(port, server_cpu, work)
    rows = {"fairbench": [], "wrk": []}
    try:
        print(f"nginx on CPU {server_cpu}; generators on CPU {gen_cpu}; "
              f"{a.connections} connections, 1 thread, {a.duration} s, {a.runs} alternating runs")
        print(f"{'run':>3}  {'tool':<10} {'req/s':>10} {'CPU-µs/req':>11}")
        for i in range(a.runs):
            for tool in ("fairbench", "wrk"):
                if tool == "fairbench":
                    out, cpu, _ = run(["taskset", "-c", gen_cpu, a.fairbench, "load", "--json",
                                       "-c", str(a.connections), "-t", "1", "-d", f"{a.duration}s", url])
                    j = json.loads(out)
                    reqs, secs = j["requests"], j["duration_s"]
                else:
                    out, cpu, _ = run(["taskset", "-c", gen_cpu, "wrk", "-c", str(a.connections), "-t", "1",
                                       "-d", f"{a.duration}s", url])
                    reqs, secs = wrk_requests(out)
                rps, us = reqs / secs, cpu * 1e6 / max(reqs, 1)
                rows[tool].append((rps, us))
                print(f"{i + 1:>3}  {tool:<10} {rps:>10.0f} {us:>11.2f}")
        med = {t: (statistics.median(r[0] for r in v), statistics.median(r[1] for r in v)) for t, v in rows.items()}
        print()
        print(f"median     {'req/s':>10} {'CPU-µs/req':>11}")
        for t in ("fairbench", "wrk"):
            print(f"{t:<10} {med[t][0]:>10.0f} {med[t][1]:>11.2f}")
        print(f"ratio fairbench/wrk: req/s {med['fairbench'][0] / med['wrk'][0]:.2f}x (higher is better), "
              f"CPU per request {med['fairbench'][1] / med['wrk'][1]:.2f}x (lower is better)")
        print()
        n = a.rss_connections
        big = url + "files/16k.txt"
        for label, target in (("13-byte", url), ("16 KiB", big)):
            print(f"peak RSS at {n} connections, {label} responses (5 s, closed loop):")
            for tool in ("fairbench", "wrk"):
                if tool == "fairbench":
                    argv = [a.fairbench, "load", "--json", "-c", str(n), "-t", "1", "-d", "5s", target]
                else:
                    argv = ["wrk", "-c", str(n), "-t", "1", "-d", "5s", target]
                out, _, rss = run(["taskset", "-c", gen_cpu] + argv)
                print(f"  {tool:<10} {rss / 1024:.1f} MiB")
        print("target: fairbench <= 100 MiB at 10,000 connections with 16 KiB responses")
    finally:
        stop(nginx)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
