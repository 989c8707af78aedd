#!/usr/bin/env bash
# cargo's runner for the test binaries of `make test` (set by scripts/test.sh
# through CARGO_TARGET_<triple>_RUNNER): each test binary reports how long
# every test took (libtest's --report-time, "test NAME ... ok <1.234s>"), so
# that the end of the run can name the slowest. libtest accepts the flag
# from a stable toolchain's test binary only with RUSTC_BOOTSTRAP set in its
# environment; nothing is compiled with it.
exe=$1
shift
RUSTC_BOOTSTRAP=1 exec "$exe" "$@" -Z unstable-options --report-time
