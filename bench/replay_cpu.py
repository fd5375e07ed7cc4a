"""Where a replay's CPU goes: the replay process against its scan workers.

    .venv/bin/python bench/replay_cpu.py [--rounds N] [--json F] LOG
    .venv/bin/python bench/replay_cpu.py --rev A --rev B [--rounds N] LOG
    .venv/bin/python bench/replay_cpu.py --phases [--rounds N] LOG

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

With ``--phases``, where the replay process's own CPU goes, with the rules (the process's main
thread timed with ``time.thread_time`` around the replay's steps; the timers add ~1 µs a call,
so these runs are not the figure): start-up to the first record (imports, rules, the fork of
the scan), the records (derivation, store writes and output; event-driven rule runs excluded),
the ticks (the store's tick, engine flushes, thresholds; their rule runs excluded), the rules
(every group evaluation), the rest of the main thread (merging, the virtual clock, the
summary), the other threads (the pool's result thread unpickling the workers' parts), the wall
time spent waiting for a part, and the CPU of parts the process scanned itself while waiting.
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

_PHASES_CHILD = """
import os, resource, sys, time
from inferwatch import cli
from inferwatch.replay import engine_parts, runner
from inferwatch.rules.evaluator import RuleManager

clock = time.thread_time
spent = dict.fromkeys(("startup", "records", "ticks", "rules", "waiting", "stolen"), 0.0)
rules_in = [0.0]  # rule CPU so far: what a step's own time excludes
ticking = [False]

def timer(fn, phase, skip_in_tick=False):
    def run(*args, **kwargs):
        if skip_in_tick and ticking[0]:
            return fn(*args, **kwargs)
        t, before = clock(), rules_in[0]
        try:
            return fn(*args, **kwargs)
        finally:
            spent[phase] += clock() - t - (rules_in[0] - before)
    return run

def rule_timer(fn):
    def run(*args, **kwargs):
        t = clock()
        try:
            return fn(*args, **kwargs)
        finally:
            d = clock() - t
            spent["rules"] += d
            rules_in[0] += d
    return run

def wall_timer(fn, phase):
    def run(*args, **kwargs):
        t = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            spent[phase] += time.perf_counter() - t
    return run

Replay = runner.Replay
run0, tick0 = Replay.run, Replay._tick

async def run(self):
    spent["startup"] = clock()
    return await run0(self)

async def tick(self):
    t, before = clock(), rules_in[0]
    ticking[0] = True
    try:
        await tick0(self)
    finally:
        ticking[0] = False
        spent["ticks"] += clock() - t - (rules_in[0] - before)

Replay.run, Replay._tick = run, tick
Replay._process = timer(Replay._process, "records")
Replay._effects = timer(Replay._effects, "records", skip_in_tick=True)
RuleManager.evaluate_group = rule_timer(RuleManager.evaluate_group)  # event-driven runs
RuleManager.evaluate_groups = rule_timer(RuleManager.evaluate_groups)  # a tick's
engine_parts._Job.result = wall_timer(engine_parts._Job.result, "waiting")
engine_parts._Scan._steal = timer(engine_parts._Scan._steal, "stolen")
code = cli.dispatch(cli.build_parser().parse_args(["replay", *sys.argv[1:]]))
sys.stdout.flush()
main = clock()
me = resource.getrusage(resource.RUSAGE_SELF)
spent["rest"] = main - sum(spent[k] for k in ("startup", "records", "ticks", "rules", "stolen"))
spent["other_threads"] = me.ru_utime + me.ru_stime - main
line = " ".join(f"{k}={v:.4f}" for k, v in spent.items())
os.write(2, f"replay-phases {line}\\n".encode())
os._exit(code)
"""
PHASES = ("startup", "records", "ticks", "rules", "rest", "other_threads", "stolen", "waiting")


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


def phases(args: list[str]) -> dict[str, float]:
    """Seconds of each of :data:`PHASES` in one replay with the rules (``--phases``)."""
    proc = subprocess.run([sys.executable, "-c", _PHASES_CHILD, *args], stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True, check=False)  # fmt: skip
    line = next((x for x in proc.stderr.splitlines() if x.startswith("replay-phases ")), None)
    if proc.returncode != 0 or line is None:
        raise SystemExit(f"replay failed (exit {proc.returncode}):\n{proc.stderr}")
    found = dict(item.split("=") for item in line.split()[1:])
    return {name: float(found[name]) for name in PHASES}


def report_phases(ns: argparse.Namespace, base: list[str]) -> None:
    runs = [phases(base) for _ in range(ns.rounds)]
    print("replay process, main thread unless said (with the rules; timers on)")
    for name in PHASES:
        values = [r[name] for r in runs]
        each = "  ".join(f"{v:.3f}" for v in values)
        print(f"  {name:<14} {statistics.median(values):6.3f} s   [{each}]")
    if ns.json is not None:
        medians = {name: statistics.median(r[name] for r in runs) for name in PHASES}
        ns.json.write_text(json.dumps({"median": medians, "rounds": runs}, indent=1) + "\n",
                           encoding="utf-8")  # fmt: skip


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
    parser.add_argument("--phases", action="store_true",
                        help="where the replay process's CPU goes (rules on)")  # fmt: skip
    parser.add_argument("--json", type=Path, help="write the medians and every round here")
    ns = parser.parse_args()
    if ns.rev is not None and len(ns.rev) < 2:
        parser.error("--rev: give two commits or more")
    if ns.rev is not None and ns.phases:
        parser.error("--phases runs this checkout's package only: no --rev with it")
    base = ["--engine-log", str(ns.log.resolve()), "--format", "jsonl", "--year", "2026"]
    if ns.phases:
        report_phases(ns, base)
        return
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
