"""Where figure 1's scan spends its CPU, step by step, in one process.

    .venv/bin/python bench/scan_steps.py [--rounds N] LOG

cuts LOG into the parts the replay's scan would (``engine_parts.PART_BYTES``) and runs, over all
of them, each step of a scan worker on its own, timed with ``time.process_time`` (user and
system CPU of this process): cutting the request-logging lines (``engine_bulk._bulk_lines``),
joining the kept text, the RE2 anchor
search over it, counting its lines, the whole ``spans_in`` (all of the above and the spans), the
parse of every span as a worker parses it (``engine_parts.parse_hit``, line events rendered as
JSON, as ``--format jsonl`` asks) and pickling each part's result. Prints the median of N
rounds (3 by default) with every round. A step timed alone repeats work the next one does
again, so the rows do not add up; ``spans_in`` + parse + pickle is one worker's whole part.
"""

from __future__ import annotations

import argparse
import mmap
import pickle
import statistics
import time
from collections.abc import Callable
from datetime import UTC
from pathlib import Path

import re2

from inferwatch.parsers.engine_precheck import PATTERN_BYTES
from inferwatch.replay import engine_bulk, engine_parts, engine_scan

Part = tuple[int, int]


def _steps(mm: mmap.mmap, parts: list[Part]) -> dict[str, Callable[[], object]]:
    pattern = re2.compile(PATTERN_BYTES)
    texts = [engine_bulk.cut_bulk(mm, a, b).text for a, b in parts]
    spans = [engine_scan.spans_in(mm, a, b) for a, b in parts]
    results = [
        ([h for i, x, y in found if (h := engine_parts.parse_hit(i, mm[x:y], 2026, UTC, True))], n)
        for found, n in spans
    ]

    def parse() -> None:
        for found, _ in spans:
            for i, x, y in found:
                engine_parts.parse_hit(i, mm[x:y], 2026, UTC, True)

    return {
        f"cut request lines ({sum(map(len, texts)) / 1e6:.1f} of {len(mm) / 1e6:.0f} MB kept)": (
            lambda: [engine_bulk._bulk_lines(mm, a, b) for a, b in parts]
        ),
        "cut and join (cut_bulk)": lambda: [engine_bulk.cut_bulk(mm, a, b) for a, b in parts],
        "RE2 anchor search over the kept text": lambda: [
            list(pattern.finditer(text)) for text in texts
        ],
        "count the kept text's lines": lambda: [text.count(b"\n") for text in texts],
        f"spans_in, whole ({sum(len(s) for s, _ in spans):,} spans)": lambda: [
            engine_scan.spans_in(mm, a, b) for a, b in parts
        ],
        "parse_hit of every span": parse,
        "pickle the parts' results": lambda: [pickle.dumps(r, protocol=5) for r in results],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("log", type=Path)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    with args.log.open("rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        size = len(mm)
        parts = engine_scan.cut_parts(mm, size, -(-size // engine_parts.PART_BYTES))
        steps = _steps(mm, parts)
        times: dict[str, list[float]] = {name: [] for name in steps}
        for _ in range(args.rounds):
            for name, step in steps.items():
                start = time.process_time()
                step()
                times[name].append(time.process_time() - start)
    print(f"{args.log}: {size / 1e6:.0f} MB in {len(parts)} parts; CPU s, median of {args.rounds}")
    for name, values in times.items():
        rounds = "  ".join(f"{v:.3f}" for v in values)
        print(f"  {name:52s} {statistics.median(values):6.3f}   [{rounds}]")


if __name__ == "__main__":
    main()
