"""Expressions that are empty while the metrics they read do not exist: skip them for free.

A host without GPUs never creates the Xid or NVML series that the GPU rules read, and a replay of
an engine log never creates the daemon's own series; evaluating those rules every tick gives an
empty vector every time. :func:`names_if_empty_without` tells, from the tree alone, whether an
expression is such a one (``rate``, ``*_over_time``, comparisons with a literal, aggregations,
relabelling, set and arithmetic operators of such: nothing out of nothing, and no error) and
which metric names it reads. Then, while the store holds no series of any of those names, the
result is the empty vector without running anything. ``absent``, ``vector``, ``scalar``,
``time`` and argument-less date functions make something out of nothing, and any selector
without a metric name could match anything: such expressions are always evaluated.
"""

from __future__ import annotations

from collections.abc import Callable

from inferwatch.golang.floats import MATH
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
from inferwatch.promql.index import family_name
from inferwatch.promql.safe import cannot_fail

# One output per input sample or per input series with samples in the window, none otherwise.
PER_INPUT = frozenset(
    {
        *("rate", "irate", "increase", "delta", "idelta", "changes", "resets", "deriv"),
        *("avg_over_time", "min_over_time", "max_over_time", "sum_over_time", "count_over_time"),
        *("stddev_over_time", "stdvar_over_time", "present_over_time", "last_over_time"),
        *("quantile_over_time", "predict_linear", "round", "clamp", "clamp_min", "clamp_max"),
        *("timestamp", "sort", "sort_desc", "histogram_quantile"),
        *MATH,
    }
)
# Nothing out of nothing too, but with a label changed (``promql.partition`` tells them apart):
# their string arguments fail at load, and a label set made twice needs two input samples.
_NOTHING_OUT = PER_INPUT | {"label_replace", "label_join"}


def names_if_empty_without(node: Expr) -> frozenset[str] | None:
    """The metric names ``node`` reads, if it is an instant vector that is empty (and raises
    nothing) whenever the store holds no series of any of them; None otherwise."""
    if value_type(node) is not ValueType.VECTOR or not _empty_on_empty(node):
        return None
    names: set[str] = set()
    for found in selectors(node):
        name = family_name(found.selector if isinstance(found, MatrixSelector) else found)
        if name is None:
            return None
        names.add(name)
    return frozenset(names) if names else None


def _empty_on_empty(node: Expr) -> bool:
    """True when ``node``, with every selector matching nothing, is an empty vector."""
    if isinstance(node, VectorSelector):
        return True
    if isinstance(node, Call):
        return _call(node)
    if isinstance(node, Aggregate):
        # A parameter is checked even over nothing (topk(1e308, …) fails on an empty vector).
        return node.param is None and _empty_on_empty(node.expr)
    if isinstance(node, Binary):
        return _binary(node)
    if isinstance(node, Unary):
        return _empty_on_empty(node.expr)
    return False


def _call(node: Call) -> bool:
    if node.func in DATE_PARTS:
        return len(node.args) == 1 and _empty_on_empty(node.args[0])
    if node.func not in _NOTHING_OUT:
        return False
    for arg in node.args:
        if isinstance(arg, MatrixSelector):
            continue
        if value_type(arg) is ValueType.VECTOR:
            if not _empty_on_empty(arg):
                return False
        elif not _constant(arg):
            return False
    return True


def _binary(node: Binary) -> bool:
    left, right = value_type(node.lhs), value_type(node.rhs)
    if left is ValueType.VECTOR and right is ValueType.VECTOR:
        return _empty_on_empty(node.lhs) and _empty_on_empty(node.rhs)
    if left is ValueType.VECTOR:
        return _empty_on_empty(node.lhs) and _constant(node.rhs)
    if right is ValueType.VECTOR:
        return _empty_on_empty(node.rhs) and _constant(node.lhs)
    return False


def _constant(node: Expr) -> bool:
    """A scalar or string operand that reads no series and cannot fail (``0.5``, ``time()``)."""
    if isinstance(node, NumberLiteral | StringLiteral):
        return True
    return value_type(node) is ValueType.SCALAR and not selectors(node) and cannot_fail(node)


def empty_without(node: Expr, exists: Callable[[str], bool]) -> bool:
    """True when ``node`` is an empty vector, and its evaluation raises nothing, while the store
    holds no series of the metric names that ``exists`` denies. ``a < on(…) group_left() b``
    is such without ``b``'s metric once ``a`` cannot fail: Prometheus matches nothing against
    an empty side (no matching error) but still evaluates, and may fail on, the other one."""
    if isinstance(node, VectorSelector):
        name = family_name(node)
        return name is not None and not exists(name)
    if isinstance(node, Call):
        return _call_empty(node, exists)
    if isinstance(node, Aggregate):
        return node.param is None and empty_without(node.expr, exists)
    if isinstance(node, Unary):
        return empty_without(node.expr, exists)
    if isinstance(node, Binary):
        return _binary_empty(node, exists)
    return False


def _call_empty(node: Call, exists: Callable[[str], bool]) -> bool:
    if node.func in DATE_PARTS:
        return len(node.args) == 1 and empty_without(node.args[0], exists)
    if node.func not in _NOTHING_OUT:
        return False
    inputs = [a for a in node.args if isinstance(a, MatrixSelector) or _is_vector(a)]
    if len(inputs) != 1 or not all(_constant(a) for a in node.args if a is not inputs[0]):
        return False
    [arg] = inputs
    return empty_without(arg.selector if isinstance(arg, MatrixSelector) else arg, exists)


def _binary_empty(node: Binary, exists: Callable[[str], bool]) -> bool:
    left, right = _is_vector(node.lhs), _is_vector(node.rhs)
    if left and right:
        if node.op == "or":
            return empty_without(node.lhs, exists) and empty_without(node.rhs, exists)
        if empty_without(node.lhs, exists) and _safe(node.rhs, exists):
            return True
        return node.op != "unless" and empty_without(node.rhs, exists) and _safe(node.lhs, exists)
    if left:
        return empty_without(node.lhs, exists) and cannot_fail(node.rhs)
    if right:
        return empty_without(node.rhs, exists) and cannot_fail(node.lhs)
    return False


def _safe(node: Expr, exists: Callable[[str], bool]) -> bool:
    """Evaluating ``node`` raises nothing: whatever the store holds, or because it is empty."""
    return cannot_fail(node) or empty_without(node, exists)


def _is_vector(node: Expr) -> bool:
    return value_type(node) is ValueType.VECTOR
