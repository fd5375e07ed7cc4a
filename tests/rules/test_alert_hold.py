"""The rule manager's shortcut for a firing rule whose result repeats exactly (rules/alert_hold):
alerts, transitions and the ALERTS series are those of the full evaluation, step by step."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inferwatch.alerts.model import AlertTransition
from inferwatch.clock import FakeClock
from inferwatch.promql.types import DEFAULT_OPTIONS, PLAIN_OPTIONS, EvalOptions
from inferwatch.rules import evaluator
from inferwatch.rules.evaluator import RuleManager
from inferwatch.rules.loader import load_rule_text
from inferwatch.rules.ruleset import RuleSet
from inferwatch.store.tsdb import SeriesStore

RULES = """
groups:
  - name: g
    rules:
      - alert: Up
        expr: x > 0
        for: 20s
        keep_firing_for: 30s
        labels:
          severity: "{{ if gt $value 2.0 }}high{{ else }}low{{ end }}"
        annotations:
          summary: "{{ $labels.job }} at {{ $value }}"
      - alert: Now
        expr: x > 1
"""

JOBS = [(("job", "a"),), (("job", "b"),)]


def manager(options: EvalOptions = DEFAULT_OPTIONS) -> tuple[RuleManager, SeriesStore]:
    groups, problems = load_rule_text(RULES, "r.yaml")
    assert problems == []
    store = SeriesStore(FakeClock(0.0), retention_s=math.inf)
    return RuleManager(RuleSet(tuple(groups)), store, {"host": "h1"}, options=options), store


def run(
    values: list[tuple[float | None, float | None]], options: EvalOptions = DEFAULT_OPTIONS
) -> tuple[list[object], list[object]]:
    """Evaluate every 10 s; x per job (None: no sample). Alerts and transitions at each step,
    and every ALERTS sample written."""
    rules, store = manager(options)
    states: list[object] = []
    for step, per_job in enumerate(values):
        t = 10.0 * step
        for labels, x in zip(JOBS, per_job, strict=True):
            if x is not None:
                store.set("x", labels, x, t)
        moves: list[AlertTransition] = rules.evaluate_all(t)
        states.append((rules.alerts(include_resolved=True), moves))
    written = sorted(
        (s.name, s.labels, list(s.ts), [repr(v) for v in s.vs])
        for s in store.all_series()
        if s.name.startswith("inferwatch_alerts")
    )
    return states, written


values = st.lists(
    st.tuples(st.sampled_from([None, 0.0, 1.5, 3.0, -0.0]), st.sampled_from([None, 0.0, 1.5, 3.0])),
    min_size=1,
    max_size=30,
)


@settings(max_examples=150, deadline=None)
@given(values=values)
def test_the_shortcut_changes_nothing(values: list[tuple[float | None, float | None]]) -> None:
    fast = run(values)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(evaluator, "pure", lambda _rule: False)
        full = run(values)
    assert fast == full
    assert run(values, PLAIN_OPTIONS) == fast  # no speed machinery at all


def test_a_firing_rule_takes_the_shortcut(monkeypatch: pytest.MonkeyPatch) -> None:
    rules, store = manager()
    calls: list[int] = []
    real = evaluator.ev.candidates
    monkeypatch.setattr(
        evaluator.ev, "candidates", lambda *a, **k: calls.append(1) or real(*a, **k)
    )
    for step in range(10):
        store.set("x", JOBS[0], 3.0, 10.0 * step)
        rules.evaluate_all(10.0 * step)
    (up,) = [a for a in rules.alerts() if a.name == "Up"]
    assert (up.state.value, up.last_eval) == ("firing", 90.0)
    # Up: pending at 0 and 10, firing from 20 (3 full runs); Now: firing at 0 (1 full run).
    assert len(calls) == 4
