"""A loaded rule set: groups of recording and alerting rules, compiled and ready to evaluate.

Everything here is frozen: a reload builds a new :class:`RuleSet` and the rule manager swaps it
in. Groups compare by identity (two groups may share a name across files, and a manager keys
its state by :class:`RuleKey`, not by the group object). A rule set also answers the questions
the daemon asks of it: how much history its ranges need (:meth:`RuleSet.lookback_s`,
:meth:`RuleSet.lookback_by_metric`) and which groups read a metric (:meth:`RuleGroup.reads`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import NamedTuple

from inferwatch.alerts.model import RuleKey
from inferwatch.gotemplate.templates import Template
from inferwatch.labels import NAME_LABEL, Labels
from inferwatch.promql.ast import LabelMatcher, MatrixSelector, VectorSelector, selectors
from inferwatch.promql.engine import Query
from inferwatch.promql.index import family_name

LOOKBACK_S = 300.0


@dataclass(frozen=True, slots=True)
class RecordingRule:
    """``labels`` keep empty values: an empty rule label removes that label from the output."""

    name: str
    query: Query
    labels: tuple[tuple[str, str], ...]
    key: RuleKey
    line: int = 0

    @property
    def expr(self) -> str:
        return self.query.text


@dataclass(frozen=True, slots=True)
class AlertingRule:
    """``labels`` are templates; ``raw_labels`` their text (Prometheus writes it into ALERTS)."""

    name: str
    query: Query
    for_s: float
    keep_firing_for_s: float
    labels: tuple[tuple[str, Template], ...]
    annotations: tuple[tuple[str, Template], ...]
    raw_labels: Labels
    key: RuleKey
    line: int = 0
    query_literals: tuple[Query, ...] = field(default=(), compare=False)

    @property
    def expr(self) -> str:
        return self.query.text


Rule = RecordingRule | AlertingRule


def _reach(query: Query, lookback_s: float) -> Iterator[tuple[VectorSelector, float]]:
    """Each selector of the query with how far back from the evaluation time it reads."""
    for sel in selectors(query.ast):
        if isinstance(sel, MatrixSelector):
            yield sel.selector, sel.range + max(sel.selector.offset, 0.0)
        else:
            yield sel, lookback_s + max(sel.offset, 0.0)


class NameTest(NamedTuple):
    """Which metric names one selector can read."""

    exact: str | None
    matchers: tuple[LabelMatcher, ...]

    def admits(self, metric: str) -> bool:
        if self.exact is not None:
            return metric == self.exact
        return all(m.matches(metric) for m in self.matchers)


def name_test(sel: VectorSelector) -> NameTest:
    """The metric names ``sel`` can read: its one name, or what its ``__name__`` matchers admit
    (any name, without them)."""
    return NameTest(family_name(sel), tuple(m for m in sel.matchers if m.name == NAME_LABEL))


@dataclass(frozen=True, slots=True, eq=False)
class RuleGroup:
    """One ``groups[]`` entry; ``interval_s`` is None when the file leaves it to the evaluator."""

    name: str
    file: str
    rules: tuple[Rule, ...]
    interval_s: float | None = None
    limit: int = 0
    query_offset_s: float = 0.0
    _reads: tuple[NameTest, ...] = field(default=(), repr=False)

    def __post_init__(self) -> None:
        tests: list[NameTest] = []
        for rule in self.rules:
            for query in _queries(rule):
                tests.extend(name_test(sel) for sel, _ in _reach(query, 0.0))
        object.__setattr__(self, "_reads", tuple(dict.fromkeys(tests)))

    def reads(self, metric: str) -> bool:
        """Whether any rule of the group (expression or literal template query) reads it."""
        return any(t.admits(metric) for t in self._reads)

    def writes(self) -> frozenset[str]:
        return frozenset(r.name for r in self.rules if isinstance(r, RecordingRule))

    def __repr__(self) -> str:
        return f"RuleGroup({self.file!r}, {self.name!r}, {len(self.rules)} rules)"


def _queries(rule: Rule) -> tuple[Query, ...]:
    if isinstance(rule, AlertingRule):
        return (rule.query, *rule.query_literals)
    return (rule.query,)


class RuleSet(NamedTuple):
    groups: tuple[RuleGroup, ...] = ()

    def rules(self) -> Iterator[tuple[RuleGroup, Rule]]:
        for group in self.groups:
            for rule in group.rules:
                yield group, rule

    def alerting_rules(self) -> Iterator[tuple[RuleGroup, AlertingRule]]:
        for group, rule in self.rules():
            if isinstance(rule, AlertingRule):
                yield group, rule

    def rule_count(self) -> int:
        return sum(len(g.rules) for g in self.groups)

    def groups_reading(self, metric: str) -> list[RuleGroup]:
        """Groups reading ``metric``, plus those reading what they record (transitively), in
        file order."""
        chosen: list[RuleGroup] = []
        names = {metric}
        changed = True
        while changed:
            changed = False
            for group in self.groups:
                if group not in chosen and any(group.reads(n) for n in names):
                    chosen.append(group)
                    names |= group.writes()
                    changed = True
        return [g for g in self.groups if g in chosen]

    def lookback_by_metric(self, lookback_s: float = LOOKBACK_S) -> dict[str, float]:
        """How much history each named metric needs; ``""`` stands for selectors without one."""
        need: dict[str, float] = {}
        for group, rule in self.rules():
            for query in _queries(rule):
                for sel, reach in _reach(query, lookback_s):
                    name = family_name(sel) or ""
                    need[name] = max(need.get(name, 0.0), reach + group.query_offset_s)
        return need

    def lookback_s(self, lookback_s: float = LOOKBACK_S) -> float:
        """The longest history any rule reads (at least the instant-selector lookback)."""
        return max([lookback_s, *self.lookback_by_metric(lookback_s).values()])
