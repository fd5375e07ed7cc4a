"""From PromQL text to our syntax tree: ``promql-parser`` does the grammar, this module the rest.

Everything the evaluator does not implement is refused here, by name, with a
:class:`PromQLError`: subqueries, functions outside the table (including those newer than 2.42),
``limitk``-style aggregations, ``fill`` modifiers, ``or`` inside braces. The parser's Rust core
can panic (``x @ -10`` does, when the timestamp is read); that becomes a ``PromQLError`` too.
"""

from __future__ import annotations

import re
from datetime import timedelta
from decimal import Decimal
from typing import Any

import promql_parser as pp

from inferwatch.labels import MatchOp
from inferwatch.promql.aggregate import AGGREGATORS
from inferwatch.promql.ast import (
    ARITHMETIC_OPS,
    COMPARISON_OPS,
    SET_OPS,
    Aggregate,
    AtModifier,
    Binary,
    Call,
    Cardinality,
    Expr,
    LabelMatcher,
    MatrixSelector,
    NumberLiteral,
    StringLiteral,
    Unary,
    ValueType,
    VectorMatching,
    VectorSelector,
    value_type,
)
from inferwatch.promql.functions import FUNCTIONS
from inferwatch.promql.lex import prepare
from inferwatch.promql.types import PromQLError

# The parser's enums are not hashable: key by their text.
_MATCH_OPS = {
    str(pp.MatchOp.Equal): MatchOp.EQ,
    str(pp.MatchOp.NotEqual): MatchOp.NE,
    str(pp.MatchOp.Re): MatchOp.RE,
    str(pp.MatchOp.NotRe): MatchOp.NRE,
}
_CARDINALITY = {
    str(pp.VectorMatchCardinality.OneToOne): Cardinality.ONE_TO_ONE,
    str(pp.VectorMatchCardinality.ManyToOne): Cardinality.MANY_TO_ONE,
    str(pp.VectorMatchCardinality.OneToMany): Cardinality.ONE_TO_MANY,
    str(pp.VectorMatchCardinality.ManyToMany): Cardinality.MANY_TO_MANY,
}
_SYSTEM_TIME = re.compile(r"tv_sec:\s*(-?\d+),\s*tv_nsec:\s*(\d+)")


def parse(text: str) -> Expr:
    """Parse and convert ``text``; raises :class:`PromQLError`."""
    source = prepare(text)
    try:
        raw = pp.parse(source)
    except ValueError as exc:
        raise PromQLError(f"parse error: {exc}") from None
    except BaseException as exc:  # a Rust panic surfaces as pyo3's PanicException
        if isinstance(exc, KeyboardInterrupt | SystemExit | GeneratorExit):
            raise
        raise PromQLError(f"parse error: {text!r} crashed the parser") from None
    return _convert(raw)


def _seconds(delta: timedelta) -> float:
    """A parsed duration in seconds, exact to the millisecond as Prometheus keeps it."""
    micros = (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
    return (micros // 1000) / 1000


def _at(selector: Any) -> AtModifier | None:
    """The ``@`` modifier. The parser's datetime getter panics for negative timestamps, so the
    time is read from the modifier's text (milliseconds, as Prometheus keeps it) or, for the
    ``@ 0.000`` it prints for any time ≤ 0, from the selector's debug form."""
    at = selector.at
    if at is None:
        return None
    if at.type == pp.AtModifierType.Start:
        return AtModifier("start")
    if at.type == pp.AtModifierType.End:
        return AtModifier("end")
    text = str(at).removeprefix("@").strip()
    millis = int(Decimal(text) * 1000)
    if millis <= 0:
        found = _SYSTEM_TIME.search(repr(selector))
        if found is None:
            raise PromQLError(f"unsupported @ modifier in {selector}")
        millis = int(found.group(1)) * 1000 + int(found.group(2)) // 1_000_000
    return AtModifier("at", millis / 1000)


def _selector(raw: Any) -> VectorSelector:
    matchers = raw.matchers
    if matchers.or_matchers:
        raise PromQLError(f"'or' inside a selector's braces is not supported: {raw}")
    converted = tuple(
        LabelMatcher.of(m.name, _MATCH_OPS[str(m.op)], m.value) for m in matchers.matchers
    )
    offset = _seconds(raw.offset) if raw.offset is not None else 0.0
    return VectorSelector(raw.name, converted, offset, _at(raw))


def _check_args(name: str, args: tuple[Expr, ...]) -> ValueType:
    spec = FUNCTIONS.get(name)
    if spec is None:
        raise PromQLError(f"function {name!r} is not supported")
    n = len(args)
    least = len(spec.args) - spec.optional
    if n < least or (n > len(spec.args) and not spec.variadic):
        raise PromQLError(f"wrong number of arguments ({n}) in call to {name}")
    for i, arg in enumerate(args):
        want = spec.args[min(i, len(spec.args) - 1)]
        got = value_type(arg)
        if got is not want:
            raise PromQLError(f"expected type {want} in call to function {name!r}, got {got}")
    return spec.returns


def _matching(raw: Any, op: str, lhs: Expr, rhs: Expr) -> tuple[bool, VectorMatching | None]:
    modifier = raw.modifier
    if modifier is None:
        return False, None
    fill = modifier.fill_values
    if fill is not None and (fill.lhs is not None or fill.rhs is not None):
        raise PromQLError("fill() modifiers are not supported (not in Prometheus 2.42)")
    return_bool = bool(modifier.return_bool)
    if return_bool and op not in COMPARISON_OPS:
        raise PromQLError("bool modifier can only be used on comparison operators")
    matching = modifier.matching
    card = _CARDINALITY[str(modifier.card)]
    if matching is None and card in (Cardinality.ONE_TO_ONE, Cardinality.MANY_TO_MANY):
        return return_bool, None
    on = matching is not None and matching.type == pp.LabelModifierType.Include
    labels = tuple(matching.labels) if matching is not None else ()
    include = tuple(modifier.group_labels or ())
    if ValueType.SCALAR in (value_type(lhs), value_type(rhs)):
        # 2.42 refuses matching labels next to a scalar but ignores an empty on()/ignoring().
        if labels:
            raise PromQLError("vector matching only allowed between instant vectors")
        return return_bool, None
    if on and set(labels) & set(include):
        clash = sorted(set(labels) & set(include))[0]
        raise PromQLError(f"label {clash!r} must not occur in ON and GROUP clause at once")
    return return_bool, VectorMatching(card, on, labels, include)


def _binary(raw: Any) -> Binary:
    op = str(raw.op)
    if op not in ARITHMETIC_OPS | COMPARISON_OPS | SET_OPS:
        raise PromQLError(f"operator {op!r} is not supported")
    lhs, rhs = _convert(raw.lhs), _convert(raw.rhs)
    for side in (lhs, rhs):
        if value_type(side) not in (ValueType.SCALAR, ValueType.VECTOR):
            raise PromQLError("binary expression must contain only scalar and instant vector types")
    return_bool, matching = _matching(raw, op, lhs, rhs)
    if op in SET_OPS and ValueType.SCALAR in (value_type(lhs), value_type(rhs)):
        raise PromQLError(f"set operator {op!r} not allowed in binary scalar expression")
    return Binary(op, lhs, rhs, return_bool, matching)


def _aggregate(raw: Any) -> Aggregate:
    op = str(raw.op)
    if op not in AGGREGATORS:
        raise PromQLError(f"aggregation {op!r} is not supported")
    expr = _convert(raw.expr)
    if value_type(expr) is not ValueType.VECTOR:
        raise PromQLError(f"expected type instant vector in aggregation {op}")
    param = _convert(raw.param) if raw.param is not None else None
    modifier = raw.modifier
    grouping: tuple[str, ...] = ()
    without = False
    if modifier is not None:
        grouping = tuple(modifier.labels)
        without = modifier.type == pp.AggModifierType.Without
    return Aggregate(op, expr, param, grouping, without)


def _convert(raw: Any) -> Expr:
    if isinstance(raw, pp.ParenExpr):
        return _convert(raw.expr)
    if isinstance(raw, pp.NumberLiteral):
        return NumberLiteral(float(raw.val))
    if isinstance(raw, pp.StringLiteral):
        return StringLiteral(str(raw.val))
    if isinstance(raw, pp.VectorSelector):
        return _selector(raw)
    if isinstance(raw, pp.MatrixSelector):
        return MatrixSelector(_selector(raw.vector_selector), _seconds(raw.range))
    if isinstance(raw, pp.UnaryExpr):
        return Unary("-", _convert(raw.expr))
    if isinstance(raw, pp.BinaryExpr):
        return _binary(raw)
    if isinstance(raw, pp.AggregateExpr):
        return _aggregate(raw)
    if isinstance(raw, pp.Call):
        name = str(raw.func.name)
        args = tuple(_convert(a) for a in raw.args)
        return Call(name, args, _check_args(name, args))
    if isinstance(raw, pp.SubqueryExpr):
        raise PromQLError(f"subqueries are not supported: {raw}")
    raise PromQLError(f"unsupported expression: {raw}")
