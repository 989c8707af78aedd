#!/usr/bin/env bash
# fairbench's HTTP/3 engine against oha built with its http3 feature, side
# by side.
#
# The test kit's quic-go HTTP/3 server (crates/testkit/fixtures/h3server,
# the body "ok") is pinned to one CPU; the generators are pinned to the
# other and run alternately with the same connections × streams, closed
# loop. Prints each run, the medians, and fairbench's CPU-µs per request
# against oha's; then fairbench at a constant rate of 80 % of its own
# closed-loop median (CPU per request against its closed loop; a run that
# timed requests out is shown, counted in a warning and left out of the
# medians), fairbench's UDP system calls per answer and its requests'
# wait for their first packet, and its peak RSS with 10,000 streams in
# flight (100 connections × 100 streams).
#
#   bench/h3.sh [--runs N] [--duration SECS] [--connections N] [--streams N]
#
# Needs: go (to build the server), openssl, python3, oha built with HTTP/3
# (made here under target/oha-h3 if missing: cargo install oha --features
# http3 --locked --root target/oha-h3; or OHA=path), a release build of
# fairbench (made here if missing; FAIRBENCH=path to use another build).
# Traffic goes to 127.0.0.1 only.
set -euo pipefail
cd "$(dirname "$0")/.."
for t in go openssl taskset python3; do
    command -v "$t" >/dev/null || { echo "bench/h3.sh: $t not found" >&2; exit 2; }
done
target="${CARGO_TARGET_DIR:-target}"
case "$target" in /*) ;; *) target="$PWD/$target" ;; esac
oha="${OHA:-$target/oha-h3/bin/oha}"
if [ ! -x "$oha" ]; then
    echo "bench/h3.sh: building oha with its http3 feature into $target/oha-h3" >&2
    cargo install oha --features http3 --locked --root "$target/oha-h3" --quiet \
        || { echo "bench/h3.sh: cannot build oha with http3 (above); set OHA=path" >&2; exit 2; }
fi
fairbench="${FAIRBENCH:-}"
if [ -z "$fairbench" ]; then
    cargo build --release --quiet -p fairbench
    fairbench="$target/release/fairbench"
fi
server="$target/h3bench/h3server"
mkdir -p "$target/h3bench"
(cd crates/testkit/fixtures/h3server && GOTOOLCHAIN=local CGO_ENABLED=0 go build -o "$server" .)
exec python3 bench/h3.py --fairbench "$fairbench" --oha "$oha" --server "$server" "$@"
