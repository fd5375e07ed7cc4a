"""Which metrics a rule set can ever read, known before it runs.

A rule reads through its expression's selectors and through the queries its templates send
(``gotemplate.queries``: literal, or a ``printf`` shape with the label values left open). When
every template's queries are known, :func:`metric_reads` says for any metric name whether some
selector can match it; a batch run (``inferwatch replay``) keeps no samples of the gauges no
rule can read (``SeriesStore(reads=…)``). One template whose queries cannot be known makes every
name readable (None).
"""

from __future__ import annotations

from dataclasses import dataclass

from inferwatch.gotemplate.queries import sent_queries
from inferwatch.promql.ast import Expr, MatrixSelector, VectorSelector, selectors
from inferwatch.promql.load import parse
from inferwatch.promql.types import PromQLError
from inferwatch.rules.ruleset import AlertingRule, NameTest, RuleGroup, RuleSet, name_test


@dataclass(frozen=True, slots=True)
class MetricReads:
    """What the rule set's groups read (``RuleGroup.reads``: expressions and literal template
    queries), and the name tests of the template queries that only their shape gives."""

    groups: tuple[RuleGroup, ...]
    tests: tuple[NameTest, ...]

    def __call__(self, metric: str) -> bool:
        return any(g.reads(metric) for g in self.groups) or any(
            t.admits(metric) for t in self.tests
        )


def metric_reads(rule_set: RuleSet) -> MetricReads | None:
    """What ``rule_set`` can read; None when a template's queries cannot be known (then any
    metric may be read)."""
    sent: dict[str, None] = {}  # each text once: a rule's translations send the same queries
    for _, rule in rule_set.rules():
        if isinstance(rule, AlertingRule):
            for _, template in (*rule.labels, *rule.annotations):
                queries = sent_queries(template)
                if queries is None:
                    return None
                sent.update(dict.fromkeys(queries))
    exprs: list[Expr] = []
    for text in sent:
        try:
            exprs.append(parse(text))
        except PromQLError:
            continue  # fails when sent, and reads nothing
    tests = (name_test(_selector(found)) for expr in exprs for found in selectors(expr))
    return MetricReads(rule_set.groups, tuple(dict.fromkeys(tests)))


def _selector(found: VectorSelector | MatrixSelector) -> VectorSelector:
    return found.selector if isinstance(found, MatrixSelector) else found
