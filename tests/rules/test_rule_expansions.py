"""Template expansions: fresh text whenever what a template reads differs: the value (when it
can read it), the labels or a ``query`` result."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pytest

from inferwatch.alerts.model import Alert
from inferwatch.clock import FakeClock
from inferwatch.promql.engine import Query, Value
from inferwatch.promql.types import DEFAULT_OPTIONS, EvalOptions
from inferwatch.rules import rule_eval
from inferwatch.rules.evaluator import RuleManager
from inferwatch.rules.loader import load_rule_text
from inferwatch.rules.ruleset import RuleSet
from inferwatch.store.tsdb import SeriesStore

A = (("job", "a"),)


def _manager(
    text: str, external: dict[str, str] | None = None, options: EvalOptions | None = None
) -> tuple[SeriesStore, RuleManager]:
    """An empty store and a manager of the rule file ``text`` (which must load cleanly)."""
    groups, problems = load_rule_text(text, "r.yaml")
    assert problems == []
    store = SeriesStore(FakeClock(0.0), retention_s=math.inf)
    chosen = DEFAULT_OPTIONS if options is None else options
    return store, RuleManager(RuleSet(tuple(groups)), store, external or {}, options=chosen)


def _expansions(
    monkeypatch: pytest.MonkeyPatch, tag: Callable[[Any], str | None] = lambda template: ""
) -> list[str]:
    """The text of every template expansion from now on, after ``tag(template)`` (None: not
    listed)."""
    expanded: list[str] = []
    real = rule_eval.expand_for_rule

    def counted(template: Any, data: Any, query: Any) -> str:
        text = real(template, data, query)
        prefix = tag(template)
        if prefix is not None:
            expanded.append(prefix + text)
        return text

    monkeypatch.setattr(rule_eval, "expand_for_rule", counted)
    return expanded


def _alert_after_each(
    store: SeriesStore, manager: RuleManager, steps: tuple[tuple[float, float, float], ...]
) -> list[Alert]:
    """The one alert held after each evaluation at ``t`` of ``(t, x, y)``, with ``x{job="a"}``
    and ``y`` written at ``t`` first."""
    held = []
    for t, x, y in steps:
        store.set("x", A, x, t)
        store.set("y", (), y, t)
        manager.evaluate_all(t)
        (alert,) = manager.alerts()
        held.append(alert)
    return held


RULES = """
groups:
  - name: g
    rules:
      - alert: Big
        expr: x > 0
        annotations:
          value: "{{ $value }} {{ $labels.job }}"
          fixed: "job {{ $labels.job }} on {{ $externalLabels.host }}"
          other: '{{ with query "y" }}{{ . | first | value }}{{ end }}'
"""


def test_annotations_follow_value_and_query_results(eval_options: EvalOptions) -> None:
    store, manager = _manager(RULES, {"host": "h1"}, options=eval_options)
    seen = []
    for t, x, y in ((0.0, 1.0, 5.0), (10.0, 1.0, 6.0), (20.0, 2.0, 6.0), (30.0, -0.0, 6.0)):
        store.set("x", A, x, t)
        store.set("y", (), y, t)
        manager.evaluate_all(t)
        (alert,) = manager.alerts() or [None]
        seen.append(dict(alert.annotations) if alert is not None else None)
    assert seen[0] == {"value": "1 a", "fixed": "job a on h1", "other": "5"}
    assert seen[1] == {"value": "1 a", "fixed": "job a on h1", "other": "6"}
    assert seen[2] == {"value": "2 a", "fixed": "job a on h1", "other": "6"}
    assert seen[3] is None  # -0 > 0 is false: the alert is gone


TWICE = """
groups:
  - name: g
    rules:
      - alert: Big
        expr: x > 0
        annotations:
          summary: '{{ with query "y" }}{{ . | first | value }}{{ end }} {{ $labels.job }}'
          summary_zh: '{{ with query "y" }}{{ . | first | value }}{{ end }}：{{ $labels.job }}'
"""


def test_a_query_asked_by_two_annotations_runs_once_per_evaluation(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store, manager = _manager(TWICE)
    asked: list[float] = []
    real = rule_eval.evaluate

    def counted(query: Query, *args: Any, **kwargs: Any) -> Value:
        if query.text == "y":
            asked.append(args[1])
        return real(query, *args, **kwargs)

    monkeypatch.setattr(rule_eval, "evaluate", counted)
    for t, y in ((0.0, 5.0), (10.0, 6.0)):
        store.set("x", A, 1.0, t)
        store.set("y", (), y, t)
        manager.evaluate_all(t)
        (alert,) = manager.alerts()
        assert dict(alert.annotations) == {"summary": f"{y:g} a", "summary_zh": f"{y:g}：a"}
    assert asked == [0.0, 10.0]  # once per evaluation, not once per annotation


def test_a_query_template_is_expanded_again_only_for_another_answer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store, manager = _manager(RULES, {"host": "h1"})
    expanded = _expansions(monkeypatch, lambda t: "" if "query" in t.source else None)
    steps = ((0.0, 1.0, 0.0), (10.0, 1.0, 0.0), (20.0, 1.0, -0.0), (30.0, 1.0, -0.0))
    held = _alert_after_each(store, manager, (*steps, (40.0, 1.0, 7.0)))
    assert [dict(a.annotations)["other"] for a in held] == ["0", "0", "-0", "-0", "7"]
    assert expanded == ["0", "-0", "7"]  # -0 is another answer than 0: it prints otherwise


MOVING = """
groups:
  - name: g
    rules:
      - alert: Rising
        expr: x > 0
        annotations:
          asked: '{{ $labels.job }}: {{ with query "y" }}{{ . | first | value }}{{ end }}'
          told: '{{ $value }} {{ with query "y" }}{{ . | first | value }}{{ end }}'
"""


def test_a_query_template_that_cannot_read_the_value_is_kept_while_only_the_value_moves(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Its questions are asked again at every evaluation; its text is made again only for
    another answer. A template reading ``$value`` is made again for each new value."""
    store, manager = _manager(MOVING)
    expanded = _expansions(monkeypatch, lambda t: "told=" if "$value" in t.source else "asked=")
    held = _alert_after_each(store, manager, ((0.0, 1.0, 5.0), (10.0, 2.0, 5.0), (20.0, 3.0, 6.0)))
    assert [dict(a.annotations) for a in held] == [
        {"asked": "a: 5", "told": "1 5"},
        {"asked": "a: 5", "told": "2 5"},
        {"asked": "a: 6", "told": "3 6"},
    ]
    asked = [e for e in expanded if e.startswith("asked=")]
    assert asked == ["asked=a: 5", "asked=a: 6"]
    assert len([e for e in expanded if e.startswith("told=")]) == 3


PENDING = """
groups:
  - name: g
    rules:
      - alert: Big
        expr: x > 0
        for: 5m
        annotations:
          value: "{{ $value }} {{ $labels.job }}"
          other: '{{ with query "y" }}{{ . | first | value }}{{ end }}'
"""


def test_annotations_without_query_wait_until_read_and_keep_their_evaluation(
    monkeypatch: pytest.MonkeyPatch, eval_options: EvalOptions
) -> None:
    """A pending alert's summary with ``$value`` changes at every evaluation and is rarely
    read: it is expanded when read, from what its evaluation saw. A template that queries is
    expanded at its evaluation (the store moves on)."""
    store, manager = _manager(PENDING, options=eval_options)
    expanded = _expansions(monkeypatch)
    held = _alert_after_each(store, manager, ((0.0, 1.0, 5.0), (10.0, 2.0, 7.0), (20.0, 3.0, 8.0)))
    assert expanded == ["5", "7", "8"]  # the queries, each at its evaluation; no summary yet
    assert dict(held[0].annotations) == {"value": "1 a", "other": "5"}
    assert dict(held[2].annotations) == {"value": "3 a", "other": "8"}
    assert expanded == ["5", "7", "8", "1 a", "3 a"]  # read: expanded once each
    assert held[0].annotations == (("other", "5"), ("value", "1 a"))
    assert hash(held[0].annotations) == hash((("other", "5"), ("value", "1 a")))
    assert dict(held[1].annotations) == {"value": "2 a", "other": "7"}
    assert dict(held[0].annotations) == {"value": "1 a", "other": "5"}
    assert expanded[5:] == ["2 a"]  # the first one again: kept, not expanded twice


def test_a_failure_of_a_late_expansion_becomes_its_text_not_the_reader_s(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store, manager = _manager(PENDING)
    real = rule_eval.expand_for_rule

    def failing(template: Any, data: Any, query: Any) -> str:
        if "query" not in template.source:
            raise RuntimeError("boom")
        return real(template, data, query)

    monkeypatch.setattr(rule_eval, "expand_for_rule", failing)
    store.set("x", A, 1.0, 0.0)
    store.set("y", (), 5.0, 0.0)
    manager.evaluate_all(0.0)
    (alert,) = manager.alerts()
    assert dict(alert.annotations) == {
        "value": "<error expanding template: __alert_Big: RuntimeError: boom>",
        "other": "5",
    }
