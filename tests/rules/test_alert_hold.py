"""The rule manager's shortcut for a firing rule whose result repeats exactly (rules/alert_hold):
alerts, transitions and the ALERTS series are those of the full evaluation, step by step, for
templates with and without ``query`` (whose answers change under a held result)."""

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
      - alert: Asks
        expr: x > 1
        for: 10s
        labels:
          tier: '{{ with query "y > 1" }}hot{{ else }}cold{{ end }}'
        annotations:
          summary: '{{ with query "y" }}{{ . | first | value }}{{ else }}none{{ end }}'
      - alert: AsksBadly
        expr: x > 1
        annotations:
          bad: '{{ with query "sum(" }}{{ . }}{{ end }}{{ with query "y" }}{{ . }}{{ end }}'
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
    """Evaluate every 10 s; x per job (None: no sample), and y, which only the templates of
    ``Asks`` read: the second job's x when the step is odd. Alerts with their annotations and
    transitions at each step, and every ALERTS sample written."""
    rules, store = manager(options)
    states: list[object] = []
    for step, per_job in enumerate(values):
        t = 10.0 * step
        for labels, x in zip(JOBS, per_job, strict=True):
            if x is not None:
                store.set("x", labels, x, t)
        if step % 2 and per_job[1] is not None:
            store.set("y", (), per_job[1], t)
        moves: list[AlertTransition] = rules.evaluate_all(t)
        alerts = rules.alerts(include_resolved=True)
        states.append(([(a, dict(a.annotations)) for a in alerts], moves))
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
        patch.setattr(evaluator, "Held", lambda *_args: None)  # nothing held: the full path
        full = run(values)
    assert fast == full
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(evaluator, "pure", lambda _rule: False)  # every rule's questions kept
        assert run(values) == fast
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
    # Up: pending at 0 and 10, firing from 20 (3 full runs); Now: firing at 0 (1 full run);
    # Asks: pending at 0, firing from 10 (2 full runs; then it asks its questions again at every
    # step, and gets the same answers); AsksBadly: a question fails at every step, so nothing of
    # it is held (10 full runs).
    assert len(calls) == 16


def test_a_new_answer_ends_the_shortcut(monkeypatch: pytest.MonkeyPatch) -> None:
    """A held rule whose template's question gets a different answer is evaluated in full, and
    its alert shows the new answer; while the answer stays, the shortcut holds again."""
    rules, store = manager()
    calls: list[int] = []
    real = evaluator.ev.candidates
    monkeypatch.setattr(
        evaluator.ev, "candidates",
        lambda rule, *a, **k: (calls.append(1) if rule.name == "Asks" else None)
        or real(rule, *a, **k),
    )  # fmt: skip
    summaries = []
    for step in range(8):
        t = 10.0 * step
        store.set("x", JOBS[0], 3.0, t)
        if step in (3, 5):
            store.set("y", (), float(step), t)
        rules.evaluate_all(t)
        (asks,) = [a for a in rules.alerts() if a.name == "Asks"]
        summaries.append(dict(asks.annotations)["summary"])
    # y appears at 30 s and changes at 50 s; it stays within the lookback at 60 and 70 s.
    assert summaries == ["none", "none", "none", "3", "3", "5", "5", "5"]
    # Full at 0 (pending) and 10 (firing); at 30 the new answer also turns the tier label hot:
    # another alert, pending, which fires at 40; at 50 the summary changes.
    assert len(calls) == 5
