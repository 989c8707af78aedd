#!/usr/bin/env bash
# The load thread's io_uring batching of its HTTP/1.1 sends and receives
# against its epoll loop (`load --io auto` against `--io epoll`), one build,
# alternating on the same nginx: closed loop and constant rate at 20,000/s
# and 60,000/s. Prints each run, the medians and the ratios.
#
#   bench/io.sh [--runs N] [--duration SECS]
#
# Needs: nginx (apt-get install nginx-light), python3, a kernel with
# io_uring (otherwise both sides run the epoll loop, which the ratios then
# show as 1). Traffic goes to 127.0.0.1 only.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v nginx >/dev/null || { echo "bench/io.sh: nginx not found (apt-get install nginx-light)" >&2; exit 2; }
cargo build --release --quiet -p fairbench
exec python3 bench/io.py --fairbench "${CARGO_TARGET_DIR:-target}/release/fairbench" "$@"
