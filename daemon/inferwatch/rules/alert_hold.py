"""An alerting rule's result that repeats the last one exactly, every alert of it firing.

A rule that fires for minutes (a crash is news for five) finds the same samples at every
evaluation. Prometheus then changes nothing but the alerts' evaluation time and writes the same
``ALERTS``/``ALERTS_FOR_STATE`` rows again. :class:`Held` remembers the last full evaluation's
result (its samples to the bit, the alerts' label sets and the rows), so such an evaluation
skips expanding templates and running the state machine. It is used only where it cannot
differ from the full path: every alert held firing and found again, nothing pending or kept
firing, no alert waiting to be restored, and templates that expand the same again. A template
that never calls ``query`` does (the same sample always expands the same); one that does is a
pure function of the sample and the answers it got, so the questions the rule's templates asked
are kept with their answers (``rule_eval.Asking``) and asked again first: one different answer, or
one that fails, and the evaluation takes the full path. The rule manager forgets what it holds
when rules are reloaded.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from inferwatch.gotemplate.templates import QueryResult
from inferwatch.labels import Labels
from inferwatch.promql.engine import Vector
from inferwatch.rules.outputs import Row
from inferwatch.rules.ruleset import AlertingRule

_BITS = struct.Struct("<d").pack  # -0.0 and 0.0 render differently in a template's $value

Signature = tuple[tuple[str, Labels, bytes], ...]
Asked = tuple[tuple[str, QueryResult], ...]
"""Questions a rule's templates asked in one evaluation, each once, with the answers."""


def signature(vec: Vector) -> Signature:
    """The result to the bit: names, label sets and values, in order."""
    return tuple((s.name, s.labels, _BITS(s.value)) for s in vec)


def pure(rule: AlertingRule) -> bool:
    """Whether the rule's label and annotation templates are pure functions of the sample."""
    return all("query" not in t.source for _, t in (*rule.labels, *rule.annotations))


class Held(NamedTuple):
    """The last full evaluation of a rule: its result, its alerts' labels, its rows, and the
    questions its templates asked (none for a rule without ``query``)."""

    signature: Signature
    labels: frozenset[Labels]
    rows: tuple[Row, ...]
    asked: Asked = ()
