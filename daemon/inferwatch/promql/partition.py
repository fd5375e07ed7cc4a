"""Which labels an expression never mixes: the partitions it can be evaluated in, one at a time.

An expression is *partitioned by* a set of labels K when every element of its result comes only
from input series with the same values of K (a missing label counts as ``""``) and carries those
values itself. Then evaluating it over just the series whose K-values are v (every selector
restricted so) gives exactly the elements of the whole result whose K-values are v. An event
that changed one series can then be judged within that series' partition: a new Xid on one GPU
re-reads that GPU's series, not the thousand others of the same metrics.

:func:`partition_labels` finds the labels that every operator of the expression keeps apart:

- a selector, a function that works series by series (``rate``, ``last_over_time``, ``round``,
  ``timestamp``, …) and unary minus keep every label apart; ``label_replace``/``label_join``
  drop their target label, ``histogram_quantile`` drops ``le``;
- a binary operator between vectors keeps apart only what both sides keep and its matching
  compares: ``on(l…)`` its labels, ``ignoring(l…)`` (or no modifier) every label but those;
  labels copied by ``group_left``/``group_right`` are dropped;
- an aggregation keeps its ``by`` labels, or every label but its ``without`` ones (and
  ``count_values``' new label); without grouping, nothing;
- anything that reads all series at once and drops their labels keeps nothing apart: a scalar
  computed from a selector (``scalar(sum(x))``), ``absent``, ``absent_over_time``, ``vector``,
  a date function without an argument, and any function not listed here.

``__name__`` is never a partition label (most operators drop it).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from inferwatch.labels import NAME_LABEL, Labels
from inferwatch.promql.absent import PER_INPUT
from inferwatch.promql.ast import (
    Aggregate,
    Binary,
    Call,
    Expr,
    MatrixSelector,
    NumberLiteral,
    StringLiteral,
    Unary,
    ValueType,
    VectorSelector,
    selectors,
    value_type,
)
from inferwatch.promql.dates import DATE_PARTS

# Functions whose every output element comes from one input series and keeps its labels: those
# with one output per input (histogram_quantile groups its buckets), and the date functions.
_PER_SERIES = (PER_INPUT - {"histogram_quantile"}) | frozenset(DATE_PARTS)

Pairs = tuple[tuple[str, str], ...]
"""One partition: each partition label with its value, sorted by label."""


class Part(NamedTuple):
    """A set of label names: ``names``, or with ``every`` all labels except ``names``."""

    names: frozenset[str]
    every: bool = False

    def meet(self, other: Part) -> Part:
        """The labels both keep apart."""
        if self.every and other.every:
            return Part(self.names | other.names, every=True)
        if self.every:
            return Part(other.names - self.names)
        if other.every:
            return Part(self.names - other.names)
        return Part(self.names & other.names)

    def without(self, names: Iterable[str]) -> Part:
        dropped = frozenset(names)
        if self.every:
            return Part(self.names | dropped, every=True)
        return Part(self.names - dropped)

    def pairs(self, labels: Labels) -> Pairs | None:
        """The partition of a series with ``labels``; None when this keeps nothing apart."""
        if self.every:
            found = tuple(p for p in labels if p[0] not in self.names and p[0] != NAME_LABEL)
            return found or None
        names = self.names - {NAME_LABEL}
        if not names:
            return None
        values = dict(labels)
        return tuple((name, values.get(name, "")) for name in sorted(names))


EVERY = Part(frozenset(), every=True)
NOTHING = Part(frozenset())


def partition_labels(expr: Expr) -> Part:
    """The labels ``expr`` keeps apart (see the module's text)."""
    if isinstance(expr, NumberLiteral | StringLiteral):
        return EVERY
    if isinstance(expr, VectorSelector | MatrixSelector):
        return EVERY
    if value_type(expr) is ValueType.SCALAR:
        # A scalar made of literals, time() and pi() is the same in every partition; one
        # that reads series sums up all of them.
        return EVERY if not selectors(expr) else NOTHING
    if isinstance(expr, Unary):
        return partition_labels(expr.expr)
    if isinstance(expr, Call):
        return _call(expr)
    if isinstance(expr, Aggregate):
        return _aggregate(expr)
    if isinstance(expr, Binary):
        return _binary(expr)
    return NOTHING


def within(pairs: Pairs, labels: Labels) -> bool:
    """Whether a series (or an alert) with ``labels`` is in the partition ``pairs``."""
    values = dict(labels)
    return all(values.get(name, "") == value for name, value in pairs)


def _meet_all(parts: Iterable[Part]) -> Part:
    out = EVERY
    for part in parts:
        out = out.meet(part)
    return out


def _call(node: Call) -> Part:
    args = node.args
    if node.func in _PER_SERIES and args:
        return _meet_all(partition_labels(a) for a in args)
    if node.func in ("label_replace", "label_join") and len(args) > 1:
        target = args[1]
        if not isinstance(target, StringLiteral):
            return NOTHING
        return _meet_all(partition_labels(a) for a in args).without((target.value,))
    if node.func == "histogram_quantile" and len(args) == 2:
        return _meet_all(partition_labels(a) for a in args).without(("le",))
    return NOTHING  # absent, absent_over_time, vector, hour() and what is not known here


def _aggregate(node: Aggregate) -> Part:
    inner = partition_labels(node.expr)
    if node.param is not None:
        inner = inner.meet(partition_labels(node.param))
    if node.op == "count_values":
        if not isinstance(node.param, StringLiteral):
            return NOTHING
        inner = inner.without((node.param.value,))
    if node.without:
        return inner.without(node.grouping)
    return inner.meet(Part(frozenset(node.grouping)))


def _binary(node: Binary) -> Part:
    both = partition_labels(node.lhs).meet(partition_labels(node.rhs))
    scalar_side = ValueType.SCALAR in (value_type(node.lhs), value_type(node.rhs))
    matching = node.matching
    if scalar_side or matching is None:
        return both  # element by element, or every label must match
    if matching.on:
        kept = both.meet(Part(frozenset(matching.labels)))
    else:
        kept = both.without(matching.labels)
    return kept.without(matching.include)


__all__ = ["EVERY", "NOTHING", "Pairs", "Part", "partition_labels", "within"]
