"""Long windows kept between evaluations: ``quantile_over_time`` and ``count_over_time``.

A rule evaluated every 10 s over a 24-hour window sees the same window again each time, a few
samples later: re-copying and re-sorting it (thousands of samples, a quarter of them staleness
markers) dominated the shipped engine rules. Here each call site keeps, per series, the window it
read last, as index bounds into the series' arrays with the window's values in sorted order (or
only its sample count); the next evaluation removes the samples that left the window and inserts
the ones that entered it.

Exactness: the kept values are those a fresh read gives, in the same order. ``sorted`` is stable,
so a fresh sort orders equal values (``0.0`` and ``-0.0``) by time; a new sample is inserted after
its equals and a leaving sample, the oldest of the window, is the first of its equals. Index
bounds name the same samples only while the series changes by appends alone:
``Series.version`` counts every other change (a replaced last value, a raised level, a
compaction that moves the indices), and a changed version, a window that moved backwards or
further than a rebuild costs, or (when sorting) a NaN that is no staleness marker starts afresh;
a window holding such a NaN takes the ordinary path.
"""

from __future__ import annotations

from bisect import bisect_left, insort_right
from dataclasses import dataclass
from math import isnan

from inferwatch.promql.context import Ctx
from inferwatch.promql.select import window_in
from inferwatch.store.series import Series, is_stale


@dataclass(slots=True)
class _Kept:
    version: int
    lo: int
    hi: int
    count: int  # samples in the window, staleness markers not counted
    values: list[float] | None  # sorted (when asked), no NaN


class KeptWindows:
    """One call site's windows, by series; a series not read in an evaluation is forgotten.
    ``sort`` keeps the values in order (``quantile_over_time``), else only their count."""

    __slots__ = ("_kept", "_sort")

    def __init__(self, *, sort: bool) -> None:
        self._kept: dict[Series, _Kept] = {}
        self._sort = sort

    def start(self) -> dict[Series, _Kept]:
        """Begin an evaluation: the windows of the last one, handed to :meth:`read`."""
        old, self._kept = self._kept, {}
        return old

    def read(self, ctx: Ctx, old: dict[Series, _Kept], s: Series, lo: int, hi: int) -> _Kept | None:
        """The window ``[lo, hi)`` of ``s``: its sample count and, when sorting, its values
        in order; None (sorting) when it holds a NaN that is no staleness marker."""
        kept = old.get(s)
        if (
            kept is None
            or kept.version != s.version
            or lo < kept.lo
            or hi < kept.hi
            or lo > kept.hi
            or (lo - kept.lo) + (hi - kept.hi) > max(64, (hi - lo) >> 2)
        ):
            kept = self._fresh(ctx, s, lo, hi)
        else:
            kept = self._moved(kept, s, lo, hi)
        if kept is not None:
            self._kept[s] = kept
        return kept

    def _fresh(self, ctx: Ctx, s: Series, lo: int, hi: int) -> _Kept | None:
        found = window_in(ctx, s, lo, hi)  # markers dropped once per evaluation
        if found is None:
            return _Kept(s.version, lo, hi, 0, [] if self._sort else None)
        vs = found[1]
        if not self._sort:
            return _Kept(s.version, lo, hi, len(vs), None)
        if isnan(sum(vs)) and any(map(isnan, vs)):  # (+Inf and -Inf also sum to NaN)
            return None
        return _Kept(s.version, lo, hi, len(vs), sorted(vs))

    def _moved(self, kept: _Kept, s: Series, lo: int, hi: int) -> _Kept | None:
        values, vs, count = kept.values, s.vs, kept.count
        for i in range(kept.hi, hi):
            v = vs[i]
            if isnan(v):
                if is_stale(v):
                    continue
                if values is not None:
                    return None
            elif values is not None:
                insort_right(values, v)
            count += 1
        for i in range(kept.lo, lo):
            v = vs[i]
            if isnan(v):
                if is_stale(v):
                    continue
            elif values is not None:  # every value in the window is in ``values``
                del values[bisect_left(values, v)]
            count -= 1
        kept.lo, kept.hi, kept.count = lo, hi, count
        return kept
