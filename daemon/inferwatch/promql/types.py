"""Values, options and errors of the PromQL evaluator.

A vector element keeps its metric name apart from its other labels (``Sample.name``, "" once
dropped) because most operators drop ``__name__``: with the name outside the label tuple, dropping
it costs nothing, and the store's own ``Labels`` (which never hold ``__name__``) pass through as is.
``Sample.metric()`` gives the full label set with ``__name__`` for callers that want one.
"""

from __future__ import annotations

from typing import NamedTuple

from inferwatch.golang.strings import go_quote
from inferwatch.labels import NAME_LABEL, Labels


class PromQLError(Exception):
    """An expression that cannot be loaded (parse error, unsupported feature) or evaluated."""


class EvalError(PromQLError):
    """An error Prometheus raises while evaluating (e.g. many-to-many matching)."""


class EvalOptions(NamedTuple):
    """Engine switches.

    ``left_open`` selects Prometheus 3 behaviour: ranges and the instant-selector lookback become
    ``(t - r, t]`` instead of 2.42's closed ``[t - r, t]`` (reference/promql.md §2).

    ``plan`` is the one switch of the evaluator's speed machinery: off, every query and rule
    takes only the plain path, which reads and computes everything each time. On (the
    default), these run: the cheaper side of an ``and`` first and a right operand skipped when
    it cannot fail or a failure probe finds it cannot (promql.cost, promql.safe); expressions
    and whole groups skipped while their metrics do not exist (promql.absent); the store's
    selection cache (promql.index); windows without NaN taken whole, markers found by their
    bytes (promql.select); ``rate``/``increase`` read in place; in the rule manager, the
    per-group plan, the skip of empty idle alerting rules and the alert hold
    (rules.alert_hold). Results are the same either way: the parity, fuzz and rule tests run
    with both settings (bench/RESULTS.md has what each piece saves).
    """

    lookback_s: float = 300.0
    left_open: bool = False
    plan: bool = True


DEFAULT_OPTIONS = EvalOptions()
PLAIN_OPTIONS = EvalOptions(plan=False)


class Sample(NamedTuple):
    """One element of an instant vector."""

    name: str
    labels: Labels
    value: float

    def metric(self) -> Labels:
        """The label set with ``__name__`` (when there is one), sorted by label name."""
        return with_name(self.labels, self.name)


Vector = list[Sample]


class Scalar(NamedTuple):
    value: float


class String(NamedTuple):
    value: str


Value = Vector | Scalar | String


def with_name(labels: Labels, name: str) -> Labels:
    if not name:
        return labels
    return tuple(sorted((*labels, (NAME_LABEL, name))))


def get_label(name: str, labels: Labels, label: str) -> str:
    """A label's value ("" if absent), ``__name__`` included."""
    if label == NAME_LABEL:
        return name
    for k, v in labels:
        if k == label:
            return v
    return ""


def set_label(name: str, labels: Labels, label: str, value: str) -> tuple[str, Labels]:
    """Set (or, with "", remove) one label; ``__name__`` goes to the name slot."""
    if label == NAME_LABEL:
        return value, labels
    rest = [p for p in labels if p[0] != label]
    if value:
        rest.append((label, value))
        rest.sort()
    return name, tuple(rest)


def format_metric(name: str, labels: Labels) -> str:
    """Prometheus's ``labels.String()`` form, used in error messages: ``{__name__="x", a="1"}``."""
    pairs = with_name(labels, name)
    return "{" + ", ".join(f"{k}={go_quote(v)}" for k, v in pairs) + "}"


def check_unique(vec: Vector) -> None:
    """Prometheus refuses a step result holding one label set twice."""
    if len(vec) > 1 and len({(s.name, s.labels) for s in vec}) != len(vec):
        raise EvalError("vector cannot contain metrics with the same labelset")
