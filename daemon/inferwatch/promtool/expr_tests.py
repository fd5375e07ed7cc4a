"""The ``promql_expr_test`` half of ``promtool test rules``, over our evaluator.

promtool loads input samples only up to the last evaluation-loop time ≤ the group's largest
``eval_time`` (the loop steps by ``evaluation_interval``), then runs each expression as an instant
query and compares with ``exp_samples``: both sides sorted by labels, exact label sets, exact float
equality (so NaN never matches). Failures read like promtool's (promql.md §9). Recorded series
from rule files are the rules engine's part; :func:`check_expr_test` takes a store it filled.
"""

from __future__ import annotations

from dataclasses import dataclass

from inferwatch.clock import FakeClock
from inferwatch.golang.floats import format_go_e
from inferwatch.golang.strings import go_quote
from inferwatch.promql.engine import EvalOptions, PromQLError, Scalar, String, evaluate, load
from inferwatch.promql.types import DEFAULT_OPTIONS, format_metric
from inferwatch.promtool.testfile import (
    PromqlExprTest,
    RuleTestFile,
    TestGroup,
    format_duration_ms,
    load_input_series,
)
from inferwatch.store.tsdb import SeriesStore

_Pairs = tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True)
class ExprFailure:
    group: int
    test: PromqlExprTest
    message: str


def _render(samples: list[tuple[_Pairs, float]]) -> str:
    if not samples:
        return "nil"
    return ", ".join(f"{format_metric('', labels)} {format_go_e(v)}" for labels, v in samples)


def _sorted(samples: list[tuple[_Pairs, float]]) -> list[tuple[_Pairs, float]]:
    return sorted(samples, key=lambda s: s[0])


def check_expr_test(
    test: PromqlExprTest, store: SeriesStore, options: EvalOptions = DEFAULT_OPTIONS
) -> str | None:
    """None if the expression gives the expected samples at its eval_time, else promtool's text."""
    head = f"    expr: {go_quote(test.expr)}, time: {format_duration_ms(test.eval_time_ms)}"
    try:
        result = evaluate(load(test.expr), store, test.eval_time_ms / 1000, options)
    except PromQLError as exc:
        return f"{head}, err: {exc}"
    if isinstance(result, String):
        return f"{head}, err: rule result is not a vector or scalar"
    got: list[tuple[_Pairs, float]]
    if isinstance(result, Scalar):
        got = [((), result.value)]
    else:
        got = [(s.metric(), s.value) for s in result]
    exp = [(tuple(sorted((*s.labels, *_name_pair(s.name)))), s.value) for s in test.exp_samples]
    got, exp = _sorted(got), _sorted(exp)
    same = len(got) == len(exp) and all(
        g[0] == e[0] and g[1] == e[1] for g, e in zip(got, exp, strict=True)
    )
    if same:
        return None
    return f"{head},\n        exp: {_render(exp)}\n        got: {_render(got)}"


def _name_pair(name: str) -> _Pairs:
    return (("__name__", name),) if name else ()


def load_limit_ms(group: TestGroup, evaluation_interval_ms: int) -> int:
    """The last evaluation-loop time ≤ the group's largest eval_time: input stops there."""
    maxt = group.max_eval_time_ms()
    if evaluation_interval_ms <= 0:
        return maxt
    return (maxt // evaluation_interval_ms) * evaluation_interval_ms


def run_expr_tests(
    test_file: RuleTestFile, options: EvalOptions = DEFAULT_OPTIONS
) -> list[ExprFailure]:
    """Run every ``promql_expr_test`` of the file over its input series (no rule files)."""
    failures: list[ExprFailure] = []
    for i, group in enumerate(test_file.tests):
        store = SeriesStore(FakeClock(0.0), retention_s=float("inf"))
        load_input_series(store, group, load_limit_ms(group, test_file.evaluation_interval_ms))
        for test in group.promql_expr_tests:
            message = check_expr_test(test, store, options)
            if message is not None:
                failures.append(ExprFailure(i, test, message))
    return failures
