"""What one sleep and wake-up of a thread costs in CPU on this machine.

The constant-rate engine's send-ahead window (crates/engine/src/config.rs,
DEFAULT_SEND_AHEAD) exists because a thread that sleeps until a due time
pays for the timer interrupt and the two context switches in CPU time,
whatever it slept. This prints that cost: a thread pinned to one CPU sleeps
until absolute deadlines PERIOD apart (timer slack 1 µs, as the load threads
set it), and its user + system time is divided by the wake-ups. The loop's
own Python overhead is measured without sleeping and shown beside it. For
each period it also prints how late the thread woke (p50, p99, p99.9): the
floor under any generator's send lateness on this machine.

    python3 bench/wakeup.py [--cpu 0] [--seconds 2]

On bare metal a wake-up costs 1-3 µs; under virtualisation the timer and
the idle exit can cost ten times that.
"""

import argparse
import ctypes
import ctypes.util
import os
import resource
import time

CLOCK_MONOTONIC = 1
TIMER_ABSTIME = 1
PR_SET_TIMERSLACK = 29


class Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cpu", type=int, default=0)
    ap.add_argument("--seconds", type=float, default=2.0)
    a = ap.parse_args()
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    os.sched_setaffinity(0, {a.cpu})
    libc.prctl(PR_SET_TIMERSLACK, 1, 0, 0, 0)
    print(f"CPU {a.cpu}, {a.seconds:.0f} s per period")
    print(f"{'period':>8} {'wake-ups':>9} {'CPU-µs per wake-up':>19} {'context switches':>17}"
          f" {'woke late by p50 / p99 / p99.9 µs':>36}")
    for period_us in (0, 30, 100, 1000):
        ts = Timespec()
        n = 0
        late = []
        r0 = resource.getrusage(resource.RUSAGE_SELF)
        start = time.monotonic_ns()
        due = start
        end = start + int(a.seconds * 1e9)
        while due < end:
            due += period_us * 1000 if period_us else 1000
            if period_us:
                ts.tv_sec, ts.tv_nsec = divmod(due, 1_000_000_000)
                libc.clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, ctypes.byref(ts), None)
                late.append(time.monotonic_ns() - due)
            else:
                time.monotonic_ns()
            n += 1
        r1 = resource.getrusage(resource.RUSAGE_SELF)
        cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
        cs = (r1.ru_nvcsw - r0.ru_nvcsw) + (r1.ru_nivcsw - r0.ru_nivcsw)
        label = f"{period_us} µs" if period_us else "loop only"
        late.sort()
        q = ("" if not late else " / ".join(
            f"{late[min(len(late) - 1, int(len(late) * f))] / 1e3:.0f}" for f in (0.5, 0.99, 0.999)))
        print(f"{label:>8} {n:>9} {cpu * 1e6 / n:>19.2f} {cs:>17} {q:>36}")


if __name__ == "__main__":
    main()
