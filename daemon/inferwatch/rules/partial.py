"""An alerting rule judged within the partitions an event touched (``promql.partition``).

When an event counter moves, the daemon evaluates the rules that can see that series at once,
between their scheduled evaluations. A rule whose expression keeps some labels apart (every
shipped GPU rule keeps each GPU's ``pci_bus_id`` apart) needs to read only the series of the
changed series' partition: with a thousand GPUs' Xid series in the store, a new Xid on one GPU
costs what one GPU's series cost. The result is exactly the part of a whole evaluation that falls
in those partitions, and only the rule's alerts in them move (``RuleAlerts.apply(scope=…)``);
the rule's next scheduled evaluation judges everything again, as always.

:func:`partition_of` says whether a rule can be judged so: its expression's partition labels,
less the labels its own ``labels:`` set (an alert's label must be the series' own). The
evaluation falls back to the whole rule (returns None) on a result element outside the
partitions (never, if the analysis is right) and on an error within them, which the whole
evaluation then meets and records. A whole evaluation can also fail where the partition does
not (duplicate series in another partition): the rule's next scheduled evaluation meets that
failure and marks the rule failed, and the partition's alerts stand, as alerts stand across a
failed evaluation in Prometheus.
"""

from __future__ import annotations

from collections.abc import Callable, Collection

from inferwatch.alerts.lifecycle import Candidate
from inferwatch.alerts.model import ALERTNAME
from inferwatch.labels import Labels
from inferwatch.promql.context import Ctx
from inferwatch.promql.engine import EvalOptions, Vector
from inferwatch.promql.index import SelectionCache, Within
from inferwatch.promql.partition import Pairs, Part, partition_labels, within
from inferwatch.rules import rule_eval as ev
from inferwatch.rules.ruleset import AlertingRule
from inferwatch.store.tsdb import SeriesStore

MAX_PARTS = 4
"""More partitions than this changed at once (a burst over many GPUs): judge the whole rule."""


def partition_of(rule: AlertingRule) -> Part:
    """The labels an alert of ``rule`` shares with the series it came from, kept apart."""
    return partition_labels(rule.query.ast).without((ALERTNAME, *(n for n, _ in rule.labels)))


def candidates_within(
    rule: AlertingRule,
    parts: Collection[Pairs],
    options: EvalOptions,
    read: Callable[[Pairs], Ctx],
    expand: Callable[[Vector], list[Candidate]],
) -> list[Candidate] | None:
    """The rule's candidates within ``parts``: its query run with ``read(pairs)`` (an
    evaluation's Ctx cut to the partition, :func:`reading`) and the result expanded as a whole
    evaluation's would be (``expand``); None: judge the whole rule."""
    out: list[Candidate] = []
    seen: set[Labels] = set()
    run = rule.query.runner(options)
    for pairs in parts:
        try:
            found = expand(ev.as_vector(run(read(pairs))))
        except Exception:  # the whole evaluation meets it again, and records it
            return None
        for c in found:
            if not within(pairs, c.labels):
                return None
            if c.labels not in seen:  # partitions of different label sets may overlap
                seen.add(c.labels)
                out.append(c)
    return out


def reading(
    store: SeriesStore, ts: float, options: EvalOptions, cache: SelectionCache
) -> Callable[[Pairs], Ctx]:
    """An evaluation at ``ts`` whose selectors see one partition's series only."""
    return lambda pairs: Ctx(store, ts, options, Within(cache, pairs))


def scope(parts: Collection[Pairs]) -> Callable[[Labels], bool]:
    """Whether an alert's labels fall in one of ``parts``."""
    return lambda labels: any(within(pairs, labels) for pairs in parts)


__all__ = ["MAX_PARTS", "candidates_within", "partition_of", "reading", "scope"]
