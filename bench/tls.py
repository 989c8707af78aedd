"""Driver for bench/tls.sh: fairbench over https:// and http:// on one nginx.

CPU per request is the fairbench process's user+system time (wait4's rusage,
as bench/loadgen.py measures it) divided by the requests answered; the
engine's own figure for the measured window (generator_cpu_us_per_request)
and the TLS handshake p50 are printed beside it. Three shapes: kept-alive
connections in a closed loop, the same at a constant rate of 60 % of that
closed loop's median (the latency p50 beside it), and a new connection per
request.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import loadgen  # noqa: E402  (same folder: ports, CPUs, nginx, wait4)


def make_pki(work):
    """A CA and a certificate for 127.0.0.1 it signs, valid two days."""
    def sh(*argv):
        subprocess.run(argv, check=True, cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    sh("openssl", "req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
       "-subj", "/CN=fairbench bench CA")
    sh("openssl", "req", *ec, "-keyout", "key.pem", "-out", "req.csr", "-subj", "/CN=127.0.0.1")
    with open(os.path.join(work, "san.ext"), "w") as f:
        f.write("subjectAltName=IP:127.0.0.1\n")
    sh("openssl", "x509", "-req", "-in", "req.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
       "-CAcreateserial", "-out", "cert.pem", "-days", "2", "-extfile", "san.ext")
    return [os.path.join(work, n) for n in ("ca.pem", "cert.pem", "key.pem")]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fairbench", required=True)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--duration", type=int, default=10)
    ap.add_argument("--connections", type=int, default=50)
    ap.add_argument("--requests", type=int, default=20000,
                    help="requests per run with a new connection per request")
    a = ap.parse_args()
    server_cpu, gen_cpu = loadgen.cpus()
    port, tls_port = loadgen.free_port(), loadgen.free_port()
    work = tempfile.mkdtemp(prefix="fairbench-tls-bench-")
    ca, cert, key = make_pki(work)
    nginx = loadgen.start_nginx(port, server_cpu, work, "nginx-tls.conf",
                                {"__TLS_PORT__": str(tls_port), "__CERT__": cert, "__KEY__": key})
    urls = {"http": f"http://127.0.0.1:{port}/", "https": f"https://127.0.0.1:{tls_port}/"}
    kept = ["-c", str(a.connections), "-t", "1", "-d", f"{a.duration}s"]
    shapes = {
        "keep-alive": kept,
        # 60 % of the same scheme's keep-alive median so far: well below
        # what one nginx worker serves, so the figures are the generator's.
        "rate 60 %": kept,
        "new conn/req": ["-c", str(a.connections), "-t", "1", "-n", str(a.requests), "--no-keepalive"],
    }
    rows = {}
    try:
        print(f"nginx on CPU {server_cpu}; fairbench on CPU {gen_cpu}; {a.runs} alternating runs")
        print(f"{'run':>3}  {'shape':<13} {'scheme':<6} {'req/s':>10} {'CPU-µs/req':>11} "
              f"{'engine µs/req':>14} {'handshake p50':>14} {'resumed':>8}")
        for i in range(a.runs):
            for shape, flags in shapes.items():
                for scheme in ("http", "https"):
                    argv = [a.fairbench, "load", "--json", *flags]
                    if shape == "rate 60 %":
                        closed = statistics.median(r[0] for r in rows[("keep-alive", scheme)])
                        argv += ["-R", str(int(closed * 0.6))]
                    if scheme == "https":
                        argv += ["--cacert", ca]
                    out, cpu, _ = loadgen.run(["taskset", "-c", gen_cpu, *argv, urls[scheme]])
                    j = json.loads(out)
                    if j["ledger"]["answered"] != j["ledger"]["planned"]:
                        sys.exit(f"bench/tls.sh: {scheme} {shape}: not every request was answered: {j['ledger']}")
                    reqs = j["requests"]
                    rps, us = reqs / j["duration_s"], cpu * 1e6 / max(reqs, 1)
                    hs = j["tls_handshake_us"]["p50"] if j["tls_handshake_us"] else None
                    st = j["connections_stats"]
                    rows.setdefault((shape, scheme), []).append((rps, us))
                    print(f"{i + 1:>3}  {shape:<13} {scheme:<6} {rps:>10.0f} {us:>11.2f} "
                          f"{j['generator_cpu_us_per_request'] or 0:>14.2f} "
                          f"{'' if hs is None else str(hs) + ' µs':>14} "
                          f"{st['tls_resumed'] if scheme == 'https' else '':>8}"
                          f"{'  p50 ' + str(j['latency_us']['p50']) + ' µs' if shape == 'rate 60 %' else ''}")
        print()
        print(f"median         {'':<6} {'req/s':>10} {'CPU-µs/req':>11}")
        for shape in shapes:
            med = {}
            for scheme in ("http", "https"):
                v = rows[(shape, scheme)]
                med[scheme] = (statistics.median(r[0] for r in v), statistics.median(r[1] for r in v))
                print(f"{shape:<14} {scheme:<6} {med[scheme][0]:>10.0f} {med[scheme][1]:>11.2f}")
            print(f"{shape:<14} https/http: CPU per request {med['https'][1] / med['http'][1]:.2f}x, "
                  f"req/s {med['https'][0] / med['http'][0]:.2f}x")
        for scheme in ("http", "https"):
            closed = statistics.median(r[1] for r in rows[("keep-alive", scheme)])
            rate = statistics.median(r[1] for r in rows[("rate 60 %", scheme)])
            print(f"{scheme}: CPU per request at a constant rate of 60 %/closed loop {rate / closed:.2f}x")
    finally:
        loadgen.stop(nginx)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
