"""What a compiled expression runs with, and the shape of the compiler.

At load, every node of the syntax tree becomes a closure taking one :class:`Ctx`; evaluating a
rule is then one call, with no dispatch on node types left to do per tick. Builders (functions,
aggregations, operators) compile their own operands through the :class:`Compiler` protocol, which
keeps them in their own modules without importing the evaluator.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from inferwatch.promql.types import EvalOptions, Vector
from inferwatch.store.tsdb import SeriesStore

if TYPE_CHECKING:
    from inferwatch.promql.ast import Expr
    from inferwatch.promql.index import SelectionCache


@dataclass(slots=True)
class Ctx:
    """One evaluation: the store, the time, the options and the store's selection cache."""

    store: SeriesStore
    t: float
    options: EvalOptions
    cache: SelectionCache
    # Results of function calls by their text, shared by the rules of one group evaluation (a
    # shipped rule computes the same increase() on both sides of an `or`); cleared whenever a
    # recording rule writes, since a later call could read what it wrote.
    memo: dict[str, Vector] = field(default_factory=dict)


ScalarFn = Callable[[Ctx], float]
VectorFn = Callable[[Ctx], Vector]
StringFn = Callable[[Ctx], str]


class Compiler(Protocol):
    def scalar(self, node: Expr) -> ScalarFn: ...

    def vector(self, node: Expr) -> VectorFn: ...

    def string(self, node: Expr) -> StringFn: ...
