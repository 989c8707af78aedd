"""Driver for bench/mix_cpu.sh: generator CPU per request with one fixed
request against a pool of 10,000 distinct ones (`{{seq}}` in the path).

nginx (bench/nginx.conf, one worker) is pinned to one CPU, fairbench to the
other. The two forms run alternately, RUNS times each, in closed loop and at
a constant rate. Two measures per run:
  - hot path: the load threads' CPU in the measured window per answered
    request (`generator_cpu_us_per_request` of --json), what the pool could
    slow down;
  - process: the whole process's user+system time (wait4's rusage) per
    answered request, preparing the pool included.
Prints each run, the medians and the ratio pool/fixed; the target is a
hot-path ratio of at most 1.10.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from loadgen import cpus, free_port, start_nginx, stop  # noqa: E402


def once(fairbench, gen_cpu, url, extra, duration):
    cmd = ["taskset", "-c", gen_cpu, fairbench, "load", url, "-d", f"{duration}s",
           "-c", "50", "-t", "1", "--json"] + extra
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = p.communicate()
    if p.returncode != 0:
        sys.exit(f"bench/mix_cpu.sh: {' '.join(cmd)} failed: {err.strip()}")
    return json.loads(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fairbench", required=True)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--duration", type=float, default=5)
    ap.add_argument("--rate", default="20k")
    ap.add_argument("--pool", type=int, default=10000)
    a = ap.parse_args()
    if a.runs < 1 or a.duration <= 0:
        sys.exit("bench/mix_cpu.sh: --runs ≥ 1 and --duration > 0")
    server_cpu, gen_cpu = cpus()
    work = tempfile.mkdtemp(prefix="fairbench-mix-")
    port = free_port()
    nginx = start_nginx(port, server_cpu, work)
    base = f"http://127.0.0.1:{port}"
    forms = {
        "fixed": (f"{base}/items/1", []),
        "pool": (base + "/items/{{seq}}", ["--pool", str(a.pool)]),
    }
    results = {}
    try:
        for mode, extra in (("closed", []), ("rate", ["-R", a.rate])):
            for r in range(a.runs):
                for name, (url, more) in forms.items():
                    before = os.times()
                    v = once(a.fairbench, gen_cpu, url, extra + more, a.duration)
                    after = os.times()
                    proc_cpu = (after.children_user - before.children_user
                                + after.children_system - before.children_system)
                    hot = v["generator_cpu_us_per_request"]
                    whole = proc_cpu * 1e6 / max(v["requests"], 1)
                    results.setdefault((mode, name), []).append((hot, whole))
                    print(f"{mode:6} {name:5} run {r + 1}: {v['rps']:>10.0f} req/s  "
                          f"hot path {hot:6.2f} µs/req  process {whole:6.2f} µs/req", flush=True)
    finally:
        stop(nginx)
    print("\nmedians (µs of generator CPU per answered request):")
    ok = True
    for mode in ("closed", "rate"):
        f = results[(mode, "fixed")]
        p = results[(mode, "pool")]
        fh, ph = statistics.median(x[0] for x in f), statistics.median(x[0] for x in p)
        fw, pw = statistics.median(x[1] for x in f), statistics.median(x[1] for x in p)
        ratio = ph / fh
        ok &= ratio <= 1.10
        print(f"  {mode:6} hot path: fixed {fh:.2f}  pool of {a.pool} {ph:.2f}  ratio {ratio:.3f}"
              f"   process: fixed {fw:.2f}  pool {pw:.2f}  ratio {pw / fw:.3f}")
    print("\nhot-path ratio ≤ 1.10:", "yes" if ok else "NO")


if __name__ == "__main__":
    main()
