"""CPU seconds spent evaluating each rule group during an `inferwatch replay` (a wrapper around
`RuleManager.evaluate_group_outcome` timed with `time.process_time`): the rules' share of a
replay, apart from the parsing and the scan workers whose noise swamps it in the process time.

usage: PYTHONPATH=DAEMON_DIR .venv/bin/python bench/rule_group_cpu.py LOG [--json F]
(prints the replay's output nowhere; the per-group table and the total on stdout)
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import io
import json
import time
from pathlib import Path
from typing import Any

from inferwatch.cli import main as cli_main
from inferwatch.rules.evaluator import RuleManager


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("log", type=Path)
    ap.add_argument("--json", type=Path, help="also write the results to this file")
    args = ap.parse_args()
    cpu: collections.Counter[str] = collections.Counter()
    calls: collections.Counter[str] = collections.Counter()
    real = RuleManager.evaluate_group_outcome

    def timed(self: RuleManager, group: Any, t: float, only: Any = None) -> Any:
        started = time.process_time()
        try:
            return real(self, group, t, only)
        finally:
            cpu[group.name] += time.process_time() - started
            calls[group.name] += 1

    RuleManager.evaluate_group_outcome = timed  # type: ignore[method-assign]
    argv = ["replay", "--engine-log", str(args.log), "--format", "jsonl", "--year", "2026"]
    with contextlib.redirect_stdout(io.StringIO()):
        cli_main(argv)
    total = sum(cpu.values())
    print(f"rule evaluation: {total:.3f} CPU-s")
    for name, seconds in cpu.most_common():
        each = seconds / calls[name] * 1e6
        print(f"  {name:<32} {seconds * 1000:8.1f} ms {calls[name]:6d} x {each:7.1f} us")
    if args.json:
        groups = {n: {"cpu_s": cpu[n], "evaluations": calls[n]} for n in cpu}
        args.json.write_text(json.dumps({"cpu_s": total, "groups": groups}, indent=1) + "\n")


if __name__ == "__main__":
    main()
