"""Template expansions: fresh text whenever the value, the labels or a ``query`` result
differ."""

from __future__ import annotations

import math

from inferwatch.clock import FakeClock
from inferwatch.promql.types import EvalOptions
from inferwatch.rules.evaluator import RuleManager
from inferwatch.rules.loader import load_rule_text
from inferwatch.rules.ruleset import RuleSet
from inferwatch.store.tsdb import SeriesStore

A = (("job", "a"),)
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
    groups, problems = load_rule_text(RULES, "r.yaml")
    assert problems == []
    store = SeriesStore(FakeClock(0.0), retention_s=math.inf)
    manager = RuleManager(RuleSet(tuple(groups)), store, {"host": "h1"}, options=eval_options)
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
