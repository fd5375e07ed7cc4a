"""Alert state across a restart: JSON, and Prometheus's for-restore rules."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from inferwatch.alerts.model import Alert, AlertState, RuleKey
from inferwatch.alerts.state import RestorePolicy, StateError, decode, encode, restored
from inferwatch.clock import FakeClock
from inferwatch.rules.evaluator import RuleManager
from inferwatch.rules.loader import load_rule_text
from inferwatch.rules.ruleset import RuleSet
from inferwatch.store.tsdb import SeriesStore

KEY = RuleKey("r.yaml", "g", "A", "x > 0", (("severity", "page"),))
LABELS = (("alertname", "A"), ("severity", "page"))
POLICY = RestorePolicy()


def alert(state: AlertState, active_at: float, last_eval: float, **kw: object) -> Alert:
    return Alert(KEY, LABELS, (("summary", "s"),), state, 1.0, active_at, last_eval=last_eval, **kw)  # type: ignore[arg-type]


def test_round_trip_with_odd_values() -> None:
    alerts = [
        alert(AlertState.FIRING, 10.0, 70.0, fired_at=40.0),
        replace(alert(AlertState.PENDING, 60.0, 70.0), value=math.inf),
        replace(
            alert(AlertState.PENDING, 60.0, 70.0), value=math.nan, labels=(("alertname", "B"),)
        ),
        alert(AlertState.RESOLVED, 0.0, 70.0, resolved_at=70.0),
    ]
    saved_at, back = decode(encode(alerts, 75.0))
    assert saved_at == 75.0
    assert back[:2] == alerts[:2]
    assert math.isnan(back[2].value) and len(back) == 3


@pytest.mark.parametrize(
    "text",
    [
        "",
        "[]",
        '{"version": 2, "alerts": []}',
        '{"version": 1, "saved_at": 0, "alerts": [1]}',
        '{"version": 1, "saved_at": 0, "alerts": [{"rule": {}, "state": "weird"}]}',
        '{"version": 1, "saved_at": "x", "alerts": []}',
    ],
)
def test_corrupt_state_is_a_state_error(text: str) -> None:
    with pytest.raises(StateError):
        decode(text)


def test_restore_rules() -> None:
    # Down longer than the outage tolerance: nothing comes back.
    assert (
        restored(alert(AlertState.PENDING, 0.0, 100.0), 100.0 + 3601, 1200.0, 0.0, POLICY) is None
    )
    # A `for` shorter than the grace period is not restored (it starts over).
    assert restored(alert(AlertState.PENDING, 0.0, 100.0), 200.0, 300.0, 0.0, POLICY) is None
    # Plenty of `for` left: the down time is added to active_at.
    back = restored(alert(AlertState.PENDING, 0.0, 100.0), 400.0, 3600.0, 0.0, POLICY)
    assert back is not None and back.active_at == 300.0
    # Little `for` left: it fires one grace period after the restart.
    back = restored(alert(AlertState.PENDING, 0.0, 1000.0), 1100.0, 1200.0, 0.0, POLICY)
    assert back is not None and back.active_at == 1100.0 + 600.0 - 1200.0
    # Its `for` had elapsed at shutdown: active_at stays.
    back = restored(alert(AlertState.PENDING, 0.0, 1300.0), 1400.0, 1200.0, 0.0, POLICY)
    assert back is not None and back.active_at == 0.0
    # A firing alert stays firing with its times, whatever its `for`.
    firing = alert(AlertState.FIRING, 0.0, 100.0, fired_at=0.0)
    assert restored(firing, 200.0, 0.0, 0.0, POLICY) == firing


RULES = """
groups:
  - name: g
    rules:
      - alert: Now
        expr: x > 0
        labels: {severity: critical}
      - alert: Slow
        expr: x > 0
        for: 30m
"""


def manager() -> tuple[RuleManager, SeriesStore]:
    groups, problems = load_rule_text(RULES, "r.yaml")
    assert problems == []
    s = SeriesStore(FakeClock(0.0), retention_s=math.inf)
    return RuleManager(RuleSet(tuple(groups)), s), s


def test_restart_neither_loses_a_timer_nor_reannounces() -> None:
    m, s = manager()
    s.set("x", (), 1.0, 0.0)
    s.set("x", (), 1.0, 600.0)
    m.evaluate_all(0.0)
    m.evaluate_all(600.0)
    text = m.to_json(saved_at=600.0)

    m2, s2 = manager()
    assert m2.from_json(text) == 2
    s2.set("x", (), 1.0, 900.0)
    out = m2.evaluate_all(900.0)
    assert out == []  # Now keeps firing silently, Slow keeps pending
    by_name = {a.name: a for a in m2.active_alerts()}
    assert by_name["Now"].state is AlertState.FIRING and by_name["Now"].fired_at == 0.0
    assert by_name["Slow"].state is AlertState.PENDING and by_name["Slow"].active_at == 300.0
    s2.set("x", (), 1.0, 2100.0)
    assert [(t.alert.name, t.to_state) for t in m2.evaluate_all(2100.0)] == [
        ("Slow", AlertState.FIRING)
    ]


def test_restored_firing_alert_resolves_if_gone() -> None:
    m, s = manager()
    s.set("x", (), 1.0, 0.0)
    m.evaluate_all(0.0)
    m2, s2 = manager()
    m2.from_json(m.to_json(saved_at=0.0))
    s2.set("x", (), 0.0, 60.0)
    out = m2.evaluate_all(60.0)
    assert [(t.alert.name, t.from_state, t.to_state) for t in out] == [
        ("Now", AlertState.FIRING, AlertState.RESOLVED),
        ("Slow", AlertState.PENDING, AlertState.INACTIVE),
    ]


def test_after_a_long_outage_alerts_start_over() -> None:
    m, s = manager()
    s.set("x", (), 1.0, 0.0)
    m.evaluate_all(0.0)
    m2, s2 = manager()
    m2.from_json(m.to_json(saved_at=0.0))
    s2.set("x", (), 1.0, 7200.0)
    out = m2.evaluate_all(7200.0)
    assert [(t.alert.name, t.from_state, t.to_state) for t in out] == [
        ("Now", AlertState.INACTIVE, AlertState.FIRING),
        ("Slow", AlertState.INACTIVE, AlertState.PENDING),
    ]
