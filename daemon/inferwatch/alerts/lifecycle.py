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
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import NamedTuple

from inferwatch.alerts.model import Alert, AlertState, AlertTransition, Annotations, RuleKey
from inferwatch.labels import Labels

RESOLVED_RETENTION_S = 900.0


class Candidate(NamedTuple):
    labels: Labels
    annotations: Annotations
    value: float


@dataclass(slots=True)
class _Entry:
    state: AlertState
    annotations: Annotations
    value: float
    active_at: float
    fired_at: float | None = None
    resolved_at: float | None = None
    keep_firing_since: float | None = None
    last_eval: float = 0.0


class LimitExceeded(Exception):
    """More pending + firing alerts than the group's ``limit``: the rule's alerts were cleared,
    and ``transitions`` resolves the ones that were firing before this evaluation."""

    def __init__(self, message: str, transitions: list[AlertTransition]) -> None:
        super().__init__(message)
        self.transitions = transitions


class RuleAlerts:
    """The alerts of one alerting rule, by label set."""

    def __init__(self, rule: RuleKey) -> None:
        self.rule = rule
        self._entries: dict[Labels, _Entry] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def snapshot(self, labels: Labels) -> Alert:
        e = self._entries[labels]
        return Alert(self.rule, labels, e.annotations, e.state, e.value, e.active_at, e.fired_at,
                     e.resolved_at, e.keep_firing_since, e.last_eval)  # fmt: skip

    def alerts(self) -> list[Alert]:
        """Every alert held, resolved ones included, sorted by labels."""
        return [self.snapshot(labels) for labels in sorted(self._entries)]

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
            entries[key].last_eval = ts
        return True

    def insert(self, alert: Alert) -> None:
        """Put back an alert (restored after a restart, or carried over a reload)."""
        self._entries[alert.labels] = _Entry(
            alert.state, alert.annotations, alert.value, alert.active_at, alert.fired_at,
            alert.resolved_at, alert.keep_firing_since, alert.last_eval,
        )  # fmt: skip

    def clear(self, ts: float, was_firing: Iterable[Labels] | None = None) -> list[AlertTransition]:
        """Drop everything (a removed rule, an exceeded limit); alerts that were firing
        (``was_firing``, by default those firing now) resolve."""
        firing = (
            set(was_firing)
            if was_firing is not None
            else {labels for labels, e in self._entries.items() if e.state is AlertState.FIRING}
        )
        out = []
        for labels, e in sorted(self._entries.items()):
            if labels in firing:
                e.state, e.resolved_at = AlertState.RESOLVED, ts
                out.append(AlertTransition(self.snapshot(labels), AlertState.FIRING, e.state, ts))
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
    ) -> list[AlertTransition]:
        """One evaluation's result; raises :class:`LimitExceeded` after clearing the rule."""
        before = {labels: e.state for labels, e in self._entries.items() if _active(e.state)}
        present: set[Labels] = set()
        for c in candidates:
            present.add(c.labels)
            e = self._entries.get(c.labels)
            if e is not None and _active(e.state):
                e.value, e.annotations, e.last_eval = c.value, c.annotations, ts
            else:
                self._entries[c.labels] = _Entry(
                    AlertState.PENDING, c.annotations, c.value, ts, last_eval=ts
                )
        counted = 0
        removed: dict[Labels, _Entry] = {}
        for labels, e in list(self._entries.items()):
            if labels not in present:
                keep = False
                if e.state is AlertState.FIRING and keep_firing_for_s > 0:
                    if e.keep_firing_since is None:
                        e.keep_firing_since = ts
                    keep = ts - e.keep_firing_since < keep_firing_for_s
                expired = e.resolved_at is not None and ts - e.resolved_at > resolved_retention_s
                if e.state is AlertState.PENDING or expired:
                    removed[labels] = self._entries.pop(labels)
                if _active(e.state) and not keep:
                    e.state = (
                        AlertState.INACTIVE
                        if e.state is AlertState.PENDING
                        else (AlertState.RESOLVED)
                    )
                    e.resolved_at = ts if e.state is AlertState.RESOLVED else None
                if not keep:
                    continue
            else:
                e.keep_firing_since = None
            counted += 1
            if e.state is AlertState.PENDING and ts - e.active_at >= for_s:
                e.state, e.fired_at = AlertState.FIRING, ts
        if limit > 0 and counted > limit:
            was_firing = [labels for labels, state in before.items() if state is AlertState.FIRING]
            gone = self.clear(ts, was_firing)
            raise LimitExceeded(f"exceeded limit of {limit} with {counted} alerts", gone)
        return self._transitions(before, removed, ts)

    def _transitions(
        self, before: dict[Labels, AlertState], removed: dict[Labels, _Entry], ts: float
    ) -> list[AlertTransition]:
        out: list[AlertTransition] = []
        for labels in sorted(set(before) | set(self._entries)):
            old = before.get(labels, AlertState.INACTIVE)
            if labels in self._entries:
                new, alert = self._entries[labels].state, self.snapshot(labels)
            elif labels in removed:
                e = removed[labels]
                new = AlertState.INACTIVE
                alert = Alert(self.rule, labels, e.annotations, new, e.value, e.active_at,
                              last_eval=e.last_eval)  # fmt: skip
            else:
                continue
            if new is not old and not (old is AlertState.INACTIVE and new is AlertState.RESOLVED):
                out.append(AlertTransition(alert, old, new, ts))
        return out


def _active(state: AlertState) -> bool:
    return state in (AlertState.PENDING, AlertState.FIRING)
