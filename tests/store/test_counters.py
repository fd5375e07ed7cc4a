"""Numbers from reference/promql.md §3.1 (promtool 2.42 results)."""

from __future__ import annotations

import math
import random
from array import array

import pytest

from inferwatch.store.counters import extrapolated_delta, reset_corrected_increase


def series(values: list[float | None], step: float = 60.0) -> tuple[list[float], list[float]]:
    ts = [i * step for i, v in enumerate(values) if v is not None]
    vs = [v for v in values if v is not None]
    return ts, vs


def window(values: list[float | None], t: float, r: float) -> tuple[list[float], list[float]]:
    ts, vs = series(values)
    pairs = [(a, b) for a, b in zip(ts, vs, strict=True) if t - r <= a <= t]
    return [a for a, _ in pairs], [b for _, b in pairs]


def increase(values: list[float | None], t: float, r: float) -> float | None:
    ts, vs = window(values, t, r)
    return extrapolated_delta(ts, vs, t - r, t, is_counter=True, is_rate=False)


C = [float(10 * i) for i in range(11)]


@pytest.mark.parametrize(
    ("values", "t", "r", "expected"),
    [
        (C, 300, 300, 50),
        (C, 300, 270, 45),
        (C, 300, 330, 50),
        (C, 330, 300, 50),
        (C, 300, 60, 10),
        ([5, 10, 15, 2, 7, 12], 300, 300, 22),
        ([None, None, None, 100, 110, 120], 300, 300, 25),
        ([0, 0, 5], 120, 180, 5),
        ([-5, 0, 5, 10], 180, 180, 15),
        ([5, 10, None, None, 20], 360, 360, 22.5),
    ],
)
def test_increase_matches_promtool(
    values: list[float | None], t: float, r: float, expected: float
) -> None:
    assert increase(values, t, r) == pytest.approx(expected, rel=1e-12)


def test_rate_factor_order_shows_in_the_last_bit() -> None:
    ts, vs = window(C, 300, 300)
    assert extrapolated_delta(ts, vs, 0, 300, is_counter=True, is_rate=True) == 0.16666666666666669


def test_delta_does_not_bridge_resets() -> None:
    ts, vs = window([10, 30, 20, 50], 180, 150)
    assert extrapolated_delta(ts, vs, 30, 180, is_counter=False, is_rate=False) == 25


def test_single_sample_gives_nothing() -> None:
    assert increase([7], 180, 180) is None


def test_reset_helpers() -> None:
    assert reset_corrected_increase([5, 10, 15, 2, 7, 12]) == 22


def test_reset_correction_matches_a_sample_by_sample_reading() -> None:
    """The no-drop shortcut gives what walking the samples gives, NaNs and repeats included."""

    def walk(values: array[float]) -> float:
        if len(values) < 2:
            return 0.0
        total, prev = values[-1] - values[0], values[0]
        for v in values[1:]:
            if v < prev:
                total += prev
            prev = v
        return total

    rng = random.Random(3)
    choices = [0.0, 1.0, 2.0, 5.0, 3.0, math.nan, math.inf]
    for _ in range(5000):
        values = array("d", [rng.choice(choices) for _ in range(rng.randrange(0, 9))])
        got, want = reset_corrected_increase(values), walk(values)
        assert got == want or (math.isnan(got) and math.isnan(want)), list(values)
