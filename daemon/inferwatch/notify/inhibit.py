"""Inhibition: a firing alert mutes lesser alerts about the same thing.

A GPU that fell off the bus also stops reporting utilisation and makes its engine crash; the
phone should show the cause, not the cascade. As in Alertmanager, a rule mutes every alert that
matches ``target_matchers`` while some *firing* alert matches ``source_matchers`` and has the
same values of the ``equal`` labels (absent = empty). An alert never inhibits itself, and an
alert matching both sides is not muted by another alert that also matches both, so a rule such as
"critical mutes warning for the same gpu" cannot make two alerts silence each other.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from inferwatch.alerts.model import Alert, AlertState
from inferwatch.config.alertmanager import InhibitRule
from inferwatch.labels import Labels, Matcher, label_value
from inferwatch.notify.matchers import matches, parse_list


@dataclass(frozen=True, slots=True)
class InhibitionRule:
    source: tuple[Matcher, ...]
    target: tuple[Matcher, ...]
    equal: tuple[str, ...]

    @classmethod
    def from_config(cls, cfg: InhibitRule) -> InhibitionRule:
        return cls(
            parse_list(cfg.source_matchers), parse_list(cfg.target_matchers), tuple(cfg.equal)
        )

    def inhibits(self, source: Labels, target: Labels) -> bool:
        """Would a firing alert with ``source`` labels mute one with ``target`` labels?"""
        if source == target or not matches(self.target, target):
            return False
        if not matches(self.source, source):
            return False
        if matches(self.source, target) and matches(self.target, source):
            return False  # both match both sides: neither mutes the other
        return all(label_value(source, n) == label_value(target, n) for n in self.equal)


class Inhibitor:
    """Knows the firing alerts (fed by :meth:`observe`) and answers :meth:`mutes`."""

    def __init__(self, rules: Iterable[InhibitionRule]) -> None:
        self.rules = tuple(rules)
        self._firing: dict[str, Labels] = {}

    @classmethod
    def from_config(cls, rules: Iterable[InhibitRule]) -> Inhibitor:
        return cls(InhibitionRule.from_config(r) for r in rules)

    def observe(self, alert: Alert) -> None:
        """Track an alert's latest state; only firing alerts can inhibit."""
        if alert.state is AlertState.FIRING:
            self._firing[alert.fingerprint] = alert.labels
        else:
            self._firing.pop(alert.fingerprint, None)

    def inhibited_by(self, labels: Labels) -> list[Labels]:
        """The firing alerts that mute ``labels`` (for the status page's "why was this quiet")."""
        return [
            src
            for src in self._firing.values()
            if any(rule.inhibits(src, labels) for rule in self.rules)
        ]

    def mutes(self, labels: Labels, now: float = 0.0) -> bool:
        """``now`` is unused: inhibition follows the alerts' states, not the clock."""
        del now
        return any(
            rule.inhibits(src, labels) for rule in self.rules for src in self._firing.values()
        )
