#!/usr/bin/env bash
# `make test`: installs what the tests need (idempotent), then runs them all.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup-test-deps.sh

echo "== lint"
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --quiet -- -D warnings

echo "== Rust tests"
cargo test --workspace --no-fail-fast

echo "== Dart sources (tree-sitter) and manifests"
python3 -m pytest -q tests
