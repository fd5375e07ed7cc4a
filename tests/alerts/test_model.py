"""The alert snapshot's helpers."""

from __future__ import annotations

from inferwatch.alerts.model import Alert, AlertState, AlertTransition, LazyAnnotations, RuleKey

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


def test_lazy_annotations_are_made_once_and_read_like_the_pairs() -> None:
    made: list[int] = []

    def make() -> tuple[tuple[str, str], ...]:
        made.append(1)
        return (("summary", "s"), ("zh", "中"))

    notes = LazyAnnotations(make)
    a = Alert(KEY, (("alertname", "A"),), notes, AlertState.PENDING, 1.0, 0.0)
    assert made == []  # built and held, not yet read
    assert a.annotation("zh") == "中" and a.to_dict()["annotations"] == {"summary": "s", "zh": "中"}
    assert len(notes) == 2 and list(notes) == [("summary", "s"), ("zh", "中")]
    assert notes == (("summary", "s"), ("zh", "中")) and notes != (("summary", "s"),)
    assert notes == LazyAnnotations(make) and hash(notes) == hash((("summary", "s"), ("zh", "中")))
    assert a == Alert(KEY, a.labels, make(), AlertState.PENDING, 1.0, 0.0)
    assert len(made) == 3  # once for ``a``, once for the other lazy one, once by hand
