"""Where a replay's CPU goes: the replay process against its scan workers.

    .venv/bin/python bench/replay_cpu.py [--rounds N] -- REPLAY ARGUMENTS

runs ``inferwatch replay REPLAY ARGUMENTS`` (output to /dev/null) N times, each in a fresh
interpreter that reports ``getrusage`` for itself (imports, rules, the records, the ticks, the
pool's result thread) and for its children (the scan workers) just before it exits, and prints
the medians with every round. The replay process applies records in file order, so its CPU is
the floor of the wall time however many cores scan; with two cores the run's total CPU / 2 is
the other floor. The timed figure itself is bench/engine_replay.sh's (the plain command).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

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
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("replay_args", nargs=argparse.REMAINDER, help="after --: replay's")
    ns = parser.parse_args()
    args = ns.replay_args[1:] if ns.replay_args[:1] == ["--"] else ns.replay_args
    rounds = [one(args) for _ in range(ns.rounds)]
    for label, k in (("wall", 0), ("replay process CPU", 1), ("scan workers CPU", 2)):
        each = "  ".join(f"{r[k]:.2f}" for r in rounds)
        print(f"{label:<20} {statistics.median(r[k] for r in rounds):6.2f} s   [{each}]")


if __name__ == "__main__":
    main()
