#!/usr/bin/env bash
# What the tests need beyond the machine image (Rust, Go, Node, Java, Python):
# Python packages for the Dart syntax tests, Debian's chromium for the
# report's browser test, OpenSSH (client and server, for the ssh-host tests,
# which start their own sshd on a loopback port), iproute2 (ip, tc: the
# network-namespace tests), nginx (servers/nginx), PostgreSQL (the
# database scenarios: fairbench starts its own from Debian's binaries), and
# wrk and ab (calibration against the publications' own tools).
# Installs only what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

python3 -m pip install --quiet --disable-pip-version-check -r tests/requirements.txt

need=()
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v ssh >/dev/null 2>&1 || need+=(openssh-client)
[ -x /usr/sbin/sshd ] || need+=(openssh-server)
command -v ip >/dev/null 2>&1 || need+=(iproute2)
command -v tc >/dev/null 2>&1 || need+=(iproute2)
# nginx: servers/nginx, checked by the tests and in `make quick`.
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || need+=(nginx-light)
# PostgreSQL: the database scenarios (docs/scenarios.md); Debian's package
# also makes the `postgres` user fairbench runs it as when it is root.
ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 || need+=(postgresql)
# wrk and ab: the publications' own tools, for calibration (docs/study.md).
command -v wrk >/dev/null 2>&1 || need+=(wrk)
command -v ab >/dev/null 2>&1 || need+=(apache2-utils)
# prometheus: scrapes `--metrics-listen` in tests/metrics_listen.rs (docs/metrics.md).
command -v prometheus >/dev/null 2>&1 || need+=(prometheus)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "setup: missing ${need[*]}; run as root or: sudo apt-get install -y ${need[*]}" >&2
    exit 1
  fi
  mapfile -t need < <(printf '%s\n' "${need[@]}" | sort -u)
  echo "setup: installing ${need[*]} from Debian"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
