"""A rough static cost of evaluating an expression, to run the cheap side of an ``and`` first.

``a and b`` is empty as soon as either side is; when neither side can fail (promql_safe), the
side that costs less is evaluated first and the other only if it found something. The shipped
decode rules chain a 5-minute quantile with ``requests_running offset 5m == 1``: on a busy engine
the cheap instant check is empty and the quantile is never computed. Costs count samples read,
assuming one sample per 10 s (the engine stats interval); only their order matters.
"""

from __future__ import annotations

from inferwatch.promql.ast import (
    Aggregate,
    Binary,
    Call,
    Expr,
    MatrixSelector,
    Unary,
    VectorSelector,
)

SAMPLE_EVERY_S = 10.0
MUCH = 4.0  # how much cheaper a side must be to go first (the written order says which side
# the author expects to be empty more often; costs alone know nothing of that)


def cost(node: Expr) -> float:
    """Samples read, plus one per node."""
    if isinstance(node, VectorSelector):
        return 1.0
    if isinstance(node, MatrixSelector):
        return 1.0 + node.range / SAMPLE_EVERY_S
    if isinstance(node, Call):
        return 1.0 + sum(cost(a) for a in node.args)
    if isinstance(node, Aggregate):
        return 1.0 + cost(node.expr) + (cost(node.param) if node.param is not None else 0.0)
    if isinstance(node, Binary):
        return 1.0 + cost(node.lhs) + cost(node.rhs)
    if isinstance(node, Unary):
        return 1.0 + cost(node.expr)
    return 0.0


def much_cheaper(node: Expr, than: Expr) -> bool:
    return cost(node) * MUCH < cost(than)
