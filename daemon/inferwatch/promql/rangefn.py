"""Functions over one series' samples in a range (``rate``, ``*_over_time``, ``deriv``, …).

Each takes the window's timestamp and value columns (``array('d')`` slices straight from the
store, markers already removed, never empty) and a :class:`RangeInfo`, and returns the value or
None (no output for that series). The sums are compensated exactly where Prometheus 2.42's are
(promql.md §3.2), because the last bit shows in promtool's exact comparison.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Callable
from typing import NamedTuple, TypeAlias

from inferwatch.golang.floats import go_div, quantile
from inferwatch.store.counters import extrapolated_delta

Column: TypeAlias = "array[float]"


class RangeInfo(NamedTuple):
    """Where the range lies; ``t`` is the evaluation time; ``param`` a scalar argument."""

    start: float
    end: float
    t: float
    param: float = 0.0


RangeFn = Callable[[Column, Column, RangeInfo], float | None]


def _kahan_inc(inc: float, total: float, c: float) -> tuple[float, float]:
    """One Kahan-Neumaier step; returns the new sum and compensation."""
    t = total + inc
    if abs(total) >= abs(inc):
        c += (total - t) + inc
    else:
        c += (inc - t) + total
    return t, c


def rate(ts: Column, vs: Column, info: RangeInfo) -> float | None:
    return extrapolated_delta(ts, vs, info.start, info.end, is_counter=True, is_rate=True)


def increase(ts: Column, vs: Column, info: RangeInfo) -> float | None:
    return extrapolated_delta(ts, vs, info.start, info.end, is_counter=True, is_rate=False)


def delta(ts: Column, vs: Column, info: RangeInfo) -> float | None:
    return extrapolated_delta(ts, vs, info.start, info.end, is_counter=False, is_rate=False)


def _instant(ts: Column, vs: Column, *, is_rate: bool) -> float | None:
    if len(vs) < 2:
        return None
    last, prev = vs[-1], vs[-2]
    result = last if is_rate and last < prev else last - prev
    gap = ts[-1] - ts[-2]
    if gap == 0:
        return None
    return result / gap if is_rate else result


def irate(ts: Column, vs: Column, info: RangeInfo) -> float | None:
    return _instant(ts, vs, is_rate=True)


def idelta(ts: Column, vs: Column, info: RangeInfo) -> float | None:
    return _instant(ts, vs, is_rate=False)


def changes(ts: Column, vs: Column, info: RangeInfo) -> float | None:
    count = 0
    prev = vs[0]
    for v in vs[1:]:
        if v != prev and not (math.isnan(v) and math.isnan(prev)):
            count += 1
        prev = v
    return float(count)


def resets(ts: Column, vs: Column, info: RangeInfo) -> float | None:
    count = 0
    prev = vs[0]
    for v in vs[1:]:
        if v < prev:
            count += 1
        prev = v
    return float(count)


def _regression(ts: Column, vs: Column, t_ref: float) -> tuple[float, float]:
    """Least squares of v over (t - t_ref) with compensated sums; (slope, intercept)."""
    first = vs[0]
    if all(v == first for v in vs):
        return (math.nan, math.nan) if math.isinf(first) else (0.0, first)
    n = float(len(vs))
    sx = cx = sy = cy = sxy = cxy = sx2 = cx2 = 0.0
    for t, v in zip(ts, vs, strict=True):
        x = t - t_ref
        sx, cx = _kahan_inc(x, sx, cx)
        sy, cy = _kahan_inc(v, sy, cy)
        sxy, cxy = _kahan_inc(x * v, sxy, cxy)
        sx2, cx2 = _kahan_inc(x * x, sx2, cx2)
    sx += cx
    sy += cy
    sxy += cxy
    sx2 += cx2
    cov = sxy - sx * sy / n
    var = sx2 - sx * sx / n
    slope = go_div(cov, var)
    return slope, sy / n - slope * sx / n


def deriv(ts: Column, vs: Column, info: RangeInfo) -> float | None:
    if len(vs) < 2:
        return None
    return _regression(ts, vs, ts[0])[0]


def predict_linear(ts: Column, vs: Column, info: RangeInfo) -> float | None:
    if len(vs) < 2:
        return None
    slope, intercept = _regression(ts, vs, info.t)
    return slope * info.param + intercept


def sum_over_time(ts: Column, vs: Column, info: RangeInfo) -> float | None:
    total = c = 0.0
    for v in vs:  # _kahan_inc, inlined: this is a hot loop
        t = total + v
        if abs(total) >= abs(v):
            c += (total - t) + v
        else:
            c += (v - t) + total
        total = t
    return total if math.isinf(total) else total + c


def _avg_finite(vs: Column) -> float:
    """avg_over_time for finite samples (the common case): no infinity checks needed."""
    mean = c = 0.0
    count = 0.0
    for v in vs:
        count += 1
        inc = v / count - mean / count
        t = mean + inc
        if abs(mean) >= abs(inc):
            c += (mean - t) + inc
        else:
            c += (inc - t) + mean
        mean = t
    return mean + c


def avg_over_time(ts: Column, vs: Column, info: RangeInfo) -> float | None:
    if math.isfinite(sum(vs)):
        result = _avg_finite(vs)
        if math.isfinite(result):  # else the mean overflowed: take the careful path
            return result
    mean = c = 0.0
    count = 0.0
    for v in vs:
        count += 1
        if math.isinf(mean):
            if math.isinf(v) and (mean > 0) == (v > 0):
                continue
            if not math.isinf(v) and not math.isnan(v):
                continue
        mean, c = _kahan_inc(v / count - mean / count, mean, c)
    return mean if math.isinf(mean) else mean + c


def _variance(vs: Column) -> float:
    count = 0.0
    mean = c_mean = aux = c_aux = 0.0
    for v in vs:  # two _kahan_inc steps, inlined
        count += 1
        d = v - (mean + c_mean)
        inc = d / count
        t = mean + inc
        if abs(mean) >= abs(inc):
            c_mean += (mean - t) + inc
        else:
            c_mean += (inc - t) + mean
        mean = t
        inc = d * (v - (mean + c_mean))
        t = aux + inc
        if abs(aux) >= abs(inc):
            c_aux += (aux - t) + inc
        else:
            c_aux += (inc - t) + aux
        aux = t
    return (aux + c_aux) / count


def stdvar_over_time(ts: Column, vs: Column, info: RangeInfo) -> float | None:
    return _variance(vs)


def stddev_over_time(ts: Column, vs: Column, info: RangeInfo) -> float | None:
    var = _variance(vs)
    return math.nan if var < 0 else math.sqrt(var)


def min_over_time(ts: Column, vs: Column, info: RangeInfo) -> float | None:
    best = vs[0]
    for v in vs:
        if v < best or math.isnan(best):
            best = v
    return best


def max_over_time(ts: Column, vs: Column, info: RangeInfo) -> float | None:
    best = vs[0]
    for v in vs:
        if v > best or math.isnan(best):
            best = v
    return best


def count_over_time(ts: Column, vs: Column, info: RangeInfo) -> float | None:
    return float(len(vs))


def last_over_time(ts: Column, vs: Column, info: RangeInfo) -> float | None:
    return vs[-1]


def present_over_time(ts: Column, vs: Column, info: RangeInfo) -> float | None:
    return 1.0


def quantile_over_time(ts: Column, vs: Column, info: RangeInfo) -> float | None:
    return quantile(info.param, vs)


RANGE_FUNCTIONS: dict[str, RangeFn] = {
    "rate": rate,
    "increase": increase,
    "delta": delta,
    "irate": irate,
    "idelta": idelta,
    "changes": changes,
    "resets": resets,
    "deriv": deriv,
    "predict_linear": predict_linear,
    "sum_over_time": sum_over_time,
    "avg_over_time": avg_over_time,
    "min_over_time": min_over_time,
    "max_over_time": max_over_time,
    "count_over_time": count_over_time,
    "last_over_time": last_over_time,
    "present_over_time": present_over_time,
    "stddev_over_time": stddev_over_time,
    "stdvar_over_time": stdvar_over_time,
    "quantile_over_time": quantile_over_time,
}
