"""Counter arithmetic shared by the store's users and the PromQL evaluator.

``extrapolated_delta`` is Prometheus's algorithm behind ``rate``, ``increase`` and ``delta``
(reference/promql.md §3.1): counter resets are bridged, the result is extrapolated towards the
range edges unless the gap there is longer than 1.1 average intervals, and a counter is never
extrapolated below zero.
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import le


def reset_corrected_increase(values: Sequence[float]) -> float:
    """``last - first`` with every drop treated as a restart from zero."""
    if len(values) < 2:
        return 0.0
    result = values[-1] - values[0]
    if all(map(le, values, values[1:])):  # no drop at all (the usual window), checked in C
        return result
    prev = values[0]
    for v in values[1:]:
        if v < prev:
            result += prev
        prev = v
    return result


def extrapolated_delta(
    ts: Sequence[float],
    vs: Sequence[float],
    range_start: float,
    range_end: float,
    *,
    is_counter: bool,
    is_rate: bool,
) -> float | None:
    """``rate``/``increase`` (``is_counter``) or ``delta`` over the samples of one range.

    Returns None when fewer than two samples are given (Prometheus outputs nothing then).
    """
    n = len(vs)
    if n < 2:
        return None
    result = reset_corrected_increase(vs) if is_counter else vs[-1] - vs[0]
    return extrapolate(
        ts[0], ts[-1], vs[0], result, n, range_start, range_end,
        is_counter=is_counter, is_rate=is_rate,
    )  # fmt: skip


def extrapolate(
    first_t: float,
    last_t: float,
    first_v: float,
    result: float,
    n: int,
    range_start: float,
    range_end: float,
    *,
    is_counter: bool,
    is_rate: bool,
) -> float:
    """The second half of :func:`extrapolated_delta`: ``result`` (the window's increase or
    delta) over ``n >= 2`` samples from ``first_t`` to ``last_t``, extended to the range."""
    to_start = first_t - range_start
    to_end = range_end - last_t
    sampled = last_t - first_t
    avg = sampled / (n - 1)
    if is_counter and result > 0 and first_v >= 0:
        to_zero = sampled * (first_v / result)  # this grouping, as Prometheus: last-bit parity
        to_start = min(to_start, to_zero)
    threshold = avg * 1.1
    extended = sampled
    extended += to_start if to_start < threshold else avg / 2
    extended += to_end if to_end < threshold else avg / 2
    factor = extended / sampled
    if is_rate:
        factor /= range_end - range_start
    return result * factor
