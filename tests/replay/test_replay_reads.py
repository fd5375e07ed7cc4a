"""A replay keeps samples only of the gauges its rules can read (``keep_unread=False``, what
``inferwatch replay`` does without ``--report``), and says exactly what it says keeping them all."""

from __future__ import annotations

import asyncio
import io
from datetime import UTC
from pathlib import Path

import pytest

from inferwatch.replay.output import Writer
from inferwatch.replay.runner import Replay, ReplayInputs
from inferwatch.replay.timeline import TimeContext
from inferwatch.rules.loader import load_rule_files, load_rule_text
from inferwatch.rules.ruleset import RuleSet

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "replay"
# Rules of a user's own reading gauges the shipped rules never read: one in its expression, one
# in a template's query (printf %q), one in a recording rule another rule reads.
OWN = """
groups:
  - name: own
    rules:
      - record: own:waiting
        expr: inferwatch_engine_requests_waiting
      - alert: QueueSeen
        expr: own:waiting >= 0 and on(engine) inferwatch_engine_requests_running > 0
        for: 30s
        annotations:
          summary: >-
            cache {{ with printf "inferwatch_engine_kv_cache_usage_ratio{engine=%q}"
            $labels.engine | query }}{{ . | first | value | printf "%.3f" }}{{ end }}
"""


def _rules(own: bool) -> RuleSet:
    rule_set, problems = load_rule_files(sorted((REPO / "rules").glob("*.yaml")))
    assert problems == []
    if not own:
        return rule_set
    groups, problems = load_rule_text(OWN, "own.yaml")
    assert problems == []
    return RuleSet((*rule_set.groups, *groups))


def _replay(log: Path, rules: RuleSet | None, *, keep_unread: bool) -> tuple[Replay, str]:
    out = io.StringIO()
    ctx = TimeContext(year=2026, tz=UTC)
    replay = Replay(
        ReplayInputs(engine_logs=[str(log)]),
        Writer(out, "jsonl", ctx.tz),
        ctx,
        rule_set=rules,
        keep_unread=keep_unread,
    )
    asyncio.run(replay.run())
    return replay, out.getvalue()


@pytest.mark.parametrize("own", [False, True])
@pytest.mark.parametrize("log", ["decode-collapse.log", "decode-normal.log"])
def test_the_same_output_keeping_only_what_rules_read(log: str, own: bool) -> None:
    rules = _rules(own)
    kept, full = _replay(FIXTURES / log, rules, keep_unread=True)
    muted, lean = _replay(FIXTURES / log, rules, keep_unread=False)
    assert lean == full
    assert muted.store.series_count() == kept.store.series_count()
    engine = {"engine": "engine", "dp_rank": ""}
    positions = muted.store.family("inferwatch_engine_spec_position_acceptance_ratio")
    assert positions and all(len(s) == 0 for s in positions)  # nothing reads them
    assert all(
        len(s) for s in kept.store.family("inferwatch_engine_spec_position_acceptance_ratio")
    )
    for name in (
        "inferwatch_engine_decode_tokens_per_second",
        "inferwatch_engine_requests_running",
    ):
        assert [len(s) for s in muted.store.family(name)] == [
            len(s) for s in kept.store.family(name)
        ], name
    waiting = muted.store.family("inferwatch_engine_requests_waiting")
    assert bool(own) == all(len(s) > 0 for s in waiting), engine  # read by QueueSeen's record
    if own and log == "decode-collapse.log":
        assert '"alertname": "QueueSeen"' in lean and "cache 0.0" in lean


def test_without_rules_nothing_is_read_and_the_events_are_the_same() -> None:
    kept, full = _replay(FIXTURES / "decode-collapse.log", None, keep_unread=True)
    muted, lean = _replay(FIXTURES / "decode-collapse.log", None, keep_unread=False)
    assert lean == full
    decode = muted.store.family("inferwatch_engine_decode_tokens_per_second")
    assert decode and all(len(s) == 0 for s in decode)
    assert all(len(s) for s in kept.store.family("inferwatch_engine_decode_tokens_per_second"))
