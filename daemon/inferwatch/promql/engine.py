"""PromQL over the in-memory store: load an expression once, evaluate it at any time.

    query = load('sum by (engine) (rate(inferwatch_engine_errors_total[5m])) > 0')
    result = evaluate(query, store, t)      # Vector (list of Sample), Scalar or String

Semantics are Prometheus 2.42's (reference/promql.md), checked against promtool by the parity
tests in tests/rules/parity/. ``load`` raises :class:`PromQLError` for anything outside the
supported subset; ``evaluate`` raises :class:`EvalError` (a ``PromQLError``) where Prometheus
fails a query (many-to-many matching, duplicate label sets, …).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from inferwatch.promql.ast import Expr, ValueType, value_type
from inferwatch.promql.context import Ctx
from inferwatch.promql.eval import compile_expr, shared_subexpressions
from inferwatch.promql.index import cache_for
from inferwatch.promql.load import parse
from inferwatch.promql.types import (
    DEFAULT_OPTIONS,
    PLAIN_OPTIONS,
    EvalError,
    EvalOptions,
    PromQLError,
    Sample,
    Scalar,
    String,
    Value,
    Vector,
)
from inferwatch.store.tsdb import SeriesStore

__all__ = [
    "DEFAULT_OPTIONS",
    "PLAIN_OPTIONS",
    "EvalError",
    "EvalOptions",
    "PromQLError",
    "Query",
    "Sample",
    "Scalar",
    "String",
    "Value",
    "ValueType",
    "Vector",
    "evaluate",
    "load",
    "shared_subexpressions",
]


@dataclass(frozen=True, slots=True)
class Query:
    """A loaded expression: its text, syntax tree, result type and compiled forms (``run``
    with the speed machinery, ``plain`` without: see ``EvalOptions.plan``; compiled when first
    asked for, as only parity checks and tests do)."""

    text: str
    ast: Expr
    type: ValueType
    run: Callable[[Ctx], Value] = field(compare=False, repr=False)
    #: the subexpressions whose results ``run`` keeps for the rest of an evaluation
    shared: frozenset[str] = field(default=frozenset(), compare=False, repr=False)
    plain: Callable[[Ctx], Value] | None = field(
        default=None, init=False, compare=False, repr=False
    )

    def runner(self, options: EvalOptions) -> Callable[[Ctx], Value]:
        """The compiled form that ``options`` asks for."""
        if options.plan:
            return self.run
        plain = self.plain
        if plain is None:
            plain = compile_expr(self.ast, PLAIN_OPTIONS)
            object.__setattr__(self, "plain", plain)  # frozen: a cache, not a change
        return plain

    def sharing(self, shared: frozenset[str]) -> Query:
        """This query with ``run`` keeping, for the rest of an evaluation, the results of its
        ``shared`` subexpressions (those other expressions evaluated with the same Ctx read
        too: ``eval.shared_subexpressions`` of a rule group); itself when that changes
        nothing."""
        if shared == self.shared:
            return self
        return replace(self, run=compile_expr(self.ast, DEFAULT_OPTIONS, shared), shared=shared)


def load(text: str) -> Query:
    """Parse, check and compile ``text``; raises :class:`PromQLError` naming what is wrong."""
    ast = parse(text)
    kind = value_type(ast)
    # Only what the expression reads twice is kept: any other lookup would never hit.
    [shared] = shared_subexpressions([ast])
    run = compile_expr(ast, DEFAULT_OPTIONS, shared)
    return Query(text, ast, kind, run, shared)


def evaluate(
    query: Query | str,
    store: SeriesStore,
    t: float,
    options: EvalOptions = DEFAULT_OPTIONS,
) -> Value:
    """Evaluate an instant query at ``t`` (Unix seconds) over ``store``."""
    if isinstance(query, str):
        query = load(query)
    ctx = Ctx(store, float(t), options, cache_for(store, options))
    return query.runner(options)(ctx)
