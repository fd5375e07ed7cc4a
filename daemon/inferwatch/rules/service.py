"""The rules engine inside the running daemon.

Loads the configured rule files (a bad file keeps the last good rule set and raises
``InferwatchRulesReloadFailed`` through ``inferwatch_rules_last_reload_success 0``), evaluates
groups on their interval from the daemon's 1-s tick **and** as soon as an event counter that a
group reads moves (a kernel fault reaches the alert pipeline within milliseconds), keeps alert
state across restarts, and hands every transition to the notification sink.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import Any

from inferwatch.alerts.model import Alert, AlertTransition
from inferwatch.clock import Clock
from inferwatch.errors import Problem
from inferwatch.event import Kind
from inferwatch.labels import Labels
from inferwatch.logsetup import get_logger
from inferwatch.promql.partition import Pairs
from inferwatch.rules.evaluator import RuleManager
from inferwatch.rules.loader import load_rule_files
from inferwatch.rules.rule_paths import expand_rule_paths
from inferwatch.rules.ruleset import RuleGroup, RuleSet
from inferwatch.store.tsdb import SeriesStore

log = get_logger(__name__)
RELOAD_OK = "inferwatch_rules_last_reload_success"
RELOAD_AT = "inferwatch_rules_last_reload_success_timestamp_seconds"
EVAL_SECONDS = "inferwatch_rules_evaluation_duration_seconds"
TRANSITIONS = "inferwatch_alert_transitions_total"
SETTLE_MAX_S = 0.1
"""After an event-driven evaluation delivered alerts, the next group reading the change waits
for their notifications to leave (``RuleService.settle``), at most this long."""
SEND_FIRST_S = 0.01
"""The same wait without a ``settle`` hook (a service without notifications)."""
LEGACY_STATE_FILE = "alerts.json"  # earlier versions kept alert state apart from the snapshot
Sink = Callable[[list[AlertTransition]], None]
Step = tuple[RuleGroup, dict[int, set[Pairs] | None] | None]
"""A group to evaluate for a change: its rules with the partitions changed (None: whole)."""
Settle = Callable[[float], Awaitable[None]]
"""Wait, at most the seconds given, until the notifications of delivered alerts have left."""


class RuleService:
    def __init__(
        self,
        store: SeriesStore,
        clock: Clock,
        patterns: Iterable[str],
        *,
        external_labels: dict[str, str],
        state_dir: Path | None,
        sink: Sink | None = None,
        external_url: str = "",
    ) -> None:
        self.store = store
        self.clock = clock
        self.patterns = list(patterns)
        self.state_dir = state_dir
        self.sink = sink
        self.settle: Settle | None = None
        self._steps: set[asyncio.Task[None]] = set()
        self.problems: list[Problem] = []
        self.files: list[str] = []
        self.manager = RuleManager(RuleSet(), store, external_labels, external_url=external_url)
        self._pending: set[tuple[str, Labels]] = set()
        self._scheduled = False
        self._loaded_from: tuple[tuple[str, int, int, int], ...] = ()
        store.describe(RELOAD_OK, Kind.GAUGE, "1 when the last load of the rule files succeeded.")
        store.describe(RELOAD_AT, Kind.GAUGE, "Unix time of the last successful rule load.")
        store.describe(EVAL_SECONDS, Kind.GAUGE, "Seconds the last rule evaluation took.")
        store.describe(TRANSITIONS, Kind.COUNTER, "Alert state changes, by alert and new state.")
        store.describe(
            "inferwatch_alerts", Kind.GAUGE, "Pending and firing alerts, as Prometheus's ALERTS."
        )
        store.describe(
            "inferwatch_alerts_for_state",
            Kind.GAUGE,
            "When each pending or firing alert became active, as ALERTS_FOR_STATE.",
        )

    # -- loading --------------------------------------------------------------------------------
    def on_disk(self) -> tuple[tuple[str, int, int, int], ...]:
        """What the rule files are now: each matched path with its inode, size and mtime (a
        change in a rule file's directory that touched no rule file changes none of these)."""
        paths, _ = expand_rule_paths(self.patterns)
        out = []
        for path in paths:
            try:
                st = path.stat()
            except OSError:
                continue
            out.append((str(path), st.st_ino, st.st_size, st.st_mtime_ns))
        return tuple(out)

    def changed_on_disk(self) -> bool:
        return self.on_disk() != self._loaded_from

    def load(self, patterns: Iterable[str] | None = None) -> bool:
        """(Re)load the rule files; on any problem keep the running rules and report."""
        if patterns is not None:
            self.patterns = list(patterns)
        self._loaded_from = self.on_disk()
        paths, problems = expand_rule_paths(self.patterns)
        rule_set, found = load_rule_files(paths)
        problems += found
        now = self.clock.time()
        self.problems = problems
        if problems:
            for p in problems:
                log.error("rule file problem; keeping the running rules", problem=str(p))
            self.store.set(RELOAD_OK, (), 0.0, now)
            return False
        self._deliver(self.manager.swap(rule_set, now))
        self.files = [str(p) for p in paths]
        self.store.set(RELOAD_OK, (), 1.0, now)
        self.store.set(RELOAD_AT, (), now, now)
        for name, need in rule_set.lookback_by_metric().items():
            self.store.require_retention(need + 600.0, name or None)
        log.info("rules loaded", files=len(paths), groups=len(rule_set.groups))
        return True

    # -- evaluation -----------------------------------------------------------------------------
    def tick(self) -> None:
        now = self.clock.time()
        self.store.set(RELOAD_OK, (), 0.0 if self.problems else 1.0, now)
        self._timed(lambda: self.manager.evaluate_due(now))

    def on_change(self, name: str, labels: Labels, _t: float) -> None:
        """A store listener: evaluate, at the next loop turn, the rules that can see the changed
        series (a new Xid on one GPU re-runs the Xid rules, not every rule reading Xids)."""
        if name == TRANSITIONS or not self.manager.rules_reading(name):
            return
        self._pending.add((name, labels))
        if not self._scheduled:
            self._scheduled = True
            try:
                asyncio.get_running_loop().call_soon(self._evaluate_pending)
            except RuntimeError:
                self._evaluate_pending()

    def _evaluate_pending(self) -> None:
        self._scheduled = False
        changed, self._pending = self._pending, set()
        plan: dict[RuleGroup, dict[int, set[Pairs] | None] | None] = {}
        for name, labels in changed:
            for group in self.manager.rules_reading(name):
                touched = self.manager.touched(group, name, labels)
                rules = plan.setdefault(group, {})
                if touched is None or rules is None:
                    plan[group] = None
                    continue
                for index in touched:  # with the partition it changed, where it has one
                    pairs = self.manager.partition(group, index, name, labels)
                    parts = rules.setdefault(index, set())
                    if pairs is None or parts is None:
                        rules[index] = None
                    else:
                        parts.add(pairs)
        self._evaluate_steps([(g, plan[g]) for g in self.manager.rule_set.groups if g in plan])

    def _evaluate_steps(self, steps: list[Step]) -> None:
        """Evaluate the first group of ``steps``, deliver its alerts, and leave the other
        groups to the next loop turn: the notification of a fault one group found goes out
        before a slower group reading the same series has run."""
        if not steps:
            return
        group, rules = steps[0]
        now = self.clock.time()
        delivered = 0
        if group not in self.manager.rule_set.groups:
            pass  # the rules were reloaded meanwhile: that group is gone (or changed)
        elif rules is None:
            delivered = self._timed(lambda: self.manager.evaluate_group(group, now))
        elif rules:
            within = {i: frozenset(p) for i, p in rules.items() if p is not None}
            only = frozenset(rules)
            delivered = self._timed(lambda: self.manager.evaluate_rules(group, now, only, within))
        if len(steps) > 1:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                self._evaluate_steps(steps[1:])
                return
            # A notification takes a few loop turns to reach the network; the next group's
            # evaluation would hold them back (a group over a thousand series: ~10 ms).
            if delivered and self.settle is not None:
                task = loop.create_task(self._after(self.settle(SETTLE_MAX_S), steps[1:]))
                self._steps.add(task)
                task.add_done_callback(self._steps.discard)
            else:
                loop.call_later(SEND_FIRST_S if delivered else 0.0, self._evaluate_steps, steps[1:])

    async def _after(self, sent: Awaitable[None], steps: list[Step]) -> None:
        try:
            await sent
        except Exception as exc:  # the wait is a courtesy to the notifier: the rules still run
            log.warning("waiting for notifications to leave failed", error=repr(exc))
        self._evaluate_steps(steps)

    def _timed(self, run: Callable[[], list[AlertTransition]]) -> int:
        """Run an evaluation and deliver its transitions; returns how many."""
        started = self.clock.monotonic()
        try:
            transitions = run()
        except Exception as exc:  # a broken rule never stops the daemon
            log.error("rule evaluation failed", error=repr(exc))
            return 0
        self.store.set(EVAL_SECONDS, (), self.clock.monotonic() - started)
        self._deliver(transitions)
        return len(transitions)

    def _deliver(self, transitions: list[AlertTransition]) -> None:
        for tr in transitions:
            labels = (("alertname", tr.alert.name), ("state", tr.to_state.value))
            self.store.inc(TRANSITIONS, labels, 1.0, tr.at)
            log.info(
                "alert " + tr.to_state.value,
                alertname=tr.alert.name,
                labels=dict(tr.alert.labels),
                summary=tr.alert.annotation("summary"),
            )
        if transitions and self.sink is not None:
            self.sink(transitions)

    # -- state ----------------------------------------------------------------------------------
    def state_text(self, at: float) -> str:
        """The pending and firing alerts as of ``at``, for the daemon's snapshot (taken in the
        same instant as the series and checkpoints, and written in the same file)."""
        return self.manager.to_json(at)

    def restore(self, text: str | None = None) -> int:
        """Put back the alerts of the snapshot (``text``); a snapshot from before alerts were kept
        in it (None) falls back to the separate file older versions wrote."""
        what = "snapshot"
        if text is None:
            if self.state_dir is None:
                return 0
            path = self.state_dir / LEGACY_STATE_FILE
            what = str(path)
            try:
                text = path.read_text(encoding="utf-8")
            except FileNotFoundError:
                return 0
            except OSError as exc:
                log.error("alert state unreadable; starting without it", path=what, error=str(exc))
                return 0
        try:
            return self.manager.from_json(text)
        except ValueError as exc:
            log.error("alert state unreadable; starting without it", path=what, error=str(exc))
            return 0

    # -- read side ------------------------------------------------------------------------------
    def alerts_doc(self) -> dict[str, Any]:
        return {"alerts": [alert_dict(a) for a in self.manager.alerts(include_resolved=True)]}

    def status(self) -> dict[str, Any]:
        return {
            "files": self.files,
            "problems": [str(p) for p in self.problems],
            "groups": len(self.manager.rule_set.groups),
        }


def alert_dict(alert: Alert) -> dict[str, Any]:
    return {
        "labels": dict(alert.labels),
        "annotations": dict(alert.annotations),
        "state": alert.state.value,
        "activeAt": alert.active_at,
        "firedAt": alert.fired_at,
        "resolvedAt": alert.resolved_at,
        "value": alert.value if alert.value == alert.value else None,
    }
