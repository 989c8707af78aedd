#!/usr/bin/env bash
# fairbench's constant-rate mode against oha (and wrk2 when WRK2 is set),
# side by side on this machine: same server pinned to one CPU, generators
# pinned to the other, same connections and duration, alternating runs.
# Prints each run, the medians, the rate error and the CPU-per-request ratios.
#
#   bench/rate.sh [--runs N] [--duration SECS] [--connections N]
#   WRK2=/path/to/wrk2/wrk bench/rate.sh     # also wrk2 (build it from
#                                             # github.com/giltene/wrk2)
#
# Needs: go, nginx (apt-get install nginx-light), python3; installs oha with
# `cargo install oha --locked` when it is missing. Traffic goes to 127.0.0.1.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v nginx >/dev/null || { echo "bench/rate.sh: nginx not found (apt-get install nginx-light)" >&2; exit 2; }
command -v go >/dev/null || { echo "bench/rate.sh: go not found" >&2; exit 2; }
OHA=$(command -v oha || true)
if [ -z "$OHA" ]; then
  cargo install oha --locked --quiet
  OHA="$HOME/.cargo/bin/oha"
fi
cargo build --release --quiet -p fairbench
args=(--fairbench target/release/fairbench --oha "$OHA")
if [ -n "${WRK2:-}" ]; then
  [ -x "$WRK2" ] || { echo "bench/rate.sh: WRK2=$WRK2 is not an executable" >&2; exit 2; }
  args+=(--wrk2 "$WRK2")
fi
exec python3 bench/rate.py "${args[@]}" "$@"
