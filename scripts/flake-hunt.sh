#!/usr/bin/env bash
# The flake hunt (see scripts/flake_hunt.py): every engine and CLI test
# binary 10 times quiet and 5 times beside a busy loop on each CPU
# (--quick: 3 + 2), from copies built once. Run it before every submission
# that touches timing; its table goes in the note.
set -euo pipefail
cd "$(dirname "$0")/.."
exec python3 scripts/flake_hunt.py "$@"
