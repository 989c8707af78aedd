#!/usr/bin/env bash
# What a unix domain socket saves fairbench's load engine: generator CPU per
# request over nginx's unix socket against its TCP loopback port, and
# against oha's --unix-socket on the same socket, alternately.
#
# nginx (Debian, one worker, the 13-byte body) is pinned to one CPU, the
# load generator to the other. Two shapes: a closed loop, and a constant
# rate of 60 % of the slowest closed loop's median (well under what the
# worker serves, so the figures are the generators'). Prints each run, the
# medians and the ratios unix/TCP and fairbench/oha of CPU-µs per request.
#
#   bench/unix.sh [--runs N] [--duration SECS] [--connections N]
#
# Needs: nginx (apt-get install nginx-light), python3, a release build
# (made here if missing), and oha on the PATH for its column (cargo install
# oha; without it, its rows are skipped with a line saying so).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v nginx >/dev/null || { echo "bench/unix.sh: nginx not found (apt-get install nginx-light)" >&2; exit 2; }
cargo build --release --quiet -p fairbench
exec python3 bench/unix.py --fairbench target/release/fairbench "$@"
