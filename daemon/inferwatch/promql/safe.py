"""Which expressions cannot fail, whatever the store holds: the operand an operator may skip.

``a and b`` with ``a`` empty is empty, and so are ``a unless b`` and ``a < on(…) b``; the right
operand then matters only for the error it might raise (Prometheus evaluates both sides, so a
duplicate label set on the right fails the rule even when the left is empty). Skipping it is
therefore exact only when it cannot raise: this module says so, conservatively, from the tree
alone (selectors, literals, ``time()``, the range functions below over one metric name,
filtering comparisons with a scalar, and set operators of such). Anything else is "may fail".
"""

from __future__ import annotations

from inferwatch.promql.ast import (
    COMPARISON_OPS,
    Binary,
    Call,
    Expr,
    MatrixSelector,
    NumberLiteral,
    StringLiteral,
    ValueType,
    VectorSelector,
    value_type,
)

# Range functions whose arithmetic raises on no input (no Python division by a value that can
# be zero; windows are never empty and their times strictly increase) and that keep one output
# per input series (no duplicate check when the selector names its metric).
_SAFE_RANGE = frozenset(
    {
        *("increase", "rate", "delta", "last_over_time", "quantile_over_time"),
        *("min_over_time", "max_over_time", "count_over_time", "present_over_time"),
    }
)
_SAFE_SCALAR_OPS = frozenset({"+", "-", "*", *COMPARISON_OPS})


def cannot_fail(node: Expr) -> bool:
    """True when evaluating ``node`` never raises, for any store contents and time."""
    if isinstance(node, NumberLiteral | StringLiteral | VectorSelector):
        return True
    if isinstance(node, Call):
        return _safe_call(node)
    if isinstance(node, Binary):
        return _safe_binary(node)
    return False  # aggregations, unary minus, anything new: assume it may fail


def _safe_call(node: Call) -> bool:
    if node.func == "time" and not node.args:
        return True
    if node.func not in _SAFE_RANGE:
        return False
    ranges = [a for a in node.args if isinstance(a, MatrixSelector)]
    if len(ranges) != 1 or ranges[0].selector.name is None or ranges[0].range <= 0:
        return False
    return all(cannot_fail(a) for a in node.args if not isinstance(a, MatrixSelector))


def _safe_binary(node: Binary) -> bool:
    if not (cannot_fail(node.lhs) and cannot_fail(node.rhs)):
        return False
    left, right = value_type(node.lhs), value_type(node.rhs)
    if left is ValueType.SCALAR and right is ValueType.SCALAR:
        return node.op in _SAFE_SCALAR_OPS
    if left is ValueType.SCALAR or right is ValueType.SCALAR:
        # a filtering comparison keeps samples as they are: no new label sets to collide; an
        # arithmetic or bool one drops the name, harmless where the labels alone are unique
        if node.op in COMPARISON_OPS and not node.return_bool:
            return True
        vector = node.rhs if left is ValueType.SCALAR else node.lhs
        return node.op in _SAFE_SCALAR_OPS and unique_labels(vector)
    if node.op in ("and", "or", "unless"):
        return True
    # One-to-one on all labels: fails only on a label set found twice on one side.
    plain = node.matching is None
    return (
        plain
        and node.op in _SAFE_SCALAR_OPS
        and unique_labels(node.lhs)
        and unique_labels(node.rhs)
    )


def unique_labels(node: Expr) -> bool:
    """True when no two samples of ``node`` can share their labels, the name left out: one
    metric's series, a per-series range function of them, or a filter of such."""
    if isinstance(node, VectorSelector):
        return node.name is not None
    if isinstance(node, Call):
        return node.func in _SAFE_RANGE and _safe_call(node)
    if isinstance(node, Binary):
        left, right = value_type(node.lhs), value_type(node.rhs)
        if left is ValueType.SCALAR or right is ValueType.SCALAR:
            vector = node.rhs if left is ValueType.SCALAR else node.lhs
            return node.op in _SAFE_SCALAR_OPS and unique_labels(vector)
        return node.op in ("and", "unless") and unique_labels(node.lhs)
    return False
