"""What an evaluation reports besides transitions: rule errors and each rule's health.

Prometheus keeps a rule's last error and health for its API and carries on with the other rules;
promtool prints the errors of an evaluation step (``rule: NAME, time: 0s, err: …``). These are
the records the manager hands out for both.
"""

from __future__ import annotations

from typing import NamedTuple

from inferwatch.alerts.model import AlertTransition


class RuleError(NamedTuple):
    file: str
    group: str
    rule: str
    at: float
    message: str


class GroupOutcome(NamedTuple):
    transitions: tuple[AlertTransition, ...]
    errors: tuple[RuleError, ...]


class RuleStatus(NamedTuple):
    """A rule's health for the API: ``unknown`` until evaluated, then ``ok`` or ``err``."""

    file: str
    group: str
    rule: str
    kind: str
    health: str
    last_error: str
    last_eval: float | None
