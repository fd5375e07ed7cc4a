"""The rule work behind one new Xid alert on a host whose kernel ring is full of old ones.

bench/notify_latency.py writes each trial's Xid 79 on a bus of its own into a kernel ring that
other runs filled (~1,300 records), so the daemon holds a counter series for every one of those
buses, and each new record re-runs the shipped GPU rules that can see it (``GpuFallenOffBus``,
``GpuLost``, ``GpuRecoveryActionRequired``) over all of them. This measures that evaluation
alone, in one process: a store with ``--series`` old Xid 79 counters (counted as a restart
counts a ring's old records, then carried for an hour of 10-s ticks) and 8 GPUs, rules/gpu.yaml
loaded by the daemon's RuleManager, and ``--triggers`` new buses, each evaluated as the daemon
does when its counter appears (the rules that can see the series, each group in one context).
Prints the CPU time per trigger (trimmed mean of the middle 75 %, and the median).

usage: .venv/bin/python bench/rules_trigger.py [--series 1300] [--triggers 80] [--json F]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from inferwatch.clock import FakeClock
from inferwatch.labels import make_labels
from inferwatch.rules.evaluator import RuleManager
from inferwatch.rules.loader import load_rule_files
from inferwatch.store.tsdb import SeriesStore

RULES = Path(__file__).resolve().parents[1] / "rules" / "gpu.yaml"
XID = "inferwatch_xid_errors_total"


def xid_labels(domain: int) -> tuple[tuple[str, str], ...]:
    return make_labels(
        {"pci_bus_id": f"{domain:04x}:3b:00.0", "xid": "79", "category": "hardware-bus"}
    )


def measure(series: int, triggers: int) -> list[float]:
    clock = FakeClock(1_000_000.0)
    store = SeriesStore(clock)
    rule_set, problems = load_rule_files([RULES])
    assert not problems, problems
    manager = RuleManager(rule_set, store)
    for g in range(8):
        bus = f"0000:{g + 0x18:02x}:00.0"
        store.set("inferwatch_gpu_info", make_labels({"pci_bus_id": bus, "gpu": str(g),
                                                      "uuid": f"GPU-{g}"}), 1.0)  # fmt: skip
        store.set("inferwatch_gpu_up", make_labels({"pci_bus_id": bus, "gpu": str(g)}), 1.0)
    for i in range(series):
        store.inc_baseline(XID, xid_labels(0x1000 + i), 1.0)
    for _ in range(360):
        clock.advance(10.0)
        store.tick()
        manager.evaluate_due(clock.time())
    groups = [g for g in manager.rule_set.groups if g in manager.rules_reading(XID)]

    def trigger(i: int) -> None:
        labels = xid_labels(0xA000 + i)
        clock.advance(0.7)
        store.inc(XID, labels, 1.0, wake=False)
        for group in groups:
            only = manager.touched(group, XID, labels)
            if only is None:
                manager.evaluate_group(group, clock.time())
            elif only:
                manager.evaluate_rules(group, clock.time(), frozenset(only))

    for i in range(3):  # first evaluations: selections and windows built
        trigger(i)
    cpu = []
    for i in range(3, 3 + triggers):
        started = time.process_time()
        trigger(i)
        cpu.append((time.process_time() - started) * 1000)
    return cpu


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--series", type=int, default=1300, help="old Xid 79 counters held")
    ap.add_argument("--triggers", type=int, default=80, help="new buses, one evaluation each")
    ap.add_argument("--json", type=Path, help="also write the results to this file")
    args = ap.parse_args()
    cpu = sorted(measure(args.series, args.triggers))
    cut = len(cpu) // 8
    middle = cpu[cut : len(cpu) - cut] or cpu
    doc = {
        "series": args.series,
        "triggers": args.triggers,
        "cpu_ms_trimmed_mean": round(statistics.fmean(middle), 2),
        "cpu_ms_median": round(statistics.median(cpu), 2),
    }
    mean, median = doc["cpu_ms_trimmed_mean"], doc["cpu_ms_median"]
    print(f"{args.series} old Xid series, {args.triggers} new ones: CPU per triggered "
          f"evaluation {mean} ms (trimmed mean), median {median} ms")  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
