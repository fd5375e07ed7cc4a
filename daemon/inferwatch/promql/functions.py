"""The function table: every PromQL function inferwatch evaluates, with its signature and builder.

A name missing here is refused at load, even when ``promql-parser`` knows it (it follows newer
Prometheus releases: ``mad_over_time``, ``sort_by_label``, … are not in 2.42). Adding a function is
one builder and one table line. Builders run at load: they compile their operands and return the
closure that runs at each evaluation. All functions drop ``__name__`` except ``last_over_time``,
``label_replace``, ``label_join``, ``sort`` and ``sort_desc`` (promql.md §2, §6).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Final, NamedTuple

from inferwatch.golang.floats import MATH, go_div, go_max, go_min, quantile, quantile_of_sorted
from inferwatch.promql.ast import (
    Call,
    Expr,
    MatrixSelector,
    StringLiteral,
    ValueType,
    VectorSelector,
)
from inferwatch.promql.context import Compiler, Ctx, ScalarFn, VectorFn
from inferwatch.promql.dates import DATE_PARTS, date_part
from inferwatch.promql.histogram import histogram_quantile
from inferwatch.promql.labelfn import absent_labels, label_joiner, label_replacer
from inferwatch.promql.rangefn import RANGE_FUNCTIONS, RangeFn, RangeInfo
from inferwatch.promql.select import (
    instant,
    newest_in_range,
    range_bounds,
    spans,
    window_in,
    windows,
)
from inferwatch.promql.sliding import KeptWindows
from inferwatch.promql.types import PromQLError, Sample, Vector, check_unique
from inferwatch.store.counters import extrapolate
from inferwatch.store.series import Series

VectorBuilder = Callable[[Call, Compiler], VectorFn]
ScalarBuilder = Callable[[Call, Compiler], ScalarFn]

S, V, M, STR = ValueType.SCALAR, ValueType.VECTOR, ValueType.MATRIX, ValueType.STRING


class FunctionSpec(NamedTuple):
    """Argument types (``optional`` trailing ones may be left out; ``variadic``: the last type
    repeats) and exactly one builder, for the return type."""

    args: tuple[ValueType, ...]
    vector: VectorBuilder | None = None
    scalar: ScalarBuilder | None = None
    optional: int = 0
    variadic: bool = False

    @property
    def returns(self) -> ValueType:
        return ValueType.VECTOR if self.vector is not None else ValueType.SCALAR


def _matrix_arg(call: Call) -> MatrixSelector:
    for arg in call.args:
        if isinstance(arg, MatrixSelector):
            return arg
    raise PromQLError(f"{call.func}(): expected a range vector selector (subqueries unsupported)")


def _string_arg(call: Call, i: int) -> str:
    arg = call.args[i]
    if not isinstance(arg, StringLiteral):
        raise PromQLError(f"{call.func}(): argument {i + 1} must be a string literal")
    return arg.value


def _counter_range(name: str) -> VectorBuilder:
    """``rate``/``increase``: where no sample of a window is NaN or below the one before it
    (``Series.irregular``), the reset-corrected increase is last minus first, read in place;
    elsewhere the general path of :func:`_range` (markers dropped, resets bridged)."""
    fn = RANGE_FUNCTIONS[name]
    is_rate = name == "rate"

    def build(call: Call, c: Compiler) -> VectorFn:
        msel = _matrix_arg(call)
        may_collide = msel.selector.name is None

        def run(ctx: Ctx) -> Vector:
            start, end = range_bounds(ctx, msel)
            info: RangeInfo | None = None
            out: Vector = []
            in_place = ctx.options.plan
            for s, lo, hi in spans(ctx, msel):
                if in_place and s.irregular < lo:
                    if hi - lo < 2:
                        continue
                    ts, vs = s.ts, s.vs
                    first = vs[lo]
                    v: float | None = extrapolate(
                        ts[lo], ts[hi - 1], first, vs[hi - 1] - first, hi - lo, start, end,
                        is_counter=True, is_rate=is_rate,
                    )  # fmt: skip
                else:
                    info = info or RangeInfo(start, end, ctx.t)
                    v = _read_window(ctx, fn, s, lo, hi, info)
                if v is not None:
                    out.append(Sample("", s.labels, v))
            if may_collide:
                check_unique(out)
            return out

        return run

    return build


# Functions of the window's samples alone (neither its bounds nor the evaluation time): the
# same window gives the same value, so a call site keeps each series' last one.
_OF_WINDOW_ONLY = frozenset(
    {
        *("avg_over_time", "sum_over_time", "min_over_time", "max_over_time"),
        *("stddev_over_time", "stdvar_over_time", "present_over_time", "changes", "resets"),
    }
)


def _range(name: str, *, keep_name: bool = False) -> VectorBuilder:
    fn = RANGE_FUNCTIONS[name]

    def build(call: Call, c: Compiler) -> VectorFn:
        msel = _matrix_arg(call)
        params = [c.scalar(a) for a in call.args if a is not msel]
        param = params[0] if params else None
        # One metric name means the (name-dropped) outputs cannot collide.
        may_collide = not keep_name and msel.selector.name is None
        if c.options.plan and name in _OF_WINDOW_ONLY:
            return _window_values(fn, msel, may_collide)

        def run(ctx: Ctx) -> Vector:
            start, end = range_bounds(ctx, msel)
            info = RangeInfo(start, end, ctx.t, param(ctx) if param is not None else 0.0)
            out: Vector = []
            for s, ts, vs in windows(ctx, msel):
                v = fn(ts, vs, info)
                if v is not None:
                    out.append(Sample(s.name if keep_name else "", s.labels, v))
            if may_collide:
                check_unique(out)
            return out

        return run

    return build


def _window_values(fn: RangeFn, msel: MatrixSelector, may_collide: bool) -> VectorFn:
    """A function of the window's samples alone, each series' value kept with the window it
    came from: ``(Series.version, first index, end index)`` equal means the same samples (a
    version counts every change but an append), hence the same value, bit for bit. A rule
    evaluated every second over samples every few seconds reads most windows unchanged."""
    kept: dict[Series, tuple[int, int, int, float | None]] = {}

    def run(ctx: Ctx) -> Vector:
        nonlocal kept
        old, kept = kept, {}
        info = RangeInfo(*range_bounds(ctx, msel), ctx.t)
        for s, lo, hi in spans(ctx, msel):
            was = old.get(s)
            if was is not None and was[0] == s.version and was[1] == lo and was[2] == hi:
                kept[s] = was
            else:
                kept[s] = (s.version, lo, hi, _read_window(ctx, fn, s, lo, hi, info))
        out = [Sample("", s.labels, v) for s, (*_, v) in kept.items() if v is not None]
        if may_collide:
            check_unique(out)
        return out

    return run


def _read_window(
    ctx: Ctx, fn: RangeFn, s: Series, lo: int, hi: int, info: RangeInfo
) -> float | None:
    """``fn`` over the samples of ``s[lo:hi]`` (markers dropped); None when none is left."""
    found = window_in(ctx, s, lo, hi)
    return None if found is None else fn(*found, info)


def _kept_range(name: str) -> VectorBuilder:
    """``quantile_over_time`` and ``count_over_time`` with their windows kept between
    evaluations (:mod:`promql.sliding`); without ``plan``, the ordinary :func:`_range`."""
    plain = _range(name)
    sort = name == "quantile_over_time"

    def build(call: Call, c: Compiler) -> VectorFn:
        if not c.options.plan:
            return plain(call, c)
        fallback = plain(call, c)
        msel = _matrix_arg(call)
        param = c.scalar(call.args[0]) if sort else None
        kept = KeptWindows(sort=sort)

        def run(ctx: Ctx) -> Vector:
            q = param(ctx) if param is not None else 0.0
            if sort and not 0.0 <= q <= 1.0:  # NaN or out of range: the ordinary path
                return fallback(ctx)
            old = kept.start()
            out: Vector = []
            for s, lo, hi in spans(ctx, msel):
                window = kept.read(ctx, old, s, lo, hi)
                if window is None:  # a NaN that is no marker: read it the ordinary way
                    found = window_in(ctx, s, lo, hi)
                    if found is not None:
                        out.append(Sample("", s.labels, quantile(q, found[1])))
                elif window.count:
                    values = window.values
                    v = quantile_of_sorted(q, values) if values is not None else window.count
                    out.append(Sample("", s.labels, float(v)))
            if msel.selector.name is None:
                check_unique(out)
            return out

        return run

    return build


def _elementwise(fn: Callable[[float], float]) -> VectorBuilder:
    def build(call: Call, c: Compiler) -> VectorFn:
        arg = c.vector(call.args[0])

        def run(ctx: Ctx) -> Vector:
            out = [Sample("", s.labels, fn(s.value)) for s in arg(ctx)]
            check_unique(out)
            return out

        return run

    return build


def _with_params(
    fn: Callable[[float, list[float]], float],
    empty_if: Callable[[list[float]], bool] = lambda _p: False,
) -> VectorBuilder:
    """An element-wise function with scalar parameters (``round``, ``clamp``); ``empty_if`` says
    when the parameters alone empty the result (``clamp`` with min > max)."""

    def build(call: Call, c: Compiler) -> VectorFn:
        arg = c.vector(call.args[0])
        params = [c.scalar(a) for a in call.args[1:]]

        def run(ctx: Ctx) -> Vector:
            values = [p(ctx) for p in params]
            vec = arg(ctx)
            if empty_if(values):
                return []
            out = [Sample("", s.labels, fn(s.value, values)) for s in vec]
            check_unique(out)
            return out

        return run

    return build


def _round(v: float, p: list[float]) -> float:
    inverse = go_div(1.0, p[0]) if p else 1.0
    return go_div(MATH["floor"](v * inverse + 0.5), inverse)


def _clamp(v: float, p: list[float]) -> float:
    return go_max(p[0], go_min(p[1], v))


def _timestamp(call: Call, c: Compiler) -> VectorFn:
    node = call.args[0]
    if isinstance(node, VectorSelector):
        sel = node

        def stamps(ctx: Ctx) -> Vector:
            out = [Sample("", s.labels, s.value) for s in instant(ctx, sel, stamp=True)]
            check_unique(out)
            return out

        return stamps
    arg = c.vector(node)

    def now(ctx: Ctx) -> Vector:
        out = [Sample("", s.labels, ctx.t) for s in arg(ctx)]
        check_unique(out)
        return out

    return now


def _label_replace(call: Call, c: Compiler) -> VectorFn:
    arg = c.vector(call.args[0])
    work = label_replacer(*(_string_arg(call, i) for i in range(1, 5)))

    def run(ctx: Ctx) -> Vector:
        out = work(arg(ctx))
        check_unique(out)
        return out

    return run


def _label_join(call: Call, c: Compiler) -> VectorFn:
    arg = c.vector(call.args[0])
    srcs = tuple(_string_arg(call, i) for i in range(3, len(call.args)))
    work = label_joiner(_string_arg(call, 1), _string_arg(call, 2), srcs)

    def run(ctx: Ctx) -> Vector:
        out = work(arg(ctx))
        check_unique(out)
        return out

    return run


def _absent(call: Call, c: Compiler) -> VectorFn:
    node: Expr = call.args[0]
    arg = c.vector(node)
    labels = absent_labels(node.matchers) if isinstance(node, VectorSelector) else ()
    return lambda ctx: [] if arg(ctx) else [Sample("", labels, 1.0)]


def _last_over_time(call: Call, c: Compiler) -> VectorFn:
    """``last_over_time``: as the other range functions, but read from the window's end (an
    hour of samples is not copied to take the last one)."""
    msel = _matrix_arg(call)

    def run(ctx: Ctx) -> Vector:
        out: Vector = []
        for s in ctx.cache.series(ctx.store, msel.selector):
            v = newest_in_range(ctx, s, msel)
            if v is not None:
                out.append(Sample(s.name, s.labels, v))
        return out

    return run


def _absent_over_time(call: Call, c: Compiler) -> VectorFn:
    msel = _matrix_arg(call)
    labels = absent_labels(msel.selector.matchers)

    def run(ctx: Ctx) -> Vector:
        for _ in windows(ctx, msel):
            return []
        return [Sample("", labels, 1.0)]

    return run


def _sorter(descending: bool) -> VectorBuilder:
    def build(call: Call, c: Compiler) -> VectorFn:
        arg = c.vector(call.args[0])

        def run(ctx: Ctx) -> Vector:
            vec = arg(ctx)
            nums = sorted((s for s in vec if s.value == s.value), key=lambda s: s.value)
            if descending:
                nums.reverse()
            return nums + [s for s in vec if s.value != s.value]

        return run

    return build


def _histogram_quantile(call: Call, c: Compiler) -> VectorFn:
    q, arg = c.scalar(call.args[0]), c.vector(call.args[1])
    return lambda ctx: histogram_quantile(q(ctx), arg(ctx))


def _date(part: str) -> VectorBuilder:
    def build(call: Call, c: Compiler) -> VectorFn:
        if not call.args:  # the evaluation time, in whole seconds
            return lambda ctx: [Sample("", (), date_part(part, float(math.floor(ctx.t))))]
        arg = c.vector(call.args[0])

        def run(ctx: Ctx) -> Vector:
            out = [Sample("", s.labels, date_part(part, s.value)) for s in arg(ctx)]
            check_unique(out)
            return out

        return run

    return build


def _scalar(call: Call, c: Compiler) -> ScalarFn:
    arg = c.vector(call.args[0])

    def run(ctx: Ctx) -> float:
        vec = arg(ctx)
        return vec[0].value if len(vec) == 1 else math.nan

    return run


def _vector(call: Call, c: Compiler) -> VectorFn:
    arg = c.scalar(call.args[0])
    return lambda ctx: [Sample("", (), arg(ctx))]


def _time(call: Call, c: Compiler) -> ScalarFn:
    return lambda ctx: ctx.t


def _pi(call: Call, c: Compiler) -> ScalarFn:
    return lambda ctx: math.pi


_MATRIX_ONLY = [
    *("rate", "irate", "increase", "delta", "idelta", "changes", "resets", "deriv"),
    *("avg_over_time", "min_over_time", "max_over_time", "sum_over_time"),
    *("stddev_over_time", "stdvar_over_time", "present_over_time"),
]

FUNCTIONS: Final[Mapping[str, FunctionSpec]] = {
    **{name: FunctionSpec((M,), vector=_range(name)) for name in _MATRIX_ONLY},
    **{name: FunctionSpec((M,), vector=_counter_range(name)) for name in ("rate", "increase")},
    "last_over_time": FunctionSpec((M,), vector=_last_over_time),
    "quantile_over_time": FunctionSpec((S, M), vector=_kept_range("quantile_over_time")),
    "count_over_time": FunctionSpec((M,), vector=_kept_range("count_over_time")),
    "predict_linear": FunctionSpec((M, S), vector=_range("predict_linear")),
    "absent_over_time": FunctionSpec((M,), vector=_absent_over_time),
    **{name: FunctionSpec((V,), vector=_elementwise(fn)) for name, fn in MATH.items()},
    "round": FunctionSpec((V, S), vector=_with_params(_round), optional=1),
    "clamp": FunctionSpec((V, S, S), vector=_with_params(_clamp, lambda p: p[1] < p[0])),
    "clamp_min": FunctionSpec((V, S), vector=_with_params(lambda v, p: go_max(p[0], v))),
    "clamp_max": FunctionSpec((V, S), vector=_with_params(lambda v, p: go_min(p[0], v))),
    "absent": FunctionSpec((V,), vector=_absent),
    "scalar": FunctionSpec((V,), scalar=_scalar),
    "vector": FunctionSpec((S,), vector=_vector),
    "time": FunctionSpec((), scalar=_time),
    "pi": FunctionSpec((), scalar=_pi),
    "timestamp": FunctionSpec((V,), vector=_timestamp),
    "label_replace": FunctionSpec((V, STR, STR, STR, STR), vector=_label_replace),
    "label_join": FunctionSpec((V, STR, STR, STR), vector=_label_join, optional=1, variadic=True),
    "sort": FunctionSpec((V,), vector=_sorter(descending=False)),
    "sort_desc": FunctionSpec((V,), vector=_sorter(descending=True)),
    "histogram_quantile": FunctionSpec((S, V), vector=_histogram_quantile),
    **{name: FunctionSpec((V,), vector=_date(name), optional=1) for name in DATE_PARTS},
}
