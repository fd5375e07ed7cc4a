"""One alerting rule's alerts through one evaluation: Prometheus 2.42's state machine.

Given the candidates an evaluation produced (labels, annotations, value per output element), at
evaluation time ``ts`` (reference/promql.md §7.3):

- a known pending or firing alert gets the new value and annotations; anything else becomes a
  new pending alert with ``active_at = ts`` (a resolved alert that comes back starts ``for`` over);
- a known alert missing from the result: a firing one with ``keep_firing_for`` keeps firing
  while ``ts - keep_firing_since < keep_firing_for`` (value and annotations frozen), counted from
  the first evaluation that missed it; otherwise a pending alert is dropped and a firing one
  resolves, and is kept 15 minutes after that;
- a pending alert present for ``for`` becomes firing (``for: 0`` fires at once);
- over the group's ``limit``, every alert of the rule is cleared and the evaluation fails.

Each alert whose state changed yields one :class:`AlertTransition` (a new alert that fires at
once is one ``INACTIVE → FIRING``).

The alerts are held as :class:`~inferwatch.alerts.model.Alert` snapshots themselves, replaced
(never mutated) when something changes: a snapshot handed out stays what it was, and the
pending → firing step or an evaluation that only moves ``last_eval`` builds one new object with
the positional constructor (``dataclasses.replace`` costs several times as much, and this runs
for every held alert on every evaluation).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from dataclasses import replace
from typing import NamedTuple

from inferwatch.alerts.model import Alert, AlertState, AlertTransition, Annotations, RuleKey
from inferwatch.labels import Labels

RESOLVED_RETENTION_S = 900.0


class Candidate(NamedTuple):
    labels: Labels
    annotations: Annotations
    value: float


class LimitExceeded(Exception):
    """More pending + firing alerts than the group's ``limit``: the rule's alerts were cleared,
    and ``transitions`` resolves the ones that were firing before this evaluation."""

    def __init__(self, message: str, transitions: list[AlertTransition], found: int = 0) -> None:
        super().__init__(message)
        self.transitions = transitions
        self.found = found  # the alerts this evaluation would have held


class RuleAlerts:
    """The alerts of one alerting rule, by label set."""

    def __init__(self, rule: RuleKey) -> None:
        self.rule = rule
        self._entries: dict[Labels, Alert] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def snapshot(self, labels: Labels) -> Alert:
        return self._entries[labels]

    def alerts(self) -> list[Alert]:
        """Every alert held, resolved ones included, sorted by labels."""
        entries = self._entries
        return [entries[labels] for labels in sorted(entries)]

    def active(self) -> list[Alert]:
        """Pending and firing alerts (what ALERTS and ``/api/v1/alerts`` show)."""
        return [a for a in self.alerts() if a.is_active]

    def settled(self, ts: float, resolved_retention_s: float = RESOLVED_RETENTION_S) -> bool:
        """True when :meth:`apply` with no candidates at ``ts`` would change nothing: every
        alert held is resolved and kept for its retention still."""
        for e in self._entries.values():
            if e.state is not AlertState.RESOLVED:
                return False
            if e.resolved_at is None or ts - e.resolved_at > resolved_retention_s:
                return False
        return True

    def hold(
        self,
        labels: Collection[Labels],
        ts: float,
        resolved_retention_s: float = RESOLVED_RETENTION_S,
    ) -> bool:
        """The evaluation at ``ts`` found exactly the alerts ``labels`` again, with the same
        values and annotations as last time. When each of them is held and firing (not kept
        firing) and every other alert held is resolved and within its retention still, only
        their evaluation time moves, as in :meth:`apply`, and True is returned. Otherwise
        nothing is done: call :meth:`apply`."""
        entries = self._entries
        firing = 0
        for e in entries.values():
            if e.state is AlertState.FIRING:
                firing += 1
            elif e.state is not AlertState.RESOLVED or (
                e.resolved_at is None or ts - e.resolved_at > resolved_retention_s
            ):
                return False
        if firing != len(labels):
            return False
        for key in labels:
            found = entries.get(key)
            if found is None or found.state is not AlertState.FIRING:
                return False
            if found.keep_firing_since is not None:
                return False
        for key in labels:
            a = entries[key]
            entries[key] = Alert(a.rule, key, a.annotations, a.state, a.value, a.active_at,
                                 a.fired_at, a.resolved_at, a.keep_firing_since, ts)  # fmt: skip
        return True

    def insert(self, alert: Alert) -> None:
        """Put back an alert (restored after a restart, or carried over a reload)."""
        self._entries[alert.labels] = (
            alert if alert.rule == self.rule else replace(alert, rule=self.rule)
        )

    def clear(self, ts: float, was_firing: Iterable[Labels] | None = None) -> list[AlertTransition]:
        """Drop everything (a removed rule, an exceeded limit); alerts that were firing
        (``was_firing``, by default those firing now) resolve."""
        firing = (
            set(was_firing)
            if was_firing is not None
            else {labels for labels, e in self._entries.items() if e.state is AlertState.FIRING}
        )
        out = []
        for labels, a in sorted(self._entries.items()):
            if labels in firing:
                gone = _resolved(a, ts, a.keep_firing_since)
                out.append(AlertTransition(gone, AlertState.FIRING, AlertState.RESOLVED, ts))
        self._entries.clear()
        return out

    def apply(
        self,
        candidates: Iterable[Candidate],
        ts: float,
        for_s: float,
        keep_firing_for_s: float,
        limit: int = 0,
        resolved_retention_s: float = RESOLVED_RETENTION_S,
        scope: Callable[[Labels], bool] | None = None,
    ) -> list[AlertTransition]:
        """One evaluation's result; raises :class:`LimitExceeded` after clearing the rule.
        With ``scope``, the evaluation covered only the alerts whose labels it accepts (one
        partition, ``promql.partition``): the others are left as they are, and count towards
        the limit while active."""
        entries, rule = self._entries, self.rule
        before = {labels: a.state for labels, a in entries.items() if _active(a.state)}
        present: set[Labels] = set()
        for c in candidates:
            present.add(c.labels)
            a = entries.get(c.labels)
            if a is not None and _active(a.state):  # value and annotations move, keep ends
                entries[c.labels] = Alert(
                    rule, c.labels, c.annotations, a.state, c.value, a.active_at, a.fired_at,
                    a.resolved_at, None, ts,
                )  # fmt: skip
            else:
                entries[c.labels] = Alert(
                    rule, c.labels, c.annotations, AlertState.PENDING, c.value, ts, last_eval=ts
                )
        counted = 0
        removed: dict[Labels, Alert] = {}
        for labels, a in list(entries.items()):
            if labels in present:
                counted += 1
                if a.state is AlertState.PENDING and ts - a.active_at >= for_s:
                    entries[labels] = Alert(
                        rule, labels, a.annotations, AlertState.FIRING, a.value, a.active_at, ts,
                        a.resolved_at, a.keep_firing_since, a.last_eval,
                    )  # fmt: skip
                continue
            if scope is not None and not scope(labels):
                counted += _active(a.state)
                continue
            since, keep = a.keep_firing_since, False
            if a.state is AlertState.FIRING and keep_firing_for_s > 0:
                if since is None:
                    since = ts
                keep = ts - since < keep_firing_for_s
            expired = a.resolved_at is not None and ts - a.resolved_at > resolved_retention_s
            if a.state is AlertState.PENDING or expired:
                removed[labels] = entries.pop(labels)
            elif keep:  # firing still, for keep_firing_for
                counted += 1
                if a.keep_firing_since is None:
                    entries[labels] = Alert(
                        rule, labels, a.annotations, a.state, a.value, a.active_at, a.fired_at,
                        a.resolved_at, since, a.last_eval,
                    )  # fmt: skip
            elif a.state is AlertState.FIRING:
                entries[labels] = _resolved(a, ts, since)
        if limit > 0 and counted > limit:
            was_firing = [labels for labels, state in before.items() if state is AlertState.FIRING]
            gone = self.clear(ts, was_firing)
            raise LimitExceeded(f"exceeded limit of {limit} with {counted} alerts", gone, counted)
        return self._transitions(before, removed, ts)

    def _transitions(
        self, before: dict[Labels, AlertState], removed: dict[Labels, Alert], ts: float
    ) -> list[AlertTransition]:
        out: list[AlertTransition] = []
        for labels in sorted(set(before) | set(self._entries)):
            old = before.get(labels, AlertState.INACTIVE)
            if labels in self._entries:
                alert = self._entries[labels]
                new = alert.state
            elif labels in removed:
                a = removed[labels]
                new = AlertState.INACTIVE
                alert = Alert(self.rule, labels, a.annotations, new, a.value, a.active_at,
                              last_eval=a.last_eval)  # fmt: skip
            else:
                continue
            if new is not old and not (old is AlertState.INACTIVE and new is AlertState.RESOLVED):
                out.append(AlertTransition(alert, old, new, ts))
        return out


def _resolved(a: Alert, ts: float, keep_firing_since: float | None) -> Alert:
    """``a`` resolved at ``ts`` (``keep_firing_since`` as it stood when it stopped firing)."""
    return Alert(a.rule, a.labels, a.annotations, AlertState.RESOLVED, a.value, a.active_at,
                 a.fired_at, ts, keep_firing_since, a.last_eval)  # fmt: skip


def _active(state: AlertState) -> bool:
    return state in (AlertState.PENDING, AlertState.FIRING)
