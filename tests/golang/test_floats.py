"""Go float semantics (promql.md §5, §6) and the counters.py parity gap."""

from __future__ import annotations

import math
from array import array

import pytest

from inferwatch.golang.floats import (
    MATH,
    format_go_e,
    format_go_v,
    format_plain,
    go_div,
    go_max,
    go_min,
    go_mod,
    go_pow,
    parse_go_float,
    quantile,
)
from inferwatch.promql.rangefn import RangeInfo, increase

INF, NAN = math.inf, math.nan


def _same(a: float, b: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return a == b and math.copysign(1, a) == math.copysign(1, b)


@pytest.mark.parametrize(
    ("x", "y", "want"),
    [
        (2, 10000, INF),
        (-8, 1 / 3, NAN),
        (0, -1, INF),
        (-0.0, -1, -INF),
        (-0.0, -2, INF),
        (-0.0, 3, -0.0),
        (0, INF, 0.0),
        (0, -INF, INF),
        (-1, INF, 1.0),
        (0.5, INF, 0.0),
        (2, -INF, 0.0),
        (-INF, 3, -INF),
        (-INF, -3, -0.0),
        (INF, -1, 0.0),
        (NAN, 0, 1.0),
        (1, NAN, 1.0),
        (4, 0.5, 2.0),
        (-4, 0.5, NAN),
        (1.5, 7, 17.0859375),
        (2, -2, 0.25),
        (-2, 3, -8.0),
        (10, 308, 1.0000000000000006e308),  # Go's repeated squaring, confirmed by promtool
        (1.1, 10, 2.593742460100002),
        (10, 309, INF),
        (-10, 309, -INF),
    ],
)
def test_pow(x: float, y: float, want: float) -> None:
    assert _same(go_pow(x, y), want)


@pytest.mark.parametrize(
    ("a", "b", "want"),
    [(-5, 3, -2.0), (5, 0, NAN), (-5.5, -2, -1.5), (INF, 2, NAN), (5, INF, 5.0), (5, NAN, NAN)],
)
def test_mod(a: float, b: float, want: float) -> None:
    assert _same(go_mod(a, b), want)


def test_div() -> None:
    assert go_div(1, 0) == INF
    assert go_div(-1, 0) == -INF
    assert go_div(1, -0.0) == -INF
    assert math.isnan(go_div(0, 0))
    assert math.isnan(go_div(NAN, 0))


def test_max_min_propagate_nan_but_infinity_wins() -> None:
    assert math.isnan(go_max(1, NAN))
    assert go_max(INF, NAN) == INF
    assert go_min(-INF, NAN) == -INF
    assert math.isnan(go_min(NAN, 1))
    assert _same(go_max(-0.0, 0.0), 0.0)
    assert _same(go_min(-0.0, 0.0), -0.0)


@pytest.mark.parametrize(
    ("name", "x", "want"),
    [
        ("ln", 0, -INF),
        ("ln", -1, NAN),
        ("log2", 0, -INF),
        ("sqrt", -1, NAN),
        ("exp", 1000, INF),
        ("sinh", -1000, -INF),
        ("cosh", -1000, INF),
        ("acos", 2, NAN),
        ("atanh", 1, INF),
        ("atanh", -1, -INF),
        ("sin", INF, NAN),
        ("ceil", INF, INF),
        ("floor", NAN, NAN),
        ("sgn", -0.0, -0.0),
        ("sgn", NAN, NAN),
    ],
)
def test_math(name: str, x: float, want: float) -> None:
    assert _same(MATH[name](x), want)


@pytest.mark.parametrize(
    ("v", "plain", "e"),
    [
        (1e6, "1000000", "1E+06"),
        (1e-7, "0.0000001", "1E-07"),
        (-0.0, "-0", "-0E+00"),
        (0.1, "0.1", "1E-01"),
        (1.0, "1", "1E+00"),
        (50.0, "50", "5E+01"),
        (0.16666666666666669, "0.16666666666666669", "1.6666666666666669E-01"),
        (INF, "+Inf", "+Inf"),
        (-INF, "-Inf", "-Inf"),
        (NAN, "NaN", "NaN"),
        (1e21, "1000000000000000000000", "1E+21"),
    ],
)
def test_formats(v: float, plain: str, e: str) -> None:
    assert format_plain(v) == plain
    assert format_go_e(v) == e


@pytest.mark.parametrize(
    ("v", "text"),
    [
        (1234.0, "1234"),
        (100000.0, "100000"),
        (1e6, "1e+06"),
        (1048576.0, "1.048576e+06"),
        (123456789.0, "1.23456789e+08"),
        (0.0001, "0.0001"),
        (0.00001234, "1.234e-05"),
        (1e21, "1e+21"),
        (1e308, "1e+308"),
        (-1536.0, "-1536"),
        (0.0, "0"),
        (INF, "+Inf"),
        (NAN, "NaN"),
    ],
)
def test_format_go_v(v: float, text: str) -> None:
    assert format_go_v(v) == text


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("1", 1.0),
        ("+Inf", INF),
        ("-inf", -INF),
        ("Infinity", INF),
        ("1.0", 1.0),
        (".5", 0.5),
        ("1e3", 1000.0),
        ("0x1p-2", 0.25),
        ("", None),
        ("1_000", None),
        (" 1", None),
        ("1e400", None),
        ("junk", None),
    ],
)
def test_parse_go_float(text: str, want: float | None) -> None:
    assert parse_go_float(text) == want


def test_quantile_sorts_nan_lowest() -> None:
    assert quantile(0.5, [1, NAN, 3]) == 1
    assert quantile(0.5, [INF, NAN, 1, 3]) == 2
    assert math.isnan(quantile(NAN, [1]))
    assert math.isnan(quantile(0.5, []))


def test_increase_zero_point_rounds_like_prometheus() -> None:

    ts, vs = array("d", [180.0, 240.0]), array("d", [3.0, 10.0])
    assert increase(ts, vs, RangeInfo(-60.0, 240.0, 240.0)) == 9.999999999999998
