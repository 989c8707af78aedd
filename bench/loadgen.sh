#!/usr/bin/env bash
# fairbench's load engine against wrk, side by side on this machine.
#
# nginx (Debian, one worker, the study's 13-byte body, keep-alive) is pinned to
# one CPU; fairbench and wrk are pinned to the other and run alternately with
# the same connections and duration. Prints each run, the medians, and the
# ratios fairbench/wrk for requests/s and generator CPU-µs per request; then
# peak RSS at 10,000 connections.
#
#   bench/loadgen.sh [--runs N] [--duration SECS] [--connections N]
#
# Needs: nginx, wrk (apt-get install nginx-light wrk), python3, a release build
# (made here if missing). Traffic goes to 127.0.0.1 only.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v nginx >/dev/null || { echo "bench/loadgen.sh: nginx not found (apt-get install nginx-light)" >&2; exit 2; }
command -v wrk >/dev/null || { echo "bench/loadgen.sh: wrk not found (apt-get install wrk)" >&2; exit 2; }
cargo build --release --quiet -p fairbench
exec python3 bench/loadgen.py --fairbench target/release/fairbench "$@"
