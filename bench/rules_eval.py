"""Rule evaluation cost (issue "Rules engine"): 100 alerting rules, each selecting ~50 of 5,000
series with a 5-minute range function over 10-s samples, evaluated by the daemon's RuleManager.
Target: < 50 ms per tick. Prints the median and worst of 60 ticks (new samples every 10 s), and
the median CPU time per tick (steadier than wall time on a machine shared with other work).

usage: .venv/bin/python bench/rules_eval.py [--json F]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import time
from pathlib import Path

from inferwatch.clock import FakeClock
from inferwatch.labels import make_labels
from inferwatch.rules.evaluator import RuleManager
from inferwatch.rules.loader import load_rule_files
from inferwatch.store.tsdb import SeriesStore

EXPRS = (
    "rate(bench_metric_{m}_total[5m]) > 5",
    "sum by (gpu) (rate(bench_metric_{m}_total[5m])) > 0.1",
    "increase(bench_metric_{m}_total[5m]) > 10000",
    "avg_over_time(bench_metric_{m}_total[5m]) > 1e9",
)


def rule_file(path: Path) -> None:
    lines = ["groups:", "  - name: bench", "    rules:"]
    for m in range(100):
        expr = EXPRS[m % 4].format(m=m)
        lines += [f"      - alert: Bench{m}", f"        expr: {expr}", "        for: 1m"]
    path.write_text("\n".join(lines) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", type=Path, help="also write the results to this file")
    args = ap.parse_args()
    rng = random.Random(1)  # noqa: S311 - benchmark data
    clock = FakeClock(1_700_000_000.0)
    store = SeriesStore(clock)
    series = [
        (f"bench_metric_{m}_total", make_labels({"instance": f"h{i}", "gpu": str(i % 8)}))
        for m in range(100)
        for i in range(50)
    ]
    values = dict.fromkeys(series, 0.0)

    def sample() -> None:
        for key in series:
            values[key] += rng.random() * 10
            store.set_counter(key[0], key[1], values[key])

    for _ in range(60):  # 10 minutes of history
        sample()
        clock.advance(10)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.yaml"
        rule_file(path)
        rule_set, problems = load_rule_files([path])
    assert not problems, problems
    manager = RuleManager(rule_set, store, {})
    times, cpu = [], []
    for tick in range(60):
        if tick % 10 == 0:
            sample()
        started, cpu_started = time.perf_counter(), time.process_time()
        manager.evaluate_all(clock.time())
        times.append(time.perf_counter() - started)
        cpu.append(time.process_time() - cpu_started)
        clock.advance(1)
    print(f"series: {store.series_count()}, rules: {len(list(rule_set.alerting_rules()))}")
    print(
        f"per tick: median {statistics.median(times) * 1000:.1f} ms, "
        f"first {times[0] * 1000:.1f} ms, worst {max(times) * 1000:.1f} ms; "
        f"CPU median {statistics.median(cpu) * 1000:.1f} ms"
    )

    if args.json:
        doc = {
            "series": store.series_count(),
            "rules": len(list(rule_set.alerting_rules())),
            "median_ms": statistics.median(times) * 1000,
            "worst_ms": max(times) * 1000,
            "cpu_median_ms": statistics.median(cpu) * 1000,
        }
        args.json.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
