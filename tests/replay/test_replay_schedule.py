"""Replay's virtual schedule: a group with its own longer ``interval`` runs at that interval, as in
the daemon; records before the first timed line of a file take that line's time."""

from __future__ import annotations

import asyncio
import io
import json
import math
from datetime import UTC
from itertools import pairwise
from pathlib import Path

from inferwatch.replay.output import Writer
from inferwatch.replay.runner import Replay, ReplayInputs
from inferwatch.replay.timeline import TimeContext
from inferwatch.rules.loader import load_rule_text
from inferwatch.rules.ruleset import RuleSet

FIXTURE = Path(__file__).parents[1] / "fixtures" / "replay" / "decode-normal.log"
RULES = """
groups:
  - name: every-tick
    rules:
      - record: fast:steps
        expr: inferwatch_engine_steps_per_second
  - name: slow
    interval: 30s
    rules:
      - record: slow:steps
        expr: inferwatch_engine_steps_per_second
"""


def _replay(path: Path, rules: RuleSet | None = None) -> tuple[Replay, list[dict[str, object]]]:
    out = io.StringIO()
    ctx = TimeContext(year=2026, tz=UTC)
    replay = Replay(
        ReplayInputs(engine_logs=[str(path)]), Writer(out, "jsonl", ctx.tz), ctx, rule_set=rules
    )
    replay.store.require_retention(math.inf)
    asyncio.run(replay.run())
    return replay, [json.loads(line) for line in out.getvalue().splitlines()]


def test_a_group_with_a_longer_interval_runs_at_it() -> None:
    groups, problems = load_rule_text(RULES, "r.yaml")
    assert problems == []
    replay, _ = _replay(FIXTURE, RuleSet(tuple(groups)))
    fast = list(replay.store.family("fast:steps"))
    slow = list(replay.store.family("slow:steps"))
    assert len(fast) == 1 and len(slow) == 1
    fast_ts, slow_ts = list(fast[0].samples()[0]), list(slow[0].samples()[0])
    assert {b - a for a, b in pairwise(fast_ts)} == {10.0}
    assert {b - a for a, b in pairwise(slow_ts)} == {30.0}
    assert slow_ts[0] == fast_ts[0]


def test_records_before_the_first_timed_line_take_its_time(tmp_path: Path) -> None:
    path = tmp_path / "engine.log"
    access = 'INFO:     127.0.0.1:50086 - "POST /v1/completions HTTP/1.1" 500 Internal Server Error'
    path.write_text(access + "\n" + FIXTURE.read_text(encoding="utf-8"), encoding="utf-8")
    replay, docs = _replay(path)
    first_stats = next(d for d in docs if d.get("type") == "engine_stats")
    assert replay.result.first is not None
    assert replay.result.first == 1778256010.0  # 05-08 16:00:10, not the epoch
    assert first_stats["at"] == "2026-05-08T16:00:10+00:00"
