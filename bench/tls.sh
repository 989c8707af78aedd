#!/usr/bin/env bash
# What TLS costs fairbench's load engine: generator CPU per request over
# https:// against http:// on the same nginx, alternately.
#
# nginx (Debian, one worker, the 13-byte body, TLS 1.3 with a certificate
# made for the run by a CA made for the run) is pinned to one CPU; fairbench
# to the other. Two shapes: kept-alive connections (the handshake happens
# once per connection, so this is the cost of record encryption), and a new
# connection per request (--no-keepalive: a handshake per request, resumed
# from the session cache after the first). Prints each run, the medians and
# the ratio https/http of CPU-µs per request.
#
#   bench/tls.sh [--runs N] [--duration SECS] [--connections N] [--requests N]
#
# Needs: nginx and openssl (apt-get install nginx-light openssl), python3, a
# release build (made here if missing). Traffic goes to 127.0.0.1 only.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v nginx >/dev/null || { echo "bench/tls.sh: nginx not found (apt-get install nginx-light)" >&2; exit 2; }
command -v openssl >/dev/null || { echo "bench/tls.sh: openssl not found (apt-get install openssl)" >&2; exit 2; }
cargo build --release --quiet -p fairbench
exec python3 bench/tls.py --fairbench target/release/fairbench "$@"
