#!/usr/bin/env bash
# The load engine against a named earlier revision of itself.
#
# Builds REV (from git, into a folder of its own) and the working tree, then
# runs both alternately against the same nginx, pinned as bench/loadgen.sh
# pins them: HTTP/1.1 closed loop, constant rate at two rates, h2c and TLS.
# Prints each run, the medians and the ratios current/REV for requests/s and
# generator CPU-µs per request.
#
#   bench/revision.sh REV [--runs N] [--duration SECS]
#
# Needs: nginx, openssl (apt-get install nginx-light openssl), python3.
# Traffic goes to 127.0.0.1 only.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -lt 1 ] || [[ "$1" == -* ]]; then
    echo "usage: bench/revision.sh REV [--runs N] [--duration SECS]" >&2
    exit 2
fi
rev="$1"
shift
sha=$(git rev-parse --verify --quiet "$rev^{commit}") || {
    echo "bench/revision.sh: REV '$rev' is not a commit of this repository" >&2
    exit 2
}
for t in nginx openssl; do
    command -v "$t" >/dev/null || { echo "bench/revision.sh: $t not found (apt-get install nginx-light openssl)" >&2; exit 2; }
done
dir="${TMPDIR:-/tmp}/fairbench-rev-${sha:0:12}"
old="$dir/target/release/fairbench"
if [ ! -x "$old" ]; then
    rm -rf "$dir"
    mkdir -p "$dir/src"
    git archive "$sha" | tar -x -C "$dir/src"
    echo "building $rev (${sha:0:12}) in $dir" >&2
    CARGO_TARGET_DIR="$dir/target" cargo build --release --quiet -p fairbench \
        --manifest-path "$dir/src/Cargo.toml"
fi
cargo build --release --quiet -p fairbench
exec python3 bench/revision.py --old "$old" --old-name "${sha:0:7}" \
    --new "${CARGO_TARGET_DIR:-target}/release/fairbench" "$@"
