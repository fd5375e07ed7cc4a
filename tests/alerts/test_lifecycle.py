"""One rule's alerts through evaluations: Prometheus 2.42's states, as transitions."""

from __future__ import annotations

import pytest

from inferwatch.alerts.lifecycle import Candidate, LimitExceeded, RuleAlerts
from inferwatch.alerts.model import AlertState, RuleKey

KEY = RuleKey("r.yaml", "g", "A", "x > 0", ())
L1 = (("alertname", "A"), ("i", "1"))
L2 = (("alertname", "A"), ("i", "2"))
P, F, R, NONE = AlertState.PENDING, AlertState.FIRING, AlertState.RESOLVED, AlertState.INACTIVE


def c(labels: tuple[tuple[str, str], ...], value: float = 1.0, note: str = "") -> Candidate:
    return Candidate(labels, (("summary", note),), value)


def run(
    rule: RuleAlerts, present: list[Candidate], ts: float, for_s: float = 0.0, keep: float = 0.0
):
    return [(t.from_state, t.to_state) for t in rule.apply(present, ts, for_s, keep)]


def test_for_zero_fires_at_once_and_resolves() -> None:
    r = RuleAlerts(KEY)
    assert run(r, [c(L1)], 0.0) == [(NONE, F)]
    assert run(r, [c(L1)], 60.0) == []
    assert run(r, [], 120.0) == [(F, R)]
    (a,) = r.alerts()
    assert (a.state, a.active_at, a.fired_at, a.resolved_at) == (R, 0.0, 0.0, 120.0)


def test_for_counts_from_active_at() -> None:
    r = RuleAlerts(KEY)
    assert run(r, [c(L1)], 0.0, for_s=180) == [(NONE, P)]
    assert run(r, [c(L1)], 120.0, for_s=180) == []
    assert run(r, [c(L1)], 180.0, for_s=180) == [(P, F)]
    assert r.active()[0].fired_at == 180.0


def test_pending_that_goes_away_is_dropped() -> None:
    r = RuleAlerts(KEY)
    run(r, [c(L1)], 0.0, for_s=90)
    assert run(r, [], 60.0, for_s=90, keep=600) == [(P, NONE)]
    assert len(r) == 0


def test_keep_firing_for_counts_from_the_first_miss_with_frozen_annotations() -> None:
    r = RuleAlerts(KEY)
    run(r, [c(L1, 1, "one")], 0.0, keep=120)
    run(r, [c(L1, 2, "two")], 60.0, keep=120)
    assert run(r, [], 120.0, keep=120) == []
    assert run(r, [], 180.0, keep=120) == []
    (a,) = r.active()
    assert (a.value, a.annotation("summary"), a.keep_firing_since) == (2.0, "two", 120.0)
    assert run(r, [c(L1, 3, "three")], 240.0, keep=120) == []
    assert r.active()[0].keep_firing_since is None
    assert run(r, [], 300.0, keep=120) == []
    assert run(r, [], 360.0, keep=120) == []
    assert run(r, [], 420.0, keep=120) == [(F, R)]


def test_a_resolved_alert_that_comes_back_starts_over() -> None:
    r = RuleAlerts(KEY)
    run(r, [c(L1)], 0.0, for_s=60)
    run(r, [c(L1)], 60.0, for_s=60)
    assert run(r, [], 120.0, for_s=60) == [(F, R)]
    assert run(r, [c(L1)], 180.0, for_s=60) == [(NONE, P)]
    assert r.active()[0].active_at == 180.0


def test_value_and_annotations_follow_while_active() -> None:
    r = RuleAlerts(KEY)
    run(r, [c(L1, 1, "a")], 0.0)
    run(r, [c(L1, 5, "b")], 60.0)
    (a,) = r.active()
    assert (a.value, a.annotation("summary"), a.last_eval) == (5.0, "b", 60.0)


def test_limit() -> None:
    r = RuleAlerts(KEY)
    r.apply([c(L1)], 0.0, 0.0, 0.0, limit=1)
    with pytest.raises(LimitExceeded, match="exceeded limit of 1 with 2 alerts") as exc:
        r.apply([c(L1), c(L2)], 60.0, 0.0, 0.0, limit=1)
    assert [(t.from_state, t.to_state, t.alert.labels) for t in exc.value.transitions] == [
        (F, R, L1)
    ]
    assert len(r) == 0


def test_several_alerts_sorted_transitions() -> None:
    r = RuleAlerts(KEY)
    out = r.apply([c(L2), c(L1)], 0.0, 0.0, 0.0)
    assert [t.alert.labels for t in out] == [L1, L2]
    assert all(t.fired and not t.resolved for t in out)


def test_a_snapshot_handed_out_never_changes_afterwards() -> None:
    """Alerts are held as Alert snapshots and replaced, never mutated (hold, apply, clear)."""
    r = RuleAlerts(KEY)
    run(r, [c(L1, 1.0)], 0.0)
    (first,) = r.alerts()
    r.hold([L1], 10.0)
    run(r, [c(L1, 2.0, "later")], 20.0)
    (now,) = r.alerts()
    assert (first.value, first.last_eval, first.annotations) == (1.0, 0.0, (("summary", ""),))
    assert (now.value, now.last_eval, now.annotations) == (2.0, 20.0, (("summary", "later"),))
    r.clear(30.0)
    assert first.state is F and now.state is F


def test_insert_takes_the_rule_it_is_put_into() -> None:
    moved = RuleAlerts(RuleKey("old.yaml", "g", "A", "x > 0", ()))
    run(moved, [c(L1)], 0.0)
    r = RuleAlerts(KEY)
    r.insert(moved.snapshot(L1))
    assert r.snapshot(L1).rule == KEY


def test_a_scoped_evaluation_moves_only_the_alerts_in_its_scope() -> None:
    """An evaluation within one partition (rules.partial): an alert of the scope missing from
    it resolves, one out of the scope stays as it was and still counts towards the limit."""
    r = RuleAlerts(KEY)
    assert run(r, [c(L1), c(L2)], 0.0) == [(NONE, F), (NONE, F)]
    only_1 = lambda labels: ("i", "1") in labels  # noqa: E731
    out = r.apply([], 60.0, 0.0, 0.0, scope=lambda labels: ("i", "2") in labels)
    assert [(t.alert.labels, t.to_state) for t in out] == [(L2, R)]
    (a1,) = [a for a in r.alerts() if a.labels == L1]
    assert (a1.state, a1.last_eval) == (F, 0.0)  # untouched, its last evaluation unchanged
    L3 = (("alertname", "A"), ("i", "3"))
    with pytest.raises(LimitExceeded):  # L1 firing out of scope + L3 new in scope: 2 > 1
        r.apply([c(L3)], 120.0, 0.0, 0.0, limit=1, scope=lambda labels: ("i", "3") in labels)
    r = RuleAlerts(KEY)
    run(r, [c(L1)], 0.0)
    assert r.apply([c(L1, 5.0)], 60.0, 0.0, 0.0, limit=1, scope=only_1) == []
    assert r.active()[0].value == 5.0
