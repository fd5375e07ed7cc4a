"""Aggregation groups: which alerts leave together, and when.

An alert routed to a node joins the group named by its ``group_by`` label values. A new group
waits ``group_wait`` so that a cascade leaves as one message and an alert that resolves inside
the wait is never sent; afterwards the group is looked at every ``group_interval`` and sends only
if a new alert fires or a sent one resolves; an unchanged firing group is re-sent after
``repeat_interval``. Resolved alerts go out once and are dropped; an empty group disappears, so
the next alert starts a fresh wait. Per-alert labels (DESIGN.md §4) adjust this: ``repeat`` is
``never`` or a duration overriding ``repeat_interval``, ``send_resolved="false"`` drops the alert
silently on resolve. Time is passed in (``due(now)``): nothing here sleeps or reads a clock.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from inferwatch.alerts.model import Alert, AlertState
from inferwatch.config.types import parse_duration
from inferwatch.labels import Labels
from inferwatch.notify.route import RouteNode

Muted = Callable[[RouteNode, Alert], bool]
"""Whether an alert is muted on a route at flush time (silence, inhibition, quiet hours)."""

REPEAT_LABEL = "repeat"
SEND_RESOLVED_LABEL = "send_resolved"


def _labels_text(labels: Labels) -> str:
    return "{" + ",".join(f'{k}="{v}"' for k, v in labels) + "}"


def repeat_interval(alert: Alert, default: float) -> float:
    """The alert's own ``repeat`` label if valid (``never`` = infinity), else the route's."""
    value = alert.label(REPEAT_LABEL)
    if value == "never":
        return math.inf
    if value:
        try:
            return parse_duration(value) or default
        except ValueError:
            return default  # a rule's typo must not silence its reminders
    return default


def sends_resolved(alert: Alert) -> bool:
    return alert.label(SEND_RESOLVED_LABEL).lower() != "false"


@dataclass(frozen=True, slots=True)
class Flush:
    """One message's worth of a group: its firing alerts and the resolved ones to announce."""

    route: RouteNode
    key: str
    group_labels: Labels
    alerts: tuple[Alert, ...]
    repeat: bool
    at: float

    @property
    def receiver(self) -> str:
        return self.route.receiver

    @property
    def firing(self) -> tuple[Alert, ...]:
        return tuple(a for a in self.alerts if a.state is AlertState.FIRING)

    @property
    def resolved(self) -> tuple[Alert, ...]:
        return tuple(a for a in self.alerts if a.state is AlertState.RESOLVED)


@dataclass(slots=True)
class Group:
    route: RouteNode
    key: str
    labels: Labels
    next_at: float
    alerts: dict[str, Alert] = field(default_factory=dict)
    sent_at: dict[str, float] = field(default_factory=dict)  # firing alerts announced, and when
    flushed: bool = False

    def flush(self, now: float, muted: Muted | None) -> Flush | None:
        shown = [a for a in self.alerts.values() if muted is None or not muted(self.route, a)]
        firing = [a for a in shown if a.state is AlertState.FIRING]
        resolved = [
            a for a in shown if a.state is AlertState.RESOLVED and a.fingerprint in self.sent_at
        ]
        announce = [a for a in resolved if sends_resolved(a)]
        changed = bool(announce) or any(a.fingerprint not in self.sent_at for a in firing)
        gone = [fp for fp, a in self.alerts.items() if a.state is AlertState.RESOLVED]
        for fp in gone:  # resolved alerts leave the group once looked at, announced or not
            del self.alerts[fp]
            self.sent_at.pop(fp, None)
        self.flushed = True
        self.next_at = now + self.route.opts.group_interval
        if changed:
            out, repeat = [*firing, *announce], False
        else:
            default = self.route.opts.repeat_interval
            sent = self.sent_at
            out = [a for a in firing if now - sent[a.fingerprint] >= repeat_interval(a, default)]
            repeat = True
        if not out:
            return None
        for a in out:
            if a.state is AlertState.FIRING:
                self.sent_at[a.fingerprint] = now
        alerts = tuple(sorted(out, key=lambda a: (a.state is AlertState.RESOLVED, a.labels)))
        return Flush(self.route, self.key, self.labels, alerts, repeat, now)


class Grouper:
    """All aggregation groups of one routing tree."""

    def __init__(self, tree: RouteNode) -> None:
        self.tree = tree
        self._groups: dict[str, Group] = {}

    def observe(self, alert: Alert, now: float) -> None:
        """Take an alert's latest snapshot; only firing and resolved alerts matter here."""
        if alert.state not in (AlertState.FIRING, AlertState.RESOLVED):
            return
        for node in self.tree.match(alert.labels):
            labels = node.opts.group_labels(alert.labels)
            key = f"{node.key}:{_labels_text(labels)}"
            group = self._groups.get(key)
            if group is None:
                if alert.state is AlertState.RESOLVED:
                    continue  # never announced firing: nothing to resolve
                group = Group(node, key, labels, now + node.opts.group_wait)
                self._groups[key] = group
            if alert.state is AlertState.RESOLVED and alert.fingerprint not in group.alerts:
                continue
            group.alerts[alert.fingerprint] = alert
            fired = alert.fired_at if alert.fired_at is not None else now
            if not group.flushed and fired + node.opts.group_wait <= now:
                group.next_at = min(group.next_at, now)  # waited long enough already (restart)

    def due(self, now: float, muted: Muted | None = None) -> list[Flush]:
        """Flush every group whose timer has come; drop groups left empty.

        A muted alert is left out as if absent: it is not marked sent, so it is announced at the
        first tick after the mute ends (as Alertmanager's log never records muted alerts)."""
        out: list[Flush] = []
        for key, group in list(self._groups.items()):
            if group.next_at > now:
                continue
            flush = group.flush(now, muted)
            if flush is not None:
                out.append(flush)
            if not group.alerts:
                del self._groups[key]
        return out

    def groups(self) -> list[Group]:
        """The live groups, for saving (:mod:`inferwatch.notify.group_state`)."""
        return list(self._groups.values())

    def adopt(self, group: Group) -> None:
        """Put back a saved group (after a restart); its route must be in this tree."""
        self._groups[group.key] = group

    def next_due(self) -> float | None:
        """When :meth:`due` next has work, for the scheduler; None without groups."""
        return min((g.next_at for g in self._groups.values()), default=None)

    def __len__(self) -> int:
        return len(self._groups)
