"""Limits seen from the rules: a rule's default alert limit, and a recording rule whose new
series the store refuses (it stops growing and says so)."""

from __future__ import annotations

from inferwatch.alerts.model import AlertState
from inferwatch.clock import FakeClock
from inferwatch.promql.types import EvalOptions
from inferwatch.rules.evaluator import RuleManager
from inferwatch.rules.loader import load_rule_text
from inferwatch.rules.ruleset import RuleSet
from inferwatch.store.limits import DROPPED, SeriesLimits
from inferwatch.store.tsdb import SeriesStore


def rules(text: str) -> RuleSet:
    groups, problems = load_rule_text(text, "r.yaml")
    assert problems == []
    return RuleSet(tuple(groups))


def dropped(store: SeriesStore, reason: str) -> float:
    s = store.get(DROPPED, (("reason", reason),))
    last = s.last() if s is not None else None
    return last[1] if last else 0.0


MANY = """
groups:
  - name: g
    rules:
      - alert: Many
        expr: x > 0
  - name: own
    limit: 5
    rules:
      - alert: Own
        expr: x > 0
"""


def test_the_default_alert_limit_applies_where_a_group_sets_none(eval_options: EvalOptions) -> None:
    store = SeriesStore(FakeClock(0.0))
    store.set("x", (("n", "0"),), 1.0, 0.0)
    m = RuleManager(rules(MANY), store, options=eval_options, alert_limit=2)
    assert [t.to_state for t in m.evaluate_all(0.0)] == [AlertState.FIRING] * 2
    for n in range(1, 4):
        store.set("x", (("n", str(n)),), 1.0, 10.0)
    found = m.evaluate_group_outcome(m.rule_set.groups[0], 10.0)
    assert [e.message for e in found.errors] == ["exceeded limit of 2 with 4 alerts"]
    assert [t.to_state for t in found.transitions] == [AlertState.RESOLVED]
    assert dropped(store, "alerts_per_rule") == 4
    own = m.evaluate_group_outcome(m.rule_set.groups[1], 10.0)  # its own limit: 5
    assert own.errors == () and len(m.firing("Own")) == 4


FEEDING = """
groups:
  - name: runaway
    rules:
      - record: feed
        expr: >-
          label_replace(feed, "g", "${1}a", "g", "(.*)")
          or label_replace(feed, "g", "${1}b", "g", "(.*)")
          or vector(1)
"""


def test_a_self_feeding_recording_rule_stops_at_the_limit(eval_options: EvalOptions) -> None:
    store = SeriesStore(FakeClock(0.0), limits=SeriesLimits(series_per_metric=50))
    m = RuleManager(rules(FEEDING), store, options=eval_options)
    errors = []
    for step in range(12):  # 2**12 series wanted at the end
        outcome = m.evaluate_group_outcome(m.rule_set.groups[0], float(step))
        errors.extend(e.message for e in outcome.errors)
    assert len(list(store.family("feed"))) == 50
    assert errors[-1].endswith("new series dropped: a series limit is reached "
                               "(limits in `inferwatch status`)")  # fmt: skip
    assert dropped(store, "series_per_metric") > 50
    [status] = m.rule_status()
    assert status.health == "err"
