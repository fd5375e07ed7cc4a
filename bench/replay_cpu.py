"""Where a replay's CPU goes: the replay process against its scan workers.

    .venv/bin/python bench/replay_cpu.py [--rounds N] [--json F] LOG
    .venv/bin/python bench/replay_cpu.py --rev A --rev B [--rounds N] LOG

runs figure 1's command, ``inferwatch replay --engine-log LOG --format jsonl --year 2026``
(output to /dev/null), with the shipped rules and with ``--no-rules``, N times each in turn,
each run in a fresh interpreter that reports ``getrusage`` for itself (imports, rules, the
records, the ticks, the pool's result thread) and for its children (the scan workers) just
before it exits; prints the medians (and the least) with every round. The replay process
applies records in file order, so its CPU is the floor of the wall time however many cores
scan; with two cores the run's total CPU / 2 is the other floor. The timed figure is
bench/engine_replay.sh's.

With ``--rev`` (twice or more), the commits side by side instead: each one's ``daemon/`` taken
with ``git archive`` into bench/out/rev-<sha>/ and byte-compiled (this machine sets
``PYTHONDONTWRITEBYTECODE``: an uncompiled tree compiles ~200 modules on every run), then N
rounds of the command with the rules, the commits' order turning each round (A B, B A, …): the
machine's speed drifts by tens of percent within minutes, and pairs see the same drift.
"""

from __future__ import annotations

import argparse
import json
import os
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


REPO = Path(__file__).resolve().parents[1]


def one(args: list[str], daemon: Path | None = None) -> tuple[float, float, float]:
    """(wall, replay process CPU, scan workers' CPU) of one replay, in seconds; with
    ``daemon``, of that tree's package."""
    env = None if daemon is None else {**os.environ, "PYTHONPATH": str(daemon)}
    start = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        check=False,
        env=env,
    )
    wall = time.monotonic() - start
    line = next((x for x in proc.stderr.splitlines() if x.startswith("replay-cpu ")), None)
    if proc.returncode != 0 or line is None:
        raise SystemExit(f"replay failed (exit {proc.returncode}):\n{proc.stderr}")
    own, workers = map(float, line.split()[1:])
    return wall, own, workers


def archived(revs: list[str]) -> dict[str, Path]:
    """Each commit's ``daemon/`` in bench/out/rev-<sha>/, byte-compiled: bench/lib.sh's
    ``archive_revs``, as bench/compare_revs.sh takes them."""
    script = 'source bench/lib.sh; out=bench/out; archive_revs "$@"; printf "%s\\n" "${revs[@]}"'
    done = subprocess.run(["bash", "-euc", script, "archive", *revs], cwd=REPO,
                          capture_output=True, text=True, check=True)  # fmt: skip
    shas = done.stdout.split()
    return {
        rev: REPO / "bench" / "out" / f"rev-{sha}" / "daemon"
        for rev, sha in zip(revs, shas, strict=True)
    }


def _runs(ns: argparse.Namespace, base: list[str]) -> dict[str, list[tuple[float, float, float]]]:
    if not ns.rev:
        variants = {"rules": base, "no_rules": ["--no-rules", *base]}
        rounds: dict[str, list[tuple[float, float, float]]] = {name: [] for name in variants}
        for _ in range(ns.rounds):
            for name, args in variants.items():
                rounds[name].append(one(args))
        return rounds
    trees = archived(ns.rev)
    rounds = {rev: [] for rev in trees}
    for k in range(ns.rounds):
        for rev in list(trees) if k % 2 == 0 else list(reversed(trees)):
            rounds[rev].append(one(base, trees[rev]))
    return rounds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("log", type=Path, help="the engine log (bench/gen_engine_log.py)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--rev", action="append", help="a commit to run side by side (2 or more)")
    parser.add_argument("--json", type=Path, help="write the medians and every round here")
    ns = parser.parse_args()
    if ns.rev is not None and len(ns.rev) < 2:
        parser.error("--rev: give two commits or more")
    base = ["--engine-log", str(ns.log.resolve()), "--format", "jsonl", "--year", "2026"]
    doc = {}
    for name, runs in _runs(ns, base).items():
        print(f"replay ({name.replace('_', ' ')})")
        medians = {}
        for k, field in enumerate(FIELDS):
            medians[field] = statistics.median(r[k] for r in runs)
            each = "  ".join(f"{r[k]:.2f}" for r in runs)
            least = min(r[k] for r in runs)
            print(f"  {field:<22} {medians[field]:6.2f} (least {least:.2f})   [{each}]")
        doc[name] = {"median": medians, "rounds": [dict(zip(FIELDS, r, strict=True)) for r in runs]}
    if ns.json is not None:
        ns.json.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
