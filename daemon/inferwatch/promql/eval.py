"""The compiler: our syntax tree becomes nested closures, once, at load.

Each node type has one compile path per result type (scalar, instant vector, string); a node of
the wrong type is a load error. Constant scalar subtrees (``2 ^ 10``, ``-(1/3)``) are folded.
What remains per evaluation is the reading and the arithmetic, with no dispatch on node types.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence

from inferwatch.promql.absent import names_if_empty_without
from inferwatch.promql.aggregate import build_aggregate
from inferwatch.promql.ast import (
    Aggregate,
    Binary,
    Call,
    Expr,
    NumberLiteral,
    StringLiteral,
    Unary,
    ValueType,
    VectorSelector,
    expr_key,
    subexpressions,
    value_type,
)
from inferwatch.promql.binary import build_scalar_binary, build_vector_binary, scalar_op
from inferwatch.promql.context import Ctx, ScalarFn, StringFn, VectorFn
from inferwatch.promql.functions import FUNCTIONS
from inferwatch.promql.select import instant
from inferwatch.promql.types import (
    DEFAULT_OPTIONS,
    EvalOptions,
    PromQLError,
    Sample,
    Scalar,
    String,
    Value,
    Vector,
    check_unique,
)

Runner = Callable[[Ctx], Value]


def _constant(node: Expr) -> float | None:
    """The value of a scalar subtree made of literals and operators only."""
    if isinstance(node, NumberLiteral):
        return node.value
    if isinstance(node, Unary):
        inner = _constant(node.expr)
        return None if inner is None else -inner
    if isinstance(node, Binary):
        lhs, rhs = _constant(node.lhs), _constant(node.rhs)
        if lhs is None or rhs is None:
            return None
        return scalar_op(node.op)(lhs, rhs)
    return None


class ClosureCompiler:
    """Implements the :class:`~inferwatch.promql.context.Compiler` protocol; ``options.plan``
    says whether to build the fast paths (the other options are read at evaluation). With
    ``shared``, only those subexpressions (by ``repr``) keep their result for the rest of an
    evaluation: the others are read once per evaluation anyway, and a lookup that never hits
    costs more than it saves (``shared_subexpressions``)."""

    def __init__(
        self, options: EvalOptions = DEFAULT_OPTIONS, shared: frozenset[str] | None = None
    ) -> None:
        self.options = options
        self.shared = shared
        self._keys: dict[int, str] = {}  # each node's key, built once (``expr_key``)

    def scalar(self, node: Expr) -> ScalarFn:
        const = _constant(node)
        if const is not None:
            return lambda ctx: const
        if isinstance(node, Call):
            spec = FUNCTIONS[node.func]
            if spec.scalar is not None:
                return spec.scalar(node, self)
        elif isinstance(node, Binary) and value_type(node) is ValueType.SCALAR:
            return build_scalar_binary(node, self)
        elif isinstance(node, Unary):
            inner = self.scalar(node.expr)
            return lambda ctx: -inner(ctx)
        raise PromQLError(f"expected a scalar, got {value_type(node)}")

    def vector(self, node: Expr) -> VectorFn:
        built = self._vector(node)
        if not self.options.plan:
            return built
        # One result per distinct subexpression and Ctx: rules of a group share their common
        # parts (``x{xid="79"}`` in three GPU rules, the same ``or`` in two).
        key = expr_key(node, self._keys)
        return _memoized(key, built) if self.shared is None or key in self.shared else built

    def _vector(self, node: Expr) -> VectorFn:
        if isinstance(node, VectorSelector):
            sel = node
            return lambda ctx: instant(ctx, sel)
        if isinstance(node, Call):
            spec = FUNCTIONS[node.func]
            if spec.vector is not None:
                return spec.vector(node, self)
        elif isinstance(node, Aggregate):
            return build_aggregate(node, self)
        elif isinstance(node, Binary) and value_type(node) is ValueType.VECTOR:
            return build_vector_binary(node, self)
        elif isinstance(node, Unary):
            return _negate(self.vector(node.expr))
        raise PromQLError(f"expected an instant vector, got {value_type(node)}")

    def string(self, node: Expr) -> StringFn:
        if isinstance(node, StringLiteral):
            text = node.value
            return lambda ctx: text
        raise PromQLError(f"expected a string, got {value_type(node)}")


def _negate(inner: VectorFn) -> VectorFn:
    def run(ctx: Ctx) -> Vector:
        out = [Sample("", s.labels, -s.value) for s in inner(ctx)]
        check_unique(out)
        return out

    return run


def _unless_absent(node: Expr, inner: VectorFn) -> VectorFn:
    """Skip an expression that is empty while none of the metrics it reads exists."""
    names = names_if_empty_without(node)
    if names is None:
        return inner
    if len(names) == 1:
        (name,) = names

        def one(ctx: Ctx) -> Vector:
            return inner(ctx) if ctx.store.has(name) else []

        return one

    def run(ctx: Ctx) -> Vector:
        return inner(ctx) if ctx.store.has_any(names) else []

    return run


def compile_expr(
    node: Expr, options: EvalOptions = DEFAULT_OPTIONS, shared: frozenset[str] | None = None
) -> Runner:
    """A closure evaluating ``node`` at ``ctx.t``; raises :class:`PromQLError` if it can't.
    With ``options.plan`` off, the closure takes only the plain paths. ``shared``: the
    subexpressions whose results are kept per evaluation (None: all of them)."""
    kind = value_type(node)
    compiler = ClosureCompiler(options, shared)
    if kind is ValueType.VECTOR:
        vector = compiler.vector(node)
        return _unless_absent(node, vector) if options.plan else vector
    if kind is ValueType.SCALAR:
        scalar = compiler.scalar(node)
        return lambda ctx: Scalar(scalar(ctx))
    if kind is ValueType.STRING:
        string = compiler.string(node)
        return lambda ctx: String(string(ctx))
    raise PromQLError(
        "a range vector is not a valid result; rules need an instant vector or scalar"
    )


def shared_subexpressions(exprs: Sequence[Expr]) -> list[frozenset[str]]:
    """For each of ``exprs``, its vector subexpressions (by ``repr``, the keys results are kept
    under) that occur more than once among all of them: what expressions evaluated with one
    :class:`Ctx` (a rule group's, or one query's) can read twice."""
    known: dict[int, str] = {}
    keys = [
        [expr_key(n, known) for n in subexpressions(expr) if value_type(n) is ValueType.VECTOR]
        for expr in exprs
    ]
    counts = Counter(key for own in keys for key in own)
    return [frozenset(key for key in own if counts[key] > 1) for own in keys]


def _memoized(key: str, inner: VectorFn) -> VectorFn:
    """The node's result is computed once per :class:`Ctx`, shared by every equal node (vectors
    are never mutated)."""

    def run(ctx: Ctx) -> Vector:
        found = ctx.memo.get(key)
        if found is None:
            found = ctx.memo[key] = inner(ctx)
        return found

    return run
