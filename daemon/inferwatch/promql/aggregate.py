"""Aggregation operators (``sum``, ``avg``, ``topk``, ``count_values``, …) with ``by``/``without``.

Grouping follows Prometheus 2.42 (promql.md §4): ``by`` keys on the listed labels (a missing one
is "") and keeps those present; ``without`` keys on, and keeps, everything else but ``__name__``.
The arithmetic is the engine's own: plain left-to-right ``sum`` (no compensation, unlike
``sum_over_time``), incremental mean for ``avg``, Welford for ``stddev``; NaN loses every
``min``/``max``/``topk`` comparison.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable

from inferwatch.golang.floats import format_go_v, format_plain, quantile
from inferwatch.labels import NAME_LABEL, Labels
from inferwatch.promql.ast import Aggregate, StringLiteral
from inferwatch.promql.context import Compiler, Ctx, VectorFn
from inferwatch.promql.types import (
    EvalError,
    PromQLError,
    Sample,
    Vector,
    get_label,
    set_label,
)

_LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
Grouper = Callable[[Sample], tuple[tuple[object, ...], str, Labels]]


def _grouper(grouping: tuple[str, ...], without: bool) -> Grouper:
    """A function giving each sample its group key and the group's output name and labels."""
    if without:
        dropped = frozenset((*grouping, NAME_LABEL))

        def by_without(s: Sample) -> tuple[tuple[object, ...], str, Labels]:
            kept = tuple(p for p in s.labels if p[0] not in dropped)
            return kept, "", kept

        return by_without
    names = tuple(sorted(set(grouping)))
    keep_name = NAME_LABEL in names
    label_names = tuple(n for n in names if n != NAME_LABEL)

    def by_labels(s: Sample) -> tuple[tuple[object, ...], str, Labels]:
        values = tuple(get_label(s.name, s.labels, n) for n in label_names)
        name = s.name if keep_name else ""
        labels = tuple((n, v) for n, v in zip(label_names, values, strict=True) if v)
        return (name, *values), name, labels

    return by_labels


def _sum(values: list[float]) -> float:
    total = values[0]
    for v in values[1:]:
        total += v
    return total


def _avg(values: list[float]) -> float:
    mean = values[0]
    count = 1.0
    for v in values[1:]:
        count += 1
        if math.isinf(mean):
            if math.isinf(v) and (mean > 0) == (v > 0):
                continue
            if not math.isinf(v) and not math.isnan(v):
                continue
        mean += v / count - mean / count
    return mean


def _max(values: list[float]) -> float:
    best = values[0]
    for v in values[1:]:
        if best < v or math.isnan(best):
            best = v
    return best


def _min(values: list[float]) -> float:
    best = values[0]
    for v in values[1:]:
        if best > v or math.isnan(best):
            best = v
    return best


def _stdvar(values: list[float]) -> float:
    mean = values[0]
    aux = 0.0
    count = 1.0
    for v in values[1:]:
        count += 1
        d = v - mean
        mean += d / count
        aux += d * (v - mean)
    return aux / count


def _stddev(values: list[float]) -> float:
    var = _stdvar(values)
    return math.nan if var < 0 else math.sqrt(var)


REDUCERS: dict[str, Callable[[list[float]], float]] = {
    "sum": _sum,
    "avg": _avg,
    "max": _max,
    "min": _min,
    "count": lambda values: float(len(values)),
    "group": lambda values: 1.0,
    "stdvar": _stdvar,
    "stddev": _stddev,
}
AGGREGATORS = frozenset({*REDUCERS, "topk", "bottomk", "quantile", "count_values"})


def _group(vec: Vector, grouper: Grouper) -> dict[tuple[object, ...], tuple[str, Labels, Vector]]:
    groups: dict[tuple[object, ...], tuple[str, Labels, Vector]] = {}
    for s in vec:
        key, name, labels = grouper(s)
        group = groups.get(key)
        if group is None:
            groups[key] = (name, labels, [s])
        else:
            group[2].append(s)
    return groups


def _k_of(param: float) -> int:
    if math.isnan(param) or not -(2.0**63) <= param < 2.0**63:
        raise EvalError(f"Scalar value {format_go_v(param)} overflows int64")
    return int(param)


def _select_k(members: Vector, k: int, *, top: bool) -> Vector:
    """The k best members, NaN last; on a tie the earlier one wins (stable sort)."""

    def rank(s: Sample) -> tuple[bool, float]:
        nan = s.value != s.value
        return (nan, 0.0 if nan else (-s.value if top else s.value))

    return sorted(members, key=rank)[:k]


def build_aggregate(node: Aggregate, c: Compiler) -> VectorFn:
    arg = c.vector(node.expr)
    op = node.op
    if op == "count_values":
        return _count_values(node, arg)
    grouper = _grouper(node.grouping, node.without)
    reducer = REDUCERS.get(op)
    if reducer is not None:

        def reduce(ctx: Ctx) -> Vector:
            groups = _group(arg(ctx), grouper)
            return [
                Sample(name, labels, reducer([s.value for s in members]))
                for name, labels, members in groups.values()
            ]

        return reduce
    if node.param is None:
        raise PromQLError(f"{op}: missing parameter")
    param = c.scalar(node.param)
    if op == "quantile":

        def quantiles(ctx: Ctx) -> Vector:
            q = param(ctx)
            groups = _group(arg(ctx), grouper)
            return [
                Sample(name, labels, quantile(q, [s.value for s in members]))
                for name, labels, members in groups.values()
            ]

        return quantiles
    top = op == "topk"

    def select_k(ctx: Ctx) -> Vector:
        raw_k, vec = param(ctx), arg(ctx)  # operands first: their errors come first
        k = _k_of(raw_k)
        if k < 1:
            return []
        out: Vector = []
        for _, _, members in _group(vec, grouper).values():
            out.extend(_select_k(members, k, top=top))
        return out

    return select_k


def _count_values(node: Aggregate, arg: VectorFn) -> VectorFn:
    if not isinstance(node.param, StringLiteral):
        raise PromQLError("count_values: the label name must be a string literal")
    target = node.param.value
    if not _LABEL_NAME.fullmatch(target):
        raise PromQLError(f"invalid label name {target!r}")
    grouping = node.grouping if node.without else (*node.grouping, target)
    grouper = _grouper(grouping, node.without)

    def run(ctx: Ctx) -> Vector:
        labelled: Vector = []
        for s in arg(ctx):
            name, labels = set_label(s.name, s.labels, target, format_plain(s.value))
            labelled.append(Sample(name, labels, s.value))
        groups = _group(labelled, grouper)
        return [
            Sample(name, labels, float(len(members))) for name, labels, members in groups.values()
        ]

    return run
