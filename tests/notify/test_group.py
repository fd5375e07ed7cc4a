from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from inferwatch.alerts.model import Alert, AlertState, RuleKey
from inferwatch.clock import FakeClock
from inferwatch.config.alertmanager import Route, TimeInterval
from inferwatch.labels import Labels, make_labels
from inferwatch.notify.group import Flush, Grouper, repeat_interval
from inferwatch.notify.route import RouteNode, build_tree
from inferwatch.notify.stages import mute_check
from inferwatch.notify.timeintervals import load_intervals

KEY = RuleKey("r.yaml", "g", "A", "x > 0", ())
T0 = 1_700_000_000.0


def alert(
    name: str,
    state: AlertState = AlertState.FIRING,
    at: float = T0,
    extra: dict[str, str] | None = None,
    **labels: str,
) -> Alert:
    return Alert(
        rule=KEY,
        labels=make_labels({"alertname": name, **labels, **(extra or {})}),
        annotations=(),
        state=state,
        value=1.0,
        active_at=at,
        fired_at=at,
        resolved_at=at if state is AlertState.RESOLVED else None,
    )


def resolved(a: Alert) -> Alert:
    return Alert(a.rule, a.labels, a.annotations, AlertState.RESOLVED, 0.0, a.active_at, a.fired_at)


def tree(**opts: Any) -> RouteNode:
    cfg = {
        "receiver": "phone",
        "group_by": ["alertname"],
        "group_wait": "30s",
        "group_interval": "5m",
        "repeat_interval": "1h",
        **opts,
    }
    return build_tree(Route.model_validate(cfg))


def names(flushes: list[Flush]) -> list[tuple[str, list[tuple[str, str]], bool]]:
    return [(f.key, [(a.label("gpu"), a.state.value) for a in f.alerts], f.repeat) for f in flushes]


class Run:
    """A grouper driven by a fake clock, ticking every 10 s as the daemon's scheduler would."""

    def __init__(self, root: RouteNode) -> None:
        self.clock = FakeClock(T0)
        self.grouper = Grouper(root)
        self.sent: list[tuple[float, Flush]] = []

    def add(self, a: Alert) -> None:
        self.grouper.observe(a, self.clock.time())

    def run(self, seconds: float, step: float = 10.0) -> list[Flush]:
        out: list[Flush] = []
        end = self.clock.time() + seconds
        while self.clock.time() < end:
            self.clock.advance(step)
            got = self.grouper.due(self.clock.time())
            out.extend(got)
            self.sent.extend((self.clock.time() - T0, f) for f in got)
        return out


def test_group_wait_batches_a_cascade() -> None:
    r = Run(tree())
    r.add(alert("Xid", gpu="0"))
    assert r.run(20) == []
    r.add(alert("Xid", gpu="1", at=T0 + 20))
    out = r.run(10)
    assert names(out) == [('{}:{alertname="Xid"}', [("0", "firing"), ("1", "firing")], False)]
    assert out[0].receiver == "phone" and out[0].group_labels == (("alertname", "Xid"),)
    assert r.grouper.next_due() == T0 + 30 + 300


def test_resolved_inside_group_wait_is_never_sent() -> None:
    r = Run(tree())
    a = alert("Xid", gpu="0")
    r.add(a)
    r.run(10)
    r.add(resolved(a))
    assert r.run(600) == []
    assert len(r.grouper) == 0


def test_group_interval_sends_only_changes_then_resolved_once() -> None:
    r = Run(tree())
    a, b = alert("Xid", gpu="0"), alert("Xid", gpu="1")
    r.add(a)
    assert len(r.run(30)) == 1
    assert r.run(300) == []  # unchanged: nothing at the first group_interval tick
    r.add(b)
    out = r.run(300)
    assert names(out)[0][1] == [("0", "firing"), ("1", "firing")]
    r.add(resolved(a))
    out = r.run(300)
    assert names(out)[0][1] == [("1", "firing"), ("0", "resolved")]
    assert out[0].firing == (b,) and [x.state for x in out[0].resolved] == [AlertState.RESOLVED]
    r.add(resolved(b))
    out = r.run(300)
    assert names(out)[0][1] == [("1", "resolved")]
    assert r.run(3600) == [] and len(r.grouper) == 0


def test_new_alert_after_group_emptied_waits_group_wait_again() -> None:
    r = Run(tree())
    a = alert("Xid", gpu="0")
    r.add(a)
    r.run(30)
    r.add(resolved(a))
    r.run(300)
    r.add(alert("Xid", gpu="2", at=r.clock.time()))
    assert r.run(20) == []
    assert len(r.run(10)) == 1


@pytest.mark.parametrize(
    ("labels", "repeat_at"),
    [
        ({}, [3630.0, 7230.0]),  # repeat_interval 1h after the first send at 30 s
        ({"repeat": "20m"}, [1230.0 + 1200 * i for i in range(6)]),
        ({"repeat": "7m"}, [630.0 + 600 * i for i in range(12)]),  # rounded up to 5m ticks
        ({"repeat": "never"}, []),
        ({"repeat": "bogus"}, [3630.0, 7230.0]),
    ],
)
def test_repeat(labels: dict[str, str], repeat_at: list[float]) -> None:
    r = Run(tree())
    r.add(alert("Xid", gpu="0", extra=labels))
    r.run(7300)
    assert [t for t, f in r.sent if f.repeat] == repeat_at
    assert [t for t, f in r.sent if not f.repeat] == [30.0]


def test_repeat_sends_only_alerts_due() -> None:
    r = Run(tree())
    r.add(alert("Xid", gpu="0"))
    r.add(alert("Xid", gpu="1", repeat="never"))
    r.run(3700)
    (repeat,) = [f for _, f in r.sent if f.repeat]
    assert [a.label("gpu") for a in repeat.alerts] == ["0"]


def test_send_resolved_false_drops_silently() -> None:
    r = Run(tree())
    quiet = alert("Dl", gpu="0", send_resolved="false")
    loud = alert("Dl", gpu="1")
    r.add(quiet)
    r.add(loud)
    r.run(30)
    r.add(resolved(quiet))
    assert r.run(600) == []  # not a change, so no message
    r.add(resolved(loud))
    out = r.run(300)
    assert names(out)[0][1] == [("1", "resolved")]
    assert repeat_interval(quiet, 5.0) == 5.0


def test_routes_and_group_by_all_make_separate_groups() -> None:
    root = tree(
        routes=[
            {
                "matchers": ['severity="critical"'],
                "group_wait": "0s",
                "group_by": ["..."],
                "continue": True,
            }
        ]
    )
    r = Run(root)
    r.add(alert("Xid", gpu="0", severity="critical"))
    r.add(alert("Xid", gpu="1", severity="critical"))
    r.add(alert("Xid", gpu="2", severity="info"))
    out = r.run(10)
    assert sorted(len(f.alerts) for f in out) == [1, 1]
    assert all(f.key.startswith('{}/0{severity="critical"}:{alertname="Xid",gpu=') for f in out)
    out = r.run(20)
    assert names(out) == [('{}:{alertname="Xid"}', [("2", "firing")], False)]


def test_pending_and_unknown_resolved_are_ignored() -> None:
    r = Run(tree())
    r.add(alert("Xid", AlertState.PENDING, gpu="0"))
    r.add(alert("Xid", AlertState.RESOLVED, gpu="1"))
    assert len(r.grouper) == 0 and r.grouper.next_due() is None
    r.add(alert("Xid", gpu="2"))
    r.add(alert("Xid", AlertState.RESOLVED, gpu="3"))
    out = r.run(30)
    assert names(out)[0][1] == [("2", "firing")]


def test_alert_that_fired_long_ago_skips_the_wait() -> None:
    r = Run(tree())
    r.add(alert("Xid", gpu="0", at=T0 - 600))  # restored after a restart
    assert len(r.run(10)) == 1


def test_muted_alerts_are_not_marked_sent() -> None:
    r = Run(tree())
    r.add(alert("Xid", gpu="0"))
    r.clock.advance(30)
    assert r.grouper.due(r.clock.time(), muted=lambda route, a: True) == []
    r.clock.advance(300)
    out = r.grouper.due(r.clock.time(), muted=lambda route, a: False)
    assert names(out)[0][1] == [("0", "firing")] and not out[0].repeat


def test_mute_check_with_quiet_hours_and_muters() -> None:
    night = TimeInterval.model_validate(
        {
            "name": "night",
            "time_intervals": [{"times": [{"start_time": "00:00", "end_time": "07:00"}]}],
        }
    )
    root = build_tree(
        Route.model_validate(
            {
                "receiver": "phone",
                "group_wait": "0s",
                "routes": [{"matchers": ["severity=info"], "mute_time_intervals": ["night"]}],
            }
        ),
        time_intervals=["night"],
    )
    silenced = make_labels({"alertname": "B", "severity": "critical"})

    class Silenced:
        def mutes(self, labels: Labels, now: float) -> bool:
            return labels == silenced

    intervals = load_intervals([night])
    grouper = Grouper(root)
    at_3 = datetime(2026, 11, 30, 3, tzinfo=UTC).timestamp()
    grouper.observe(alert("A", at=at_3, severity="info"), at_3)
    grouper.observe(alert("B", at=at_3, severity="critical"), at_3)
    grouper.observe(alert("C", at=at_3, severity="critical"), at_3)
    out = grouper.due(at_3, mute_check([Silenced()], intervals, at_3))
    assert [a.name for f in out for a in f.alerts] == ["C"]
    at_8 = at_3 + 5 * 3600
    out = grouper.due(at_8, mute_check([], intervals, at_8))
    assert sorted(a.name for f in out for a in f.alerts) == ["A", "B", "C"]
