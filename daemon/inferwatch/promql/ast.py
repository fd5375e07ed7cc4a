"""Our own PromQL syntax tree: immutable, typed, independent of ``promql-parser``.

``promql_load`` converts the parser's objects into these once, when a rule is loaded, so the
evaluator never touches the parser's (untyped, Rust-backed) objects and every check that can be
made early (function names, regexes, label names) has already been made. Parentheses are not kept:
PromQL gives them no meaning beyond grouping (``absent((x{a="b"}))`` and ``timestamp((x))`` see the
selector through them, as Prometheus's engine does). Nodes are named tuples (made at a fraction
of a frozen dataclass's cost), but for the selector and its matchers, which keep derived fields
out of comparison.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Literal, NamedTuple

from inferwatch import regexp
from inferwatch.labels import MatchOp
from inferwatch.promql.types import PromQLError


class ValueType(StrEnum):
    SCALAR = "scalar"
    VECTOR = "instant vector"
    MATRIX = "range vector"
    STRING = "string"


class Cardinality(StrEnum):
    ONE_TO_ONE = "one-to-one"
    MANY_TO_ONE = "many-to-one"
    ONE_TO_MANY = "one-to-many"
    MANY_TO_MANY = "many-to-many"


def compile_regex(pattern: str) -> regexp.Regexp:
    """A label regex, compiled by RE2 as Go's regexp does (linear time whatever the pattern).

    Callers match the whole value (Prometheus anchors as ``^(?:re)$``); ``.`` does not match a
    newline, as in Prometheus 2.x. What RE2 refuses (backreferences, lookarounds) is an error
    here, so a rule using one fails to load.
    """
    try:
        return regexp.compile(pattern)
    except regexp.RegexError as exc:
        raise PromQLError(f"regex {pattern!r} is not supported (RE2): {exc}") from None


@dataclass(frozen=True, slots=True)
class LabelMatcher:
    name: str
    op: MatchOp
    value: str
    regex: regexp.Regexp | None = field(default=None, compare=False, repr=False)

    @classmethod
    def of(cls, name: str, op: MatchOp, value: str) -> LabelMatcher:
        regex = compile_regex(value) if op in (MatchOp.RE, MatchOp.NRE) else None
        return cls(name, op, value, regex)

    def matches(self, value: str) -> bool:
        op = self.op
        if op is MatchOp.EQ:
            return value == self.value
        if op is MatchOp.NE:
            return value != self.value
        assert self.regex is not None
        hit = self.regex.matches(value)
        return hit if op is MatchOp.RE else not hit

    def __str__(self) -> str:
        return f"{self.name}{self.op.value}{self.value!r}"


class NumberLiteral(NamedTuple):
    value: float


class StringLiteral(NamedTuple):
    value: str


class AtModifier(NamedTuple):
    """``@ <unix seconds>``, ``@ start()`` or ``@ end()`` (both the evaluation time here)."""

    kind: Literal["at", "start", "end"]
    timestamp: float = 0.0


@dataclass(frozen=True, slots=True)
class VectorSelector:
    name: str | None
    matchers: tuple[LabelMatcher, ...]
    offset: float = 0.0
    at: AtModifier | None = None
    key: str = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        # The selection cache's key: what is selected, independent of offset and @.
        inner = ",".join(f"{m.name}{m.op.value}{m.value!r}" for m in self.matchers)
        object.__setattr__(self, "key", f"{self.name or ''}{{{inner}}}")


class MatrixSelector(NamedTuple):
    selector: VectorSelector
    range: float


class Call(NamedTuple):
    func: str
    args: tuple[Expr, ...]
    returns: ValueType


class Aggregate(NamedTuple):
    op: str
    expr: Expr
    param: Expr | None
    grouping: tuple[str, ...]
    without: bool


class VectorMatching(NamedTuple):
    card: Cardinality
    on: bool
    labels: tuple[str, ...]
    include: tuple[str, ...] = ()


class Binary(NamedTuple):
    op: str
    lhs: Expr
    rhs: Expr
    return_bool: bool = False
    matching: VectorMatching | None = None


class Unary(NamedTuple):
    op: Literal["-"]
    expr: Expr


Expr = (
    NumberLiteral
    | StringLiteral
    | VectorSelector
    | MatrixSelector
    | Call
    | Aggregate
    | Binary
    | Unary
)

ARITHMETIC_OPS = frozenset({"+", "-", "*", "/", "%", "^", "atan2"})
COMPARISON_OPS = frozenset({"==", "!=", ">", "<", ">=", "<="})
SET_OPS = frozenset({"and", "or", "unless"})
_EXPRS = (
    NumberLiteral, StringLiteral, VectorSelector, MatrixSelector, Call, Aggregate, Binary, Unary
)  # fmt: skip
_REPR_FIELDS = {
    kind: tuple(f.name for f in dataclasses.fields(kind) if f.repr)
    if dataclasses.is_dataclass(kind)
    else kind._fields
    for kind in _EXPRS
}


def value_type(expr: Expr) -> ValueType:
    """The static type of an expression (PromQL is typed before it runs)."""
    if isinstance(expr, NumberLiteral):
        return ValueType.SCALAR
    if isinstance(expr, StringLiteral):
        return ValueType.STRING
    if isinstance(expr, MatrixSelector):
        return ValueType.MATRIX
    if isinstance(expr, Call):
        return expr.returns
    if isinstance(expr, Binary):  # scalar only with two scalars: the right side only then
        if value_type(expr.lhs) is ValueType.SCALAR and value_type(expr.rhs) is ValueType.SCALAR:
            return ValueType.SCALAR
        return ValueType.VECTOR
    if isinstance(expr, Unary):
        return value_type(expr.expr)
    return ValueType.VECTOR


def expr_key(expr: Expr, known: dict[int, str]) -> str:
    """``repr(expr)``, each node's text built once (``known``: by node, for one tree that stays
    alive meanwhile); a node's own repr builds every subtree's again, and a compile asks for
    the key of every node of a tree."""
    found = known.get(id(expr))
    if found is None:
        names = _REPR_FIELDS[type(expr)]
        values = (f"{name}={_value_repr(getattr(expr, name), known)}" for name in names)
        found = known[id(expr)] = f"{type(expr).__qualname__}({', '.join(values)})"
    return found


def _value_repr(value: object, known: dict[int, str]) -> str:
    if isinstance(value, _EXPRS):
        return expr_key(value, known)
    if isinstance(value, tuple) and value and isinstance(value[0], _EXPRS):
        items = [expr_key(item, known) for item in value]
        return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"
    return repr(value)


def selectors(expr: Expr) -> list[VectorSelector | MatrixSelector]:
    """Every selector in the expression (e.g. to size retention or list needed metrics)."""
    return [n for n in subexpressions(expr) if isinstance(n, VectorSelector | MatrixSelector)]


def subexpressions(expr: Expr) -> list[Expr]:
    """``expr`` and every expression inside it, each occurrence once (a range selector's own
    vector selector is part of the range, not an expression of its own)."""
    out: list[Expr] = []
    stack: list[Expr] = [expr]
    while stack:
        node = stack.pop()
        out.append(node)
        if isinstance(node, Call):
            stack.extend(node.args)
        elif isinstance(node, Aggregate):
            stack.append(node.expr)
            if node.param is not None:
                stack.append(node.param)
        elif isinstance(node, Binary):
            stack.extend((node.lhs, node.rhs))
        elif isinstance(node, Unary):
            stack.append(node.expr)
    return out
