"""Driver for bench/io.sh: the load thread's io_uring batching against its
epoll loop, in one build (`--io auto` against `--io epoll`), alternating on
the same nginx, pinned as bench/loadgen.sh pins them. Prints each run, the
medians, the ratio of the medians and the median of the per-pair ratios.
"""

import statistics
import sys
import tempfile

import loadgen
import revision

SHAPES = [
    ("closed loop", ["-c", "50"]),
    ("rate 20000/s", ["-c", "50", "-R", "20000"]),
    ("rate 60000/s", ["-c", "50", "-R", "60000"]),
]
MODES = ["epoll", "auto"]


def main():
    ap = revision.parser(runs=5)
    ap.add_argument("--fairbench", required=True)
    a = ap.parse_args()
    server_cpu, gen_cpu = loadgen.cpus()
    work = tempfile.mkdtemp(prefix="fairbench-io-bench-")
    port = loadgen.free_port()
    nginx = loadgen.start_nginx(port, server_cpu, work + "/h1")
    url = f"http://127.0.0.1:{port}/"
    try:
        print(f"nginx on CPU {server_cpu}; fairbench on CPU {gen_cpu}; {a.duration} s runs, "
              f"{a.runs} alternating runs of --io epoll and --io auto (io_uring)")
        rows = revision.alternate(a.runs, SHAPES, MODES,
                                  lambda shape, mode: revision.one(
                                      a.fairbench, gen_cpu, a.duration,
                                      shape[1] + ["--io", mode], url))
    finally:
        loadgen.stop(nginx)
    print()
    print("medians; ratio = io_uring / epoll (pairs: median of each run's ratio)")
    print(f"{'shape':<13} {'req/s epoll':>11} {'req/s uring':>11} {'µs epoll':>9} "
          f"{'µs uring':>9} {'µs ratio':>9} {'pairs':>6}")
    for shape, _ in SHAPES:
        e, u = rows.get((shape, "epoll"), {}), rows.get((shape, "auto"), {})
        both = sorted(set(e) & set(u))
        if not both:
            print(f"{shape:<13} no complete run of both")
            continue
        med = lambda d, k: statistics.median(d[j][k] for j in both)  # noqa: E731
        pairs = statistics.median(u[j][1] / e[j][1] for j in both)
        print(f"{shape:<13} {med(e, 0):>11.0f} {med(u, 0):>11.0f} {med(e, 1):>9.2f} "
              f"{med(u, 1):>9.2f} {med(u, 1) / med(e, 1):>9.3f} {pairs:>6.3f}")


if __name__ == "__main__":
    sys.exit(main())
