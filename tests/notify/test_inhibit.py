from __future__ import annotations

import pytest

from inferwatch.alerts.model import Alert, AlertState, RuleKey
from inferwatch.config.alertmanager import InhibitRule
from inferwatch.labels import make_labels
from inferwatch.notify.inhibit import Inhibitor
from inferwatch.notify.stages import Muter

KEY = RuleKey("r.yaml", "g", "A", "x > 0", ())


def alert(state: AlertState = AlertState.FIRING, **labels: str) -> Alert:
    return of(labels, state)


def of(labels: dict[str, str], state: AlertState = AlertState.FIRING) -> Alert:
    return Alert(KEY, make_labels(labels), (), state, 1.0, 0.0)


BUS = InhibitRule(
    source_matchers=['alertname="GpuFallenOffBus"'],
    target_matchers=['severity=~"warning|info"'],
    equal=["gpu"],
)
CRIT_OVER_WARN = InhibitRule(
    source_matchers=['severity=~"critical|warning"'],
    target_matchers=['severity=~"critical|warning"'],
    equal=["gpu"],
)


@pytest.mark.parametrize(
    ("firing", "target", "muted"),
    [
        ({"alertname": "GpuFallenOffBus", "gpu": "1"}, {"severity": "warning", "gpu": "1"}, True),
        ({"alertname": "GpuFallenOffBus", "gpu": "1"}, {"severity": "warning", "gpu": "2"}, False),
        ({"alertname": "GpuFallenOffBus", "gpu": "1"}, {"severity": "critical", "gpu": "1"}, False),
        ({"alertname": "GpuFallenOffBus"}, {"severity": "info"}, True),  # missing == empty
        ({"alertname": "GpuFallenOffBus"}, {"severity": "info", "gpu": "0"}, False),
        ({"alertname": "Other", "gpu": "1"}, {"severity": "info", "gpu": "1"}, False),
    ],
)
def test_bus_rule(firing: dict[str, str], target: dict[str, str], muted: bool) -> None:
    inh = Inhibitor.from_config([BUS])
    inh.observe(of(firing))
    assert inh.mutes(make_labels(target)) is muted


def test_only_firing_sources_inhibit() -> None:
    inh = Inhibitor.from_config([BUS])
    src = alert(AlertState.PENDING, alertname="GpuFallenOffBus", gpu="1")
    target = make_labels({"severity": "info", "gpu": "1"})
    inh.observe(src)
    assert not inh.mutes(target)
    inh.observe(alert(alertname="GpuFallenOffBus", gpu="1"))
    assert inh.mutes(target)
    assert inh.inhibited_by(target) == [make_labels({"alertname": "GpuFallenOffBus", "gpu": "1"})]
    inh.observe(alert(AlertState.RESOLVED, alertname="GpuFallenOffBus", gpu="1"))
    assert not inh.mutes(target) and inh.inhibited_by(target) == []


def test_not_self_inhibiting_and_two_sided_matches_do_not_mute_each_other() -> None:
    inh = Inhibitor.from_config([CRIT_OVER_WARN])
    a = alert(alertname="A", severity="critical", gpu="1")
    b = alert(alertname="B", severity="warning", gpu="1")
    inh.observe(a)
    assert not inh.mutes(a.labels)  # alone: never mutes itself
    inh.observe(b)
    assert not inh.mutes(a.labels) and not inh.mutes(b.labels)
    # an alert matching only the target side is still muted
    inh2 = Inhibitor.from_config(
        [InhibitRule(source_matchers=["severity=critical"], target_matchers=["gpu=~.+"])]
    )
    inh2.observe(a)
    assert not inh2.mutes(a.labels)  # a matches both sides, the only source is itself
    assert inh2.mutes(make_labels({"gpu": "3", "severity": "info"}))


def test_is_a_muter() -> None:
    muter: Muter = Inhibitor([])
    assert not muter.mutes(make_labels({"a": "b"}), 0.0)
