"""``RuleAlerts.hold``: the shortcut for an evaluation that repeats the last one, checked against
``apply`` itself: whenever it takes the shortcut, ``apply`` would have changed nothing but the
evaluation times, and it declines in every other case."""

from __future__ import annotations

import copy

from hypothesis import given, settings
from hypothesis import strategies as st

from inferwatch.alerts.lifecycle import Candidate, RuleAlerts
from inferwatch.alerts.model import RuleKey

KEY = RuleKey("r.yaml", "g", "A", "x > 0", ())
LABELS = [(("alertname", "A"), ("i", str(i))) for i in range(3)]
RETENTION = 60.0


def c(index: int) -> Candidate:
    return Candidate(LABELS[index], (("summary", f"i={index}"),), 1.0)


def test_a_firing_alert_found_again_is_held() -> None:
    r = RuleAlerts(KEY)
    r.apply([c(0)], 0.0, 0.0, 0.0)
    assert r.hold([LABELS[0]], 10.0, RETENTION)
    (alert,) = r.alerts()
    assert alert.last_eval == 10.0


def test_a_resolved_alert_within_retention_does_not_stop_the_hold() -> None:
    r = RuleAlerts(KEY)
    r.apply([c(0), c(1)], 0.0, 0.0, 0.0)
    r.apply([c(0)], 10.0, 0.0, 0.0)  # 1 resolves
    assert r.hold([LABELS[0]], 20.0, RETENTION)
    assert not r.hold([LABELS[0]], 10.0 + RETENTION + 1, RETENTION)  # 1 is to be dropped


def test_pending_kept_firing_missing_or_new_alerts_are_not_held() -> None:
    pending = RuleAlerts(KEY)
    pending.apply([c(0)], 0.0, 60.0, 0.0)
    assert not pending.hold([LABELS[0]], 10.0, RETENTION)
    kept = RuleAlerts(KEY)
    kept.apply([c(0)], 0.0, 0.0, 60.0)
    kept.apply([], 10.0, 0.0, 60.0)  # missing, kept firing
    assert not kept.hold([LABELS[0]], 20.0, RETENTION)
    firing = RuleAlerts(KEY)
    firing.apply([c(0)], 0.0, 0.0, 0.0)
    assert not firing.hold([], 10.0, RETENTION)
    assert not firing.hold([LABELS[0], LABELS[1]], 10.0, RETENTION)


steps = st.lists(
    st.tuples(st.frozensets(st.integers(0, 2)), st.floats(1.0, 40.0)), min_size=1, max_size=25
)


@settings(max_examples=300, deadline=None)
@given(
    steps=steps,
    for_s=st.sampled_from([0.0, 15.0]),
    keep=st.sampled_from([0.0, 25.0]),
)
def test_hold_is_apply_when_it_says_so(
    steps: list[tuple[frozenset[int], float]], for_s: float, keep: float
) -> None:
    rule, ts, held = RuleAlerts(KEY), 0.0, 0
    for present, gap in steps:
        ts += gap
        found = [c(i) for i in sorted(present)]
        reference = copy.deepcopy(rule)
        transitions = reference.apply(found, ts, for_s, keep, 0, RETENTION)
        if rule.hold([f.labels for f in found], ts, RETENTION):
            held += 1
            assert transitions == []
        else:
            rule.apply(found, ts, for_s, keep, 0, RETENTION)
        assert rule.alerts() == reference.alerts()
