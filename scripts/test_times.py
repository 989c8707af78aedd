#!/usr/bin/env python3
"""The end of `make test`: the ten slowest Rust tests of the log given (as
libtest's --report-time printed them, "test NAME ... ok <1.234s>"), each
with its test binary, and the time of every phase, so that the growth of
the suite's time is seen on every CI run.

    python3 scripts/test_times.py LOG [PHASE=SECONDS ...]
"""

import re
import sys

RUNNING = re.compile(r"^\s*Running (?:unittests )?(\S+) \((\S+)\)")
TIMED = re.compile(r"^test (\S+) \.\.\. (\w+) <([0-9.]+)s>")


def slowest(lines, n=10):
    binary = "?"
    timed = []
    for line in lines:
        m = RUNNING.match(line)
        if m:
            binary = re.sub(r"-[0-9a-f]{16}$", "", m.group(2).rsplit("/", 1)[-1])
            continue
        m = TIMED.match(line)
        if m:
            timed.append((float(m.group(3)), m.group(1), m.group(2), binary))
    timed.sort(key=lambda t: -t[0])
    return timed[:n], len(timed), sum(t[0] for t in timed)


def main(argv):
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    with open(argv[0], errors="replace") as f:
        top, count, total = slowest(f.read().splitlines())
    print("== the ten slowest tests")
    for took, name, result, binary in top:
        print(f"{took:8.1f} s  {name}  ({binary}, {result})")
    print(f"{count} Rust tests timed, {total:.0f} s of test time in all")
    phases = [p.split("=", 1) for p in argv[1:]]
    if phases:
        print("== time per phase")
        for name, secs in phases:
            print(f"{int(secs):6d} s  {name}")
        print(f"{sum(int(s) for _, s in phases):6d} s  total")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
