#!/usr/bin/env bash
# `make test`: installs what the tests need (idempotent), then runs them all,
# and ends with the ten slowest tests and the time of each phase (the suite
# must stay well inside CI's 90 minutes on a slower machine than ours).
set -euo pipefail
cd "$(dirname "$0")/.."

log=$(mktemp -t fairbench-test.XXXXXX)
trap 'rm -f "$log"' EXIT
phases=()
phase_start=$SECONDS
phase() { phases+=("$1=$((SECONDS - phase_start))"); phase_start=$SECONDS; }

bash scripts/setup-test-deps.sh
phase setup

echo "== lint"
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --quiet -- -D warnings
phase lint

echo "== Rust tests"
# Build first, so that the test phase's time is the tests' own.
cargo test --workspace --no-run --quiet
phase build
# Each test binary runs through scripts/test-runner.sh, which has libtest
# print every test's time. Doc tests run apart, without it: cargo hands a
# runner to rustdoc as its --test-runtool, and rustdoc then fails to find
# the workspace's crates.
triple=$(rustc -vV | sed -n 's/^host: //p' | tr 'a-z-' 'A-Z_')
rust_status=0
env "CARGO_TARGET_${triple}_RUNNER=$PWD/scripts/test-runner.sh" \
  cargo test --workspace --no-fail-fast --lib --bins --tests 2>&1 | tee "$log" || rust_status=$?
cargo test --workspace --no-fail-fast --doc 2>&1 | tee -a "$log" || rust_status=$?
phase rust-tests

echo "== Dart sources (tree-sitter) and manifests"
py_status=0
python3 -m pytest -q tests || py_status=$?
phase python-tests

python3 scripts/test_times.py "$log" "${phases[@]}"
if [ "$rust_status" -ne 0 ] || [ "$py_status" -ne 0 ]; then
  echo "make test: failed (Rust tests exit $rust_status, Python tests exit $py_status)"
  exit 1
fi
