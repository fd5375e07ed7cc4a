#!/usr/bin/env bash
# Notification latency: kmsg Xid record written -> webhook received, inferwatch side by side with
# Prometheus + Alertmanager (Debian's binaries) at 1-s scrape/evaluation intervals.
# Target (issue "Notifications"): p99 <= 100 ms over 50 trials with group_wait 0.
# Needs root (writes /dev/kmsg). Extra arguments go to bench/notify_latency.py (see --help).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" -ne 0 ]; then
  echo "needs root: the benchmark writes Xid records into /dev/kmsg" >&2
  exit 2
fi
exec .venv/bin/python bench/notify_latency.py "$@"
