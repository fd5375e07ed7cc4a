"""Template expansions: fresh text whenever the value, the labels or a ``query`` result
differ."""

from __future__ import annotations

import math
from typing import Any

import pytest

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
    expanded: list[str] = []
    real = rule_eval.expand_for_rule

    def counted(template: Any, data: Any, query: Any) -> str:
        text = real(template, data, query)
        if "query" in template.source:
            expanded.append(text)
        return text

    monkeypatch.setattr(rule_eval, "expand_for_rule", counted)
    seen = []
    for t, y in ((0.0, 0.0), (10.0, 0.0), (20.0, -0.0), (30.0, -0.0), (40.0, 7.0)):
        store.set("x", A, 1.0, t)
        store.set("y", (), y, t)
        manager.evaluate_all(t)
        (alert,) = manager.alerts()
        seen.append(dict(alert.annotations)["other"])
    assert seen == ["0", "0", "-0", "-0", "7"]
    assert expanded == ["0", "-0", "7"]  # -0 is another answer than 0: it prints otherwise


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
    expanded: list[str] = []
    real = rule_eval.expand_for_rule

    def counted(template: Any, data: Any, query: Any) -> str:
        text = real(template, data, query)
        expanded.append(text)
        return text

    monkeypatch.setattr(rule_eval, "expand_for_rule", counted)
    held = []
    for t, x, y in ((0.0, 1.0, 5.0), (10.0, 2.0, 7.0), (20.0, 3.0, 8.0)):
        store.set("x", A, x, t)
        store.set("y", (), y, t)
        manager.evaluate_all(t)
        (alert,) = manager.alerts()
        held.append(alert)
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
