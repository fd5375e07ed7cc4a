"""What a compiled expression runs with, and the shape of the compiler.

At load, every node of the syntax tree becomes a closure taking one :class:`Ctx`; evaluating a
rule is then one call, with no dispatch on node types left to do per tick. Builders (functions,
aggregations, operators) compile their own operands through the :class:`Compiler` protocol, which
keeps them in their own modules without importing the evaluator.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, TypeAlias

from inferwatch.promql.types import EvalOptions, Vector
from inferwatch.store.series import Series
from inferwatch.store.tsdb import SeriesStore

if TYPE_CHECKING:
    from inferwatch.promql.ast import Expr, VectorSelector


Window: TypeAlias = "tuple[array[float], array[float]]"
"""A window's times and values."""


class Selection(Protocol):
    """Which series of a store a selector matches, sorted by name and labels."""

    def series(self, store: SeriesStore, sel: VectorSelector) -> list[Series]: ...


@dataclass(slots=True)
class Ctx:
    """One evaluation: the store, the time, the options and how selectors find their series."""

    store: SeriesStore
    t: float
    options: EvalOptions
    cache: Selection
    # Results of function calls by their text, shared by the rules of one group evaluation (a
    # shipped rule computes the same increase() on both sides of an `or`); cleared whenever a
    # recording rule writes, since a later call could read what it wrote. Used with plan only.
    memo: dict[str, Vector] = field(default_factory=dict)
    # Windows with staleness markers dropped, by series and index range: two functions of one
    # rule over the same range (quantile_over_time and count_over_time of a 24-h window) drop
    # its markers once. Valid while the store is unchanged: the rule manager clears it after
    # each rule (rules write), a lone query never writes. Used with plan only.
    windows: dict[tuple[Series, int, int], Window | None] = field(default_factory=dict)

    def forget(self) -> None:
        """Drop what was kept (the store changed: a rule wrote)."""
        self.memo.clear()
        self.windows.clear()


ScalarFn = Callable[[Ctx], float]
VectorFn = Callable[[Ctx], Vector]
StringFn = Callable[[Ctx], str]


class Compiler(Protocol):
    #: Compile-time switches: ``options.plan`` says whether to build the fast paths.
    options: EvalOptions

    def scalar(self, node: Expr) -> ScalarFn: ...

    def vector(self, node: Expr) -> VectorFn: ...

    def string(self, node: Expr) -> StringFn: ...
