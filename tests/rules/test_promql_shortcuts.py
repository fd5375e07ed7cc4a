"""Evaluation shortcuts that must not change any result or error: skipping the right operand of
``and``/``unless``/matching operators when the left is empty and the right cannot fail, and
dropping staleness markers from windows by their bit pattern."""

from __future__ import annotations

import math
import random
import struct
from array import array

import pytest

from inferwatch.clock import FakeClock
from inferwatch.rules.promql import EvalError, evaluate, load
from inferwatch.rules.promql_safe import cannot_fail
from inferwatch.rules.promql_select import _drop_markers
from inferwatch.store.labels import make_labels
from inferwatch.store.series import STALE_NAN, is_stale
from inferwatch.store.tsdb import SeriesStore


@pytest.mark.parametrize(
    ("expr", "safe"),
    [
        ("x", True),
        ("x > 1", True),
        ("2 < x", True),
        ("x > bool 1", False),  # drops the name: label sets may collide
        ("x * 2", False),
        ("time() - last_over_time(x[1h]) > 30", False),  # vector - scalar arithmetic
        ("last_over_time(x[1h]) > 0", True),
        ("quantile_over_time(0.5, x[5m]) < 3", True),
        ('rate({__name__=~"x|y"}[5m])', False),  # no one name: outputs may collide
        ("min_over_time(x[2m]) == 1 and on(job) y offset 5m == 1", True),
        ("x or y", True),
        ("x unless y", True),
        ("x < on(job) group_left() y", False),  # matching can fail
        ("sum(x)", False),
        ("-x", False),
        ("abs(x)", False),
        ("vector(1)", False),
    ],
)
def test_cannot_fail(expr: str, safe: bool) -> None:
    assert cannot_fail(load(expr).ast) is safe


def _store() -> SeriesStore:
    store = SeriesStore(FakeClock(0.0))
    store.set("m", make_labels({"job": "a", "inst": "1"}), 1.0, 0.0)
    store.set("m", make_labels({"job": "a", "inst": "2"}), 2.0, 0.0)
    store.set("n", make_labels({"job": "a"}), 10.0, 0.0)
    store.set("x", make_labels({"job": "a"}), 1.0, 0.0)
    return store


@pytest.mark.parametrize(
    "expr",
    [
        "nothing and (n + on(job) m)",  # the right side fails on its own: still evaluated
        "nothing unless (n + on(job) m)",
        "nothing < on(job) (n + on(job) m)",
    ],
)
def test_an_empty_left_side_still_raises_the_right_sides_error(expr: str) -> None:
    with pytest.raises(EvalError, match="many-to-many matching not allowed"):
        evaluate(load(expr), _store(), 0.0)


@pytest.mark.parametrize(
    ("expr", "count"),
    [
        ("nothing and x", 0),
        ("x and nothing", 0),
        ("x and on(job) m > 1", 1),
        ("x unless on(job) m > 5", 1),
        ("nothing unless x", 0),
        ("x > on(job) group_left() n", 0),
        ("n > on(job) group_right() x", 1),
        ("nothing or x", 1),
    ],
)
def test_results_are_unchanged(expr: str, count: int) -> None:
    assert len(evaluate(load(expr), _store(), 0.0)) == count  # type: ignore[arg-type]


def _reference(ts: array[float], vs: array[float]) -> tuple[array[float], array[float]]:
    keep = [i for i, v in enumerate(vs) if not (math.isnan(v) and is_stale(v))]
    return array("d", (ts[i] for i in keep)), array("d", (vs[i] for i in keep))


def test_drop_markers_matches_a_sample_by_sample_filter() -> None:
    rng = random.Random(7)
    # Two samples whose bytes hold the marker's pattern across their boundary: not a marker.
    marker = struct.pack("<d", STALE_NAN)
    lo = struct.unpack("<d", b"\x00" * 5 + marker[:3])[0]
    hi = struct.unpack("<d", marker[3:] + b"\x00" * 3)[0]
    choices = [STALE_NAN, math.nan, -math.nan, 1.0, 0.0, -0.0, math.inf, lo, hi]
    for _ in range(3000):
        n = rng.randrange(0, 30)
        vs = array("d", [rng.choice(choices) for _ in range(n)])
        if n >= 2 and rng.random() < 0.2:
            vs[0], vs[1] = lo, hi
        ts = array("d", [float(i) for i in range(n)])
        got, want = _drop_markers(ts, vs), _reference(ts, vs)
        assert got[0] == want[0]
        assert got[1].tobytes() == want[1].tobytes()
