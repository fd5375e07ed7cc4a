"""Reading samples: the instant lookback and range windows, straight off the store's arrays.

Which series to read comes from :mod:`promql_index`. Staleness markers are skipped here, once, so
no function ever sees one; a window is scanned for them only when it may hold a NaN
(``Series.irregular``) and its sum is NaN. :func:`spans` gives index ranges, for functions that
read a window in place (``rate`` and ``increase`` of a window without reset).
"""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Iterator
from itertools import accumulate, repeat
from math import isnan
from operator import add, mod

from inferwatch.promql.ast import MatrixSelector, VectorSelector
from inferwatch.promql.context import Ctx, Window
from inferwatch.promql.types import Sample, Vector
from inferwatch.store.series import STALE_NAN, Series, is_stale


def ref_time(ctx: Ctx, sel: VectorSelector) -> float:
    """The time a selector reads at: ``@`` (or the evaluation time) minus the offset."""
    at = sel.at
    base = at.timestamp if at is not None and at.kind == "at" else ctx.t
    return base - sel.offset


def instant(ctx: Ctx, sel: VectorSelector, *, stamp: bool = False) -> Vector:
    """The newest sample per series within the lookback; with ``stamp``, its time as value."""
    at = sel.at  # ``ref_time``, inline: every selector of every rule reads through here
    rt = (at.timestamp if at is not None and at.kind == "at" else ctx.t) - sel.offset
    oldest = rt - ctx.options.lookback_s
    left_open = ctx.options.left_open
    out: Vector = []
    for s in ctx.cache.series(ctx.store, sel):
        ts = s.ts
        i = bisect_right(ts, rt, s.start) - 1
        if i < s.start:
            continue
        t = ts[i]
        if t < oldest or (left_open and t == oldest):
            continue
        v = s.vs[i]
        if isnan(v) and is_stale(v):
            continue
        out.append(Sample(s.name, s.labels, t if stamp else v))
    return out


_MARKER = array("d", [STALE_NAN]).tobytes()  # the marker's bytes in the array's own layout


def _drop_markers(ts: array[float], vs: array[float]) -> tuple[array[float], array[float]]:
    """The window without its staleness markers, found by their bit pattern (other NaNs stay):
    the values' bytes split at the pattern and joined again, the times cut at the same places."""
    width = vs.itemsize
    parts = vs.tobytes().split(_MARKER)
    if len(parts) == 1:
        return ts, vs
    sizes = list(map(len, parts))
    if any(map(mod, sizes, repeat(width))):  # the pattern straddling two samples somewhere
        return _drop_markers_stepwise(ts, vs)
    # Part i starts where parts 0..i-1 and their markers end; the times are cut there too
    # (map and accumulate: no Python-level step per marker).
    starts = list(accumulate(map(add, sizes, repeat(width)), initial=0))
    cuts = map(slice, starts, map(add, starts, sizes))
    out_ts, out_vs = array("d"), array("d")
    out_ts.frombytes(b"".join(map(ts.tobytes().__getitem__, cuts)))
    out_vs.frombytes(b"".join(parts))
    return out_ts, out_vs


def _drop_markers_stepwise(ts: array[float], vs: array[float]) -> tuple[array[float], array[float]]:
    """:func:`_drop_markers` testing each match's alignment (for values whose bytes hold the
    pattern across two samples)."""
    raw = vs.tobytes()
    width = vs.itemsize
    out_ts, out_vs = array("d"), array("d")
    kept = 0  # first index not copied yet
    pos = raw.find(_MARKER)
    while pos >= 0:
        if pos % width:  # the pattern straddling two samples: not a marker
            pos = raw.find(_MARKER, pos + 1)
            continue
        i = pos // width
        out_ts.extend(ts[kept:i])
        out_vs.extend(vs[kept:i])
        kept = i + 1
        pos = raw.find(_MARKER, pos + width)
    if kept == 0:
        return ts, vs
    out_ts.extend(ts[kept:])
    out_vs.extend(vs[kept:])
    return out_ts, out_vs


def spans(ctx: Ctx, msel: MatrixSelector) -> Iterator[tuple[Series, int, int]]:
    """Each matching series with the index range ``[lo, hi)`` of its samples in range (markers
    not yet skipped: see :func:`windows`); series with none omitted."""
    sel = msel.selector
    at = sel.at  # ``ref_time``, inline
    end = (at.timestamp if at is not None and at.kind == "at" else ctx.t) - sel.offset
    start = end - msel.range
    left_open = ctx.options.left_open
    for s in ctx.cache.series(ctx.store, sel):
        ts = s.ts
        lo = bisect_left(ts, start, s.start)
        hi = bisect_right(ts, end, lo)
        if left_open and lo < hi and ts[lo] == start:
            lo += 1
        if lo < hi:
            yield s, lo, hi


def window_of(
    s: Series, lo: int, hi: int, plan: bool = True
) -> tuple[array[float], array[float]] | None:
    """The samples ``[lo, hi)`` of ``s`` with staleness markers skipped; None if only markers.
    Without ``plan``, every sample is tested (no NaN-free shortcut, no byte-pattern search)."""
    if not plan:
        kept = [i for i in range(lo, hi) if not is_stale(s.vs[i])]
        if not kept:
            return None
        return array("d", (s.ts[i] for i in kept)), array("d", (s.vs[i] for i in kept))
    ts, vs = s.ts[lo:hi], s.vs[lo:hi]
    # A NaN somewhere (maybe a staleness marker) is possible only up to ``irregular``.
    if s.irregular >= lo and isnan(sum(vs)):
        ts, vs = _drop_markers(ts, vs)
        if not ts:
            return None
    return ts, vs


def window_in(ctx: Ctx, s: Series, lo: int, hi: int) -> Window | None:
    """:func:`window_of` for an evaluation: a window that needs its markers dropped is kept in
    ``ctx.windows`` for the next function reading the same range."""
    plan = ctx.options.plan
    if not plan or s.irregular < lo:
        return window_of(s, lo, hi, plan)
    key = (s, lo, hi)
    kept = ctx.windows
    if key in kept:
        return kept[key]
    found = kept[key] = window_of(s, lo, hi, plan)
    return found


def windows(ctx: Ctx, msel: MatrixSelector) -> Iterator[tuple[Series, array[float], array[float]]]:
    """Each matching series with its samples in range (markers skipped); empty ones omitted."""
    for s, lo, hi in spans(ctx, msel):
        found = window_in(ctx, s, lo, hi)
        if found is not None:
            yield s, *found


def range_bounds(ctx: Ctx, msel: MatrixSelector) -> tuple[float, float]:
    end = ref_time(ctx, msel.selector)
    return end - msel.range, end


def newest_in_range(ctx: Ctx, s: Series, msel: MatrixSelector) -> float | None:
    """The newest sample of ``s`` in ``msel``'s range that is no staleness marker (what
    ``last_over_time`` returns), found from the end without copying the window."""
    sel = msel.selector
    at = sel.at  # ``ref_time``, inline
    end = (at.timestamp if at is not None and at.kind == "at" else ctx.t) - sel.offset
    start = end - msel.range
    left_open = ctx.options.left_open
    ts, vs, first = s.ts, s.vs, s.start
    i = bisect_right(ts, end, first) - 1
    while i >= first:
        t = ts[i]
        if t < start or (left_open and t == start):
            return None
        v = vs[i]
        if not (isnan(v) and is_stale(v)):
            return v
        i -= 1
    return None
