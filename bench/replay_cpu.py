"""Where a replay's CPU goes: the replay process against its scan workers.

    .venv/bin/python bench/replay_cpu.py [--rounds N] [--json F] LOG

runs figure 1's command, ``inferwatch replay --engine-log LOG --format jsonl --year 2026``
(output to /dev/null), with the shipped rules and with ``--no-rules``, N times each in turn,
each run in a fresh interpreter that reports ``getrusage`` for itself (imports, rules, the
records, the ticks, the pool's result thread) and for its children (the scan workers) just
before it exits; prints the medians with every round. The replay process applies records in
file order, so its CPU is the floor of the wall time however many cores scan; with two cores
the run's total CPU / 2 is the other floor. The timed figure is bench/engine_replay.sh's.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

_CHILD = """
import os, resource, sys
from inferwatch import cli
code = cli.dispatch(cli.build_parser().parse_args(["replay", *sys.argv[1:]]))
sys.stdout.flush()
me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
own, workers = me.ru_utime + me.ru_stime, kids.ru_utime + kids.ru_stime
os.write(2, f"replay-cpu {own:.3f} {workers:.3f}\\n".encode())
os._exit(code)
"""
FIELDS = ("wall_s", "replay_process_cpu_s", "scan_workers_cpu_s")


def one(args: list[str]) -> tuple[float, float, float]:
    """(wall, replay process CPU, scan workers' CPU) of one replay, in seconds."""
    start = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        check=False,
    )
    wall = time.monotonic() - start
    line = next((x for x in proc.stderr.splitlines() if x.startswith("replay-cpu ")), None)
    if proc.returncode != 0 or line is None:
        raise SystemExit(f"replay failed (exit {proc.returncode}):\n{proc.stderr}")
    own, workers = map(float, line.split()[1:])
    return wall, own, workers


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("log", type=Path, help="the engine log (bench/gen_engine_log.py)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", type=Path, help="write the medians and every round here")
    ns = parser.parse_args()
    base = ["--engine-log", str(ns.log), "--format", "jsonl", "--year", "2026"]
    variants = {"rules": base, "no_rules": ["--no-rules", *base]}
    rounds: dict[str, list[tuple[float, float, float]]] = {name: [] for name in variants}
    for _ in range(ns.rounds):
        for name, args in variants.items():
            rounds[name].append(one(args))
    doc = {}
    for name, runs in rounds.items():
        print(f"replay ({name.replace('_', ' ')})")
        medians = {}
        for k, field in enumerate(FIELDS):
            medians[field] = statistics.median(r[k] for r in runs)
            each = "  ".join(f"{r[k]:.2f}" for r in runs)
            print(f"  {field:<22} {medians[field]:6.2f}   [{each}]")
        doc[name] = {"median": medians, "rounds": [dict(zip(FIELDS, r, strict=True)) for r in runs]}
    if ns.json is not None:
        ns.json.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
