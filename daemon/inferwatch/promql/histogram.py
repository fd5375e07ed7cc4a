"""``histogram_quantile`` over classic (``le``-labelled) buckets, as Prometheus 2.42 computes it.

Buckets are grouped by every label but ``le`` (the metric name included: two histograms that
differ only by name give two results with one label set, which is an error, as in Prometheus);
the output drops ``le`` and the name. Interpolation is linear inside the bucket holding the rank
(promql.md §6).
"""

from __future__ import annotations

import math

from inferwatch.golang.floats import go_div, parse_go_float
from inferwatch.labels import Labels
from inferwatch.promql.types import Sample, Vector, check_unique


def _search(n: int, counts: list[float], rank: float) -> int:
    """Go's ``sort.Search``: the first index in [0, n) whose count is ≥ rank (binary search)."""
    lo, hi = 0, n
    while lo < hi:
        mid = (lo + hi) // 2
        if not counts[mid] >= rank:
            lo = mid + 1
        else:
            hi = mid
    return lo


def bucket_quantile(q: float, buckets: list[tuple[float, float]]) -> float:
    """The q-quantile of (upper bound, cumulative count) pairs."""
    if math.isnan(q):
        return math.nan
    if q < 0:
        return -math.inf
    if q > 1:
        return math.inf
    buckets = sorted(buckets, key=lambda b: b[0])
    if buckets[-1][0] != math.inf:
        return math.nan
    bounds: list[float] = []
    counts: list[float] = []
    for bound, count in buckets:  # merge equal bounds ("1" and "1.0")
        if bounds and bounds[-1] == bound:
            counts[-1] += count
        else:
            bounds.append(bound)
            counts.append(count)
    top = -math.inf
    for i, count in enumerate(counts):  # a count below an earlier one is raised to it
        if count > top:
            top = count
        elif count < top:
            counts[i] = top
    if len(counts) < 2:
        return math.nan
    observations = counts[-1]
    if observations == 0:
        return math.nan
    rank = q * observations
    b = _search(len(counts) - 1, counts, rank)
    if b == len(counts) - 1:
        return bounds[-2]
    if b == 0 and bounds[0] <= 0:
        return bounds[0]
    start = 0.0
    end = bounds[b]
    count = counts[b]
    if b > 0:
        start = bounds[b - 1]
        count -= counts[b - 1]
        rank -= counts[b - 1]
    return start + (end - start) * go_div(rank, count)


def histogram_quantile(q: float, vec: Vector) -> Vector:
    groups: dict[tuple[str, Labels], list[tuple[float, float]]] = {}
    for s in vec:
        le = ""
        rest: list[tuple[str, str]] = []
        for pair in s.labels:
            if pair[0] == "le":
                le = pair[1]
            else:
                rest.append(pair)
        bound = parse_go_float(le)
        if bound is None:
            continue
        groups.setdefault((s.name, tuple(rest)), []).append((bound, s.value))
    out = [Sample("", labels, bucket_quantile(q, b)) for (_, labels), b in groups.items()]
    check_unique(out)
    return out
