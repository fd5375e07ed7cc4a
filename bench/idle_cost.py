#!/usr/bin/env python3
"""Idle cost: the daemon on a quiet 8-GPU host, side by side with Debian's node_exporter.

``inferwatch run`` with 8 fake GPUs (``gpus.backend: fake``, tests/fixtures/nvml/8x-h100-sxm.json,
polled every 2 s), one engine log written at 1 line/s by bench/log_writer.py (the generator's
line mix), the kernel log from a file, the shipped rules; and ``prometheus-node-exporter`` (its
default collectors) on another loopback port. Both run at once for ``--seconds``, each scraped
on ``/metrics`` once a second by its own thread here. Measured from each process: CPU seconds
over the window (and as % of one core) and peak RSS (VmHWM). Target (issue "Benchmarks", item 4):
<= 0.5 % of a core and <= 60 MB RSS.

    .venv/bin/python bench/idle_cost.py [--seconds 300] [--json F]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import psutil
from benchlib import (
    REPO,
    compile_package,
    daemon,
    host_config,
    machine,
    node_exporter,
    peak_rss_mb,
    source_log,
    tree_cpu,
    write_json,
)

TARGET_CORE_PCT = 0.5
TARGET_RSS_MB = 60.0


def scrape_every_second(url: str, stop: threading.Event, failures: list[str]) -> None:
    with httpx.Client(trust_env=False, timeout=5) as client:
        next_at = time.monotonic()
        while not stop.is_set():
            try:
                if client.get(url).status_code != 200:
                    failures.append(url)
            except httpx.HTTPError as exc:
                failures.append(f"{url}: {exc}")
            next_at += 1.0
            stop.wait(max(0.0, next_at - time.monotonic()))


def measure(seconds: float, profile: Path | None = None) -> dict[str, object]:
    src = source_log(int(seconds) + 10)
    with tempfile.TemporaryDirectory(prefix="iw-idle-") as tmp:
        work = Path(tmp)
        log, klog = work / "engine.log", work / "kern.log"
        log.touch()
        klog.write_text("", encoding="utf-8")
        config = host_config([log], kernel_file=klog)
        with daemon(config, work, profile=profile) as d, node_exporter() as ne:
            procs = {"inferwatch": d.ps}
            urls = {"inferwatch": d.base + "/metrics"}
            if ne is not None:
                procs["node_exporter"] = psutil.Process(ne[0].pid)
                urls["node_exporter"] = ne[1]
            time.sleep(3.0)  # start-up work settles before the window opens
            stop, failures = threading.Event(), []
            threads = [
                threading.Thread(target=scrape_every_second, args=(u, stop, failures))
                for u in urls.values()
            ]
            writer = subprocess.Popen(
                [sys.executable, str(REPO / "bench/log_writer.py"), str(src), str(log), "1",
                 str(seconds)],
                stdout=subprocess.PIPE,
            )  # fmt: skip
            cpu0 = {n: tree_cpu(p) for n, p in procs.items()}
            t0 = time.monotonic()
            for t in threads:
                t.start()
            writer.wait()
            elapsed = time.monotonic() - t0
            cpu = {n: tree_cpu(p) - cpu0[n] for n, p in procs.items()}
            stop.set()
            for t in threads:
                t.join()
            rss = {n: peak_rss_mb(p.pid) for n, p in procs.items()}
    out: dict[str, object] = {"seconds": round(elapsed, 1), "scrape_failures": len(failures)}
    for name in procs:
        out[name] = {
            "cpu_seconds": round(cpu[name], 3),
            "core_percent": round(100 * cpu[name] / elapsed, 3),
            "peak_rss_mb": round(rss[name], 1),
        }
    if "node_exporter" not in procs:
        out["node_exporter"] = None
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=300.0)
    ap.add_argument("--json", type=Path, help="also write the results to this file")
    ap.add_argument("--profile", type=Path, help="run the daemon under cProfile, stats to F")
    args = ap.parse_args()
    compile_package()
    print(f"# idle cost, {machine()}")
    doc = measure(args.seconds, args.profile)
    doc["machine"] = machine()
    print("| process | CPU s | % of a core | peak RSS MB |")
    print("|---|---|---|---|")
    for name in ("inferwatch", "node_exporter"):
        r = doc[name]
        if isinstance(r, dict):
            print(f"| {name} | {r['cpu_seconds']} | {r['core_percent']} | {r['peak_rss_mb']} |")
        else:
            print(f"| {name} | not installed | | |")
    print(f"{doc['seconds']} s, scrape failures: {doc['scrape_failures']}")
    write_json(args.json, doc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
