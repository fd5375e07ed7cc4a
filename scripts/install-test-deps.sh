#!/usr/bin/env bash
# Install the Debian packages the test suite uses for real components, when they are missing:
# promtool (package prometheus), Alertmanager, logrotate, systemd-analyze (package systemd: the
# unit file is checked with it). Needs root (CI runs as root); without it,
# say what is missing: under CI=true the dependent tests then fail instead of skipping.
set -euo pipefail
need=()
command -v promtool >/dev/null 2>&1 || need+=(prometheus)
command -v prometheus-alertmanager >/dev/null 2>&1 || command -v alertmanager >/dev/null 2>&1 || need+=(prometheus-alertmanager)
command -v logrotate >/dev/null 2>&1 || [ -x /usr/sbin/logrotate ] || need+=(logrotate)
command -v systemd-analyze >/dev/null 2>&1 || need+=(systemd)
if [ ${#need[@]} -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "install-test-deps: missing Debian packages: ${need[*]} (run 'sudo apt-get install ${need[*]}');" \
       "tests that need them will skip (fail under CI=true)." >&2
  exit 0
fi
echo "install-test-deps: installing ${need[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -q >/dev/null
apt-get install -y -q --no-install-recommends "${need[@]}" >/dev/null
# The packages start their daemons; the tests run their own instances on free ports.
for svc in prometheus prometheus-alertmanager; do
  if command -v systemctl >/dev/null 2>&1; then systemctl stop "$svc" >/dev/null 2>&1 || true; fi
done
