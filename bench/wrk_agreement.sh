#!/usr/bin/env bash
# fairbench's wrk-compatible figures against wrk 4.x's own, on one server
# that stalls (so that wrk's latency correction matters): see
# bench/wrk_agreement.py.
#
#   bench/wrk_agreement.sh [--runs N] [--duration SECS] [--connections N]
#                          [--stall-every N] [--stall-ms MS]
#
# Needs: wrk (apt-get install wrk), go, python3, a release build (made here
# if missing). Traffic goes to 127.0.0.1 only.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v wrk >/dev/null || { echo "bench/wrk_agreement.sh: wrk not found (apt-get install wrk)" >&2; exit 2; }
command -v go >/dev/null || { echo "bench/wrk_agreement.sh: go not found" >&2; exit 2; }
cargo build --release --quiet -p fairbench
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd bench/stall && go build -o "$work/stall" .)
python3 bench/wrk_agreement.py --fairbench target/release/fairbench --stall-server "$work/stall" "$@"
