"""The alert snapshot's helpers."""

from __future__ import annotations

from inferwatch.alerts.model import Alert, AlertState, AlertTransition, RuleKey

KEY = RuleKey("r.yaml", "g", "A", "x > 0", ())


def test_alert_helpers() -> None:
    a = Alert(
        KEY,
        (("alertname", "A"), ("gpu", "0")),
        (("summary", "s"),),
        AlertState.FIRING,
        2.0,
        10.0,
        20.0,
    )
    assert (a.name, a.label("gpu"), a.label("nope"), a.annotation("summary")) == ("A", "0", "", "s")
    assert a.is_active and len(a.fingerprint) == 16
    same = Alert(KEY, a.labels, (), AlertState.PENDING, 1.0, 0.0)
    assert same.fingerprint == a.fingerprint
    d = a.to_dict()
    assert d["labels"] == {"alertname": "A", "gpu": "0"} and d["state"] == "firing"
    t = AlertTransition(a, AlertState.PENDING, AlertState.FIRING, 20.0)
    assert t.fired and not t.resolved
