#!/usr/bin/env bash
# Generator CPU per request: one fixed request against a pool of 10,000
# distinct requests (`load 'URL/items/{{seq}}' --pool 10000`), alternately,
# in closed loop and at a constant rate, against nginx pinned to the other
# CPU. Prints each run, the medians and the ratio pool/fixed (the target:
# at most 1.10 on the hot path).
#
#   bench/mix_cpu.sh [--runs N] [--duration SECS] [--rate R] [--pool N]
#
# Needs: nginx (apt-get install nginx-light), python3, 2 CPUs, a release
# build (made here if missing). Traffic goes to 127.0.0.1 only. Takes about
# 4 × RUNS × DURATION seconds.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v nginx >/dev/null || { echo "bench/mix_cpu.sh: nginx not found (apt-get install nginx-light)" >&2; exit 2; }
cargo build --release --quiet -p fairbench
exec python3 bench/mix_cpu.py --fairbench "${CARGO_TARGET_DIR:-target}/release/fairbench" "$@"
