#!/usr/bin/env bash
# fairbench's HTTP/2 engine against h2load and oha --http2, side by side.
#
# nginx (Debian, one worker, the 13-byte body) serves h2c (prior knowledge)
# and h2 over TLS, pinned to one CPU; the generators are pinned to the other
# and run alternately with the same connections × streams, closed loop.
# Prints each run, the medians, and fairbench's CPU-µs per request against
# h2load's and oha's; then fairbench at a constant rate of 80 % of its own
# closed-loop median (CPU per request against its closed loop; a run that
# timed requests out is shown, counted in a warning and left out of the
# medians), and its peak RSS with 10,000 streams in flight (100 connections
# × 100 streams).
#
#   bench/h2.sh [--runs N] [--duration SECS] [--connections N] [--streams N]
#
# Needs: nginx, openssl, h2load (apt-get install nginx-light openssl
# nghttp2-client), oha (cargo install oha), python3, a release build (made
# here if missing). Traffic goes to 127.0.0.1 only.
set -euo pipefail
cd "$(dirname "$0")/.."
for t in nginx openssl h2load; do
    command -v "$t" >/dev/null || { echo "bench/h2.sh: $t not found (apt-get install nginx-light openssl nghttp2-client)" >&2; exit 2; }
done
export PATH="$PATH:$HOME/.cargo/bin"
command -v oha >/dev/null || { echo "bench/h2.sh: oha not found (cargo install oha)" >&2; exit 2; }
cargo build --release --quiet -p fairbench
exec python3 bench/h2.py --fairbench "${CARGO_TARGET_DIR:-target}/release/fairbench" "$@"
