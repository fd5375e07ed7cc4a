#!/usr/bin/env python3
"""Check what the ingest contenders found against the log's ground truth.

    python3 bench/check_counts.py LOG.expected.json REPLAY.jsonl [MTAIL.prom]

The replay must have one ``engine_stats`` and one ``spec_decode`` event per stats and SpecDecoding
line, with the same sums of generation throughput and mean acceptance length, and the same last
values; mtail (when given) must have counted every line and every stats line. Exit 1 on any
difference, naming it.
"""

from __future__ import annotations

import json
import math
import re
import sys
from pathlib import Path


def replay_figures(path: Path) -> dict[str, float | None]:
    stats = spec = 0
    gen_sum = mal_sum = 0.0
    last_gen: float | None = None
    last_mal: float | None = None
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            doc = json.loads(line)
            if doc.get("kind") != "event":
                continue
            if doc["type"] == "engine_stats":
                stats += 1
                gen_sum += doc["gen_tps"]
                last_gen = doc["gen_tps"]
            elif doc["type"] == "spec_decode":
                spec += 1
                mal_sum += doc["mal"]
                last_mal = doc["mal"]
    return {"stats_lines": stats, "specdec_lines": spec, "sum_gen_throughput": gen_sum,
            "sum_mal": mal_sum, "last_gen_throughput": last_gen, "last_mal": last_mal}  # fmt: skip


def mtail_figures(path: Path) -> dict[str, float | None]:
    values = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        match = re.match(r"^(\w+)\{[^}]*\} (\S+)$", line)
        if match:
            values[match[1]] = float(match[2])
    lines = values.get("engine_log_lines_total", values.get("vllm_log_lines_total"))
    stats = values.get("engine_stats_lines_total", values.get("vllm_stats_lines_total"))
    return {"lines": lines, "stats_lines": stats}


def compare(who: str, found: dict[str, float | None], truth: dict[str, float]) -> list[str]:
    wrong = []
    for key, value in found.items():
        want = truth[key]
        if value is None or not math.isclose(value, want, rel_tol=1e-9, abs_tol=0.01):
            wrong.append(f"{who}: {key} is {value}, the log holds {want}")
    return wrong


def main(argv: list[str]) -> int:
    if len(argv) < 3:
        print(__doc__)
        return 2
    truth = json.loads(Path(argv[1]).read_text(encoding="utf-8"))
    wrong = compare("replay", replay_figures(Path(argv[2])), truth)
    if len(argv) > 3:
        wrong += compare("mtail", mtail_figures(Path(argv[3])), truth)
    for line in wrong:
        print(line)
    if not wrong:
        print(f"counts agree with {argv[1]}: {truth['stats_lines']} stats lines, "
              f"{truth['lines']} lines")  # fmt: skip
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
