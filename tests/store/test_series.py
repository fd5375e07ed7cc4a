from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from inferwatch.event import Kind
from inferwatch.store.series import STALE_NAN, Series, is_stale


def make(samples: list[tuple[float, float]]) -> Series:
    s = Series("m", (), Kind.GAUGE)
    for t, v in samples:
        assert s.append(t, v)
    return s


def test_stale_marker_is_not_an_ordinary_nan() -> None:
    assert is_stale(STALE_NAN)
    assert math.isnan(STALE_NAN)
    assert not is_stale(float("nan"))
    assert not is_stale(1.0)


def test_append_orders_and_replaces_equal_timestamps() -> None:
    s = make([(1, 1.0), (2, 2.0)])
    assert not s.append(1.5, 9.0)  # out of order: refused
    assert s.append(2, 3.0)  # same time: replaced
    assert list(s.samples()[1]) == [1.0, 3.0]


def test_window_is_closed_at_both_ends() -> None:
    s = make([(t, t * 10) for t in range(10)])
    ts, vs = s.window(3, 6)
    assert list(ts) == [3, 4, 5, 6]
    assert list(vs) == [30, 40, 50, 60]
    assert s.at_or_before(4.5) == (4, 40)
    assert s.at_or_before(-1) is None


def test_trim_keeps_newest_and_compacts() -> None:
    s = make([(t, t) for t in range(200)])
    s.trim(150)
    assert s.samples()[0][0] == 150
    assert len(s) == 50
    assert len(s.ts) == 50  # compacted once more than half was dead
    s.trim(10_000)
    assert len(s) == 1  # the newest sample always stays
    assert s.last() == (199, 199)


def test_last_real_skips_stale_marker() -> None:
    s = make([(1, 5.0)])
    s.append(2, STALE_NAN)
    assert s.last_real() == (1, 5.0)
    last = s.last()
    assert last is not None and is_stale(last[1])


ops = st.lists(
    st.one_of(
        st.tuples(
            st.just("append"),
            st.sampled_from([0.0, 0.0, 1.0, 5.0]),  # time step (0: the same time again)
            st.sampled_from([1.0, 2.0, 0.0, -3.0, math.nan, STALE_NAN, 100.0]),
        ),
        st.tuples(st.just("trim"), st.integers(0, 40), st.just(0.0)),
    ),
    max_size=120,
)


@settings(max_examples=300, deadline=None)
@given(ops=ops, restored=st.booleans())
def test_irregular_covers_every_nan_and_every_drop(
    ops: list[tuple[str, float, float]], restored: bool
) -> None:
    """After ``irregular`` no sample is NaN or lower than the one before it, whatever the
    appends (same-time replacements included), trims and compactions, and for a series
    restored from a snapshot."""
    s = Series("m", (), Kind.COUNTER)
    t = 0.0
    for op, a, b in ops:
        if op == "append":
            t += a
            s.append(t, b)
        else:
            s.trim(t - a)
    if restored:
        s = Series("m", (), Kind.COUNTER, False, s.ts, s.vs, s.start)
    for i in range(s.irregular + 1, len(s.vs)):
        assert not math.isnan(s.vs[i])
        assert i == 0 or s.vs[i] >= s.vs[i - 1]
