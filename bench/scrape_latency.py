#!/usr/bin/env python3
"""Scrape latency: back-to-back ``/metrics`` scrapes of the daemon vs Debian's node_exporter.

``inferwatch run`` with 8 fake GPUs (polled every 2 s) and 2 engines, each following a log that
holds a few thousand lines of the generator's mix (so every engine series exists), the shipped
rules; ``prometheus-node-exporter`` with its default collectors. After a warm-up, ``--scrapes``
scrapes of each, alternating one by one over one keep-alive connection each (as Prometheus
scrapes), timed from request to the last byte of the body. Target (issue "Benchmarks", item 5):
p99 < 10 ms.

    .venv/bin/python bench/scrape_latency.py [--scrapes 300] [--json F]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from itertools import islice
from pathlib import Path

import httpx
from benchlib import (
    compile_package,
    daemon,
    host_config,
    machine,
    median,
    node_exporter,
    quantile,
    source_log,
    wait_until,
    write_json,
)

ENGINE_LINES = 4000
TARGET_P99_MS = 10.0


def timed(client: httpx.Client, url: str) -> tuple[float, int]:
    t0 = time.perf_counter()
    body = client.get(url).content
    return (time.perf_counter() - t0) * 1000, len(body)


def stats(ms: list[float], size: int) -> dict[str, float]:
    return {"n": len(ms), "p50_ms": round(median(ms), 2), "p99_ms": round(quantile(ms, 0.99), 2),
            "max_ms": round(max(ms), 2), "bytes": size}  # fmt: skip


def measure(scrapes: int) -> dict[str, object]:
    src = source_log(ENGINE_LINES)
    with tempfile.TemporaryDirectory(prefix="iw-scrape-") as tmp:
        work = Path(tmp)
        logs = [work / "e0.log", work / "e1.log"]
        with src.open("rb") as f:
            head = b"".join(islice(f, ENGINE_LINES))
        for log in logs:
            log.write_bytes(head)
        with daemon(host_config(logs), work) as d, node_exporter() as ne:
            wait_until(
                lambda: d.metric("inferwatch_gpu_up") >= 8 and "engine=\"e1\"" in d.get(
                    "/metrics").text, 60, "8 GPUs and both engines on /metrics")  # fmt: skip
            urls = {"inferwatch": d.base + "/metrics"}
            if ne is not None:
                urls["node_exporter"] = ne[1]
            times: dict[str, list[float]] = {n: [] for n in urls}
            size: dict[str, int] = {}
            clients = {n: httpx.Client(trust_env=False, timeout=10) for n in urls}
            try:
                for _ in range(10):  # warm-up
                    for n, u in urls.items():
                        timed(clients[n], u)
                for _ in range(scrapes):
                    for n, u in urls.items():
                        ms, size[n] = timed(clients[n], u)
                        times[n].append(ms)
            finally:
                for c in clients.values():
                    c.close()
    out: dict[str, object] = {n: stats(times[n], size[n]) for n in urls}
    out.setdefault("node_exporter", None)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scrapes", type=int, default=300)
    ap.add_argument("--json", type=Path, help="also write the results to this file")
    args = ap.parse_args()
    compile_package()
    doc = measure(args.scrapes)
    doc["machine"] = machine()
    print(f"# scrape latency, {doc['machine']}")
    print("| target | scrapes | p50 ms | p99 ms | max ms | body bytes |")
    print("|---|---|---|---|---|---|")
    for name in ("inferwatch", "node_exporter"):
        r = doc[name]
        if isinstance(r, dict):
            print(f"| {name} | {r['n']} | {r['p50_ms']} | {r['p99_ms']} | {r['max_ms']} | "
                  f"{r['bytes']:,} |")  # fmt: skip
        else:
            print(f"| {name} | not installed | | | | |")
    write_json(args.json, doc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
