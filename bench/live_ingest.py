#!/usr/bin/env python3
"""Live ingest: the running daemon tailing an engine log that a real writer process appends to.

For each rate (lines/s) the writer (bench/log_writer.py) appends lines of the generator's mix
(bench/gen_engine_log.py) for ``--seconds``; the daemon (``inferwatch run``: one engine log, no
kernel log, no GPUs, the shipped rules) follows it. Measured from the daemon's own process:
CPU seconds over the run (writer start until the daemon has read the last line), per 1,000
lines and as a share of one core; the lag (lines written but not yet read when the writer
stopped, and how long catching up took); and that nothing was dropped (lines read = lines
written, no lost bytes). Target (issue "Benchmarks"): <= 2 % of a core at 1,000 lines/s, and
keeping up at 10,000.

    .venv/bin/python bench/live_ingest.py [--rates 1000,10000] [--seconds 60] [--json F]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchlib import REPO, compile_package, daemon, machine, source_log, tree_cpu, wait_until

SOURCE = "engine:bench"


def one_rate(
    rate: int, seconds: float, src: Path, profile: Path | None = None
) -> dict[str, float | int | bool]:
    with tempfile.TemporaryDirectory(prefix="iw-live-") as tmp:
        work = Path(tmp)
        log = work / "engine.log"
        log.touch()
        config = (
            f"engines:\n  - name: bench\n    log: [{log}]\n"
            "kernel: {source: off}\ngpus: {backend: off}\n"
        )
        with daemon(config, work, profile=profile) as d:
            ps = d.ps
            time.sleep(2.0)  # let start-up work settle before the window opens
            cpu0, t0 = tree_cpu(ps), time.monotonic()
            writer = subprocess.run(
                [sys.executable, str(REPO / "bench/log_writer.py"), str(src), str(log),
                 str(rate), str(seconds)],
                check=True, capture_output=True, text=True,
            )  # fmt: skip
            written = int(writer.stdout.strip())
            stopped = time.monotonic()
            read_at_stop = d.metric("inferwatch_tail_lines_total", source=SOURCE)
            wait_until(
                lambda: d.metric("inferwatch_tail_lines_total", source=SOURCE) >= written,
                300,
                "the daemon to read every line",
            )
            caught_up = time.monotonic()
            cpu = tree_cpu(ps) - cpu0
            lost = d.metric("inferwatch_tail_lost_bytes_total", source=SOURCE)
            read = d.metric("inferwatch_tail_lines_total", source=SOURCE)
            rss = ps.memory_info().rss
    elapsed = caught_up - t0
    return {
        "rate": rate,
        "lines": written,
        "cpu_seconds": round(cpu, 3),
        "cpu_seconds_per_1000_lines": round(cpu / written * 1000, 4),
        "core_percent": round(100 * cpu / elapsed, 2),
        "lag_lines_at_stop": int(written - read_at_stop),
        "catch_up_seconds": round(caught_up - stopped, 2),
        "dropped": bool(lost or read != written),
        "rss_mb": round(rss / 2**20, 1),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rates", default="1000,10000", help="lines per second, comma-separated")
    ap.add_argument("--seconds", type=float, default=60.0, help="how long the writer writes")
    ap.add_argument("--json", type=Path, help="also write the results to this file")
    ap.add_argument("--profile", type=Path, help="the daemon under cProfile, stats to F.<rate>")
    args = ap.parse_args()
    rates = [int(r) for r in args.rates.split(",")]
    compile_package()
    src = source_log(int(max(rates) * args.seconds))
    print(f"# live ingest, {machine()}")
    prof = args.profile
    rows = [
        one_rate(rate, args.seconds, src, prof and prof.with_name(f"{prof.name}.{rate}"))
        for rate in rates
    ]
    print("| lines/s | lines | CPU s | CPU s per 1,000 lines | % of a core | lag at stop "
          "| catch-up s | dropped | RSS MB |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['rate']:,} | {r['lines']:,} | {r['cpu_seconds']} | "
              f"{r['cpu_seconds_per_1000_lines']} | {r['core_percent']} | "
              f"{r['lag_lines_at_stop']:,} | {r['catch_up_seconds']} | {r['dropped']} | "
              f"{r['rss_mb']} |")  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    return 1 if any(r["dropped"] for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
