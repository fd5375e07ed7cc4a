"""Float arithmetic as Go (and therefore Prometheus) does it.

Python raises where Go returns an IEEE value (``x / 0``, ``math.log(0)``, ``math.exp(1000)``),
floors its ``%`` where Go truncates, and computes ``pow`` differently (Go multiplies out the
integer part of the exponent by repeated squaring, so ``1.1 ^ 10`` can differ in the last bit from
libm). Every operator and math function of the evaluator goes through this module
(reference/promql.md §5, §6).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from decimal import Decimal

NAN = math.nan
INF = math.inf


def go_div(a: float, b: float) -> float:
    try:
        return a / b
    except ZeroDivisionError:
        if a == 0 or math.isnan(a):
            return NAN
        negative = (a < 0) != (math.copysign(1.0, b) < 0)
        return -INF if negative else INF


def go_mod(a: float, b: float) -> float:
    """Go's ``math.Mod``: the result takes the dividend's sign; fmod is exact, as Go's loop is."""
    if b == 0 or math.isinf(a) or math.isnan(a) or math.isnan(b):
        return NAN
    return math.fmod(a, b)


def _is_odd_int(y: float) -> bool:
    if abs(y) >= 1 << 53:
        return False
    frac, whole = math.modf(y)
    return frac == 0 and int(whole) & 1 == 1


def _pow_special(x: float, y: float) -> float | None:
    """The special cases Go's ``math.Pow`` lists before its general algorithm."""
    if y == 0 or x == 1:
        return 1.0
    if y == 1:
        return x
    if math.isnan(x) or math.isnan(y):
        return NAN
    if x == 0:
        if y < 0:
            return math.copysign(INF, x) if _is_odd_int(y) else INF
        return x if _is_odd_int(y) else 0.0
    if math.isinf(y):
        if x == -1:
            return 1.0
        return 0.0 if (abs(x) < 1) == (y > 0) else INF
    if math.isinf(x):
        if x < 0:
            return go_pow(-0.0, -y)
        return 0.0 if y < 0 else INF
    if y == 0.5:
        return math.sqrt(x) if x >= 0 else NAN
    if y == -0.5:
        return 1 / math.sqrt(x) if x > 0 else NAN
    return None


def go_pow(x: float, y: float) -> float:
    special = _pow_special(x, y)
    if special is not None:
        return special
    yf, yi = math.modf(abs(y))
    if yf != 0 and x < 0:
        return NAN
    if yi >= 2.0**63:
        if x == -1:
            return 1.0
        return 0.0 if (abs(x) < 1) == (y > 0) else INF
    a1 = 1.0
    ae = 0
    if yf != 0:
        if yf > 0.5:
            yf -= 1
            yi += 1
        a1 = math.exp(yf * math.log(x))
    x1, xe = math.frexp(x)
    i = int(yi)
    while i != 0:
        if xe < -(1 << 12) or xe > (1 << 12):
            ae += xe
            break
        if i & 1:
            a1 *= x1
            ae += xe
        x1 *= x1
        xe <<= 1
        if x1 < 0.5:
            x1 += x1
            xe -= 1
        i >>= 1
    if y < 0:
        a1 = 1 / a1
        ae = -ae
    try:
        return math.ldexp(a1, ae)
    except OverflowError:
        return math.copysign(INF, a1)


def go_max(a: float, b: float) -> float:
    """Go's ``math.Max``: +Inf wins over NaN, NaN wins over any number."""
    if INF in (a, b):
        return INF
    if math.isnan(a) or math.isnan(b):
        return NAN
    if a == 0 and b == 0:
        return b if math.copysign(1.0, a) < 0 else a
    return a if a > b else b


def go_min(a: float, b: float) -> float:
    if -INF in (a, b):
        return -INF
    if math.isnan(a) or math.isnan(b):
        return NAN
    if a == 0 and b == 0:
        return a if math.copysign(1.0, a) < 0 else b
    return a if a < b else b


def _nan(_x: float) -> float:
    return NAN


def _inf(_x: float) -> float:
    return INF


def _guarded(
    fn: Callable[[float], float],
    domain: Callable[[float], float] = _nan,
    overflow: Callable[[float], float] = _inf,
) -> Callable[[float], float]:
    """Wrap a ``math`` function: a domain error gives ``domain(x)``, an overflow ``overflow(x)``."""

    def call(x: float) -> float:
        try:
            return fn(x)
        except ValueError:
            return domain(x)
        except OverflowError:
            return overflow(x)

    return call


def _log_domain(x: float) -> float:
    return -INF if x == 0 else NAN


def _atanh_domain(x: float) -> float:
    return math.copysign(INF, x) if abs(x) == 1 else NAN


def _rounding(fn: Callable[[float], int]) -> Callable[[float], float]:
    def call(x: float) -> float:
        if math.isnan(x) or math.isinf(x):
            return x
        return float(fn(x))

    return call


def go_sgn(x: float) -> float:
    if x < 0:
        return -1.0
    if x > 0:
        return 1.0
    return x


MATH: dict[str, Callable[[float], float]] = {
    "abs": math.fabs,
    "ceil": _rounding(math.ceil),
    "floor": _rounding(math.floor),
    "exp": _guarded(math.exp),
    "sqrt": _guarded(math.sqrt),
    "ln": _guarded(math.log, _log_domain),
    "log2": _guarded(math.log2, _log_domain),
    "log10": _guarded(math.log10, _log_domain),
    "sgn": go_sgn,
    "sin": _guarded(math.sin),
    "cos": _guarded(math.cos),
    "tan": _guarded(math.tan),
    "asin": _guarded(math.asin),
    "acos": _guarded(math.acos),
    "atan": math.atan,
    "sinh": _guarded(math.sinh, overflow=lambda x: math.copysign(INF, x)),
    "cosh": _guarded(math.cosh),
    "tanh": math.tanh,
    "asinh": math.asinh,
    "acosh": _guarded(math.acosh),
    "atanh": _guarded(math.atanh, _atanh_domain),
    "deg": lambda x: x * 180 / math.pi,
    "rad": lambda x: x * math.pi / 180,
}


def quantile(q: float, values: Sequence[float]) -> float:
    """Prometheus's φ-quantile with linear interpolation; NaN sorts lowest (promql.md §4)."""
    if not values or math.isnan(q):
        return NAN
    if q < 0:
        return -INF
    if q > 1:
        return INF
    if math.isnan(sum(values)):  # a NaN somewhere (or +Inf and -Inf)
        ordered = sorted(values, key=lambda v: (not math.isnan(v), v if not math.isnan(v) else 0.0))
    else:  # no NaN: the plain order is the same, ties kept in place alike
        ordered = sorted(values)
    return quantile_of_sorted(q, ordered)


def quantile_of_sorted(q: float, ordered: Sequence[float]) -> float:
    """:func:`quantile` of values already in its order (NaN first), ``0 <= q <= 1``."""
    n = len(ordered)
    rank = q * (n - 1)
    lower = max(0, math.floor(rank))
    upper = min(n - 1, lower + 1)
    weight = rank - math.floor(rank)
    return ordered[lower] * (1 - weight) + ordered[upper] * weight


def format_plain(v: float) -> str:
    """Go's ``strconv.FormatFloat(v, 'f', -1, 64)``: shortest digits, never an exponent."""
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    return format(Decimal(repr(v)).normalize(), "f")


def format_go_e(v: float) -> str:
    """Go's ``strconv.FormatFloat(v, 'E', -1, 64)``, as promtool prints values (``5E+01``)."""
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    sign, digits, exponent = Decimal(repr(v)).normalize().as_tuple()
    assert isinstance(exponent, int)
    exp10 = exponent + len(digits) - 1
    mantissa = str(digits[0])
    if len(digits) > 1:
        mantissa += "." + "".join(map(str, digits[1:]))
    return f"{'-' if sign else ''}{mantissa}E{'+' if exp10 >= 0 else '-'}{abs(exp10):02d}"


def format_go_v(v: float) -> str:
    """Go's ``%v`` (``strconv.FormatFloat(v, 'g', -1, 64)``): shortest digits, an exponent iff it
    is < -4 or ≥ 6: 1234 → ``1234``, 1e6 → ``1e+06``, 1e-5 → ``1e-05`` (promql.md §8)."""
    if math.isnan(v) or math.isinf(v) or v == 0:
        return format_plain(v)
    sign, digits, exponent = Decimal(repr(v)).normalize().as_tuple()
    assert isinstance(exponent, int)
    exp10 = exponent + len(digits) - 1
    if -4 <= exp10 < 6:
        return format_plain(v)
    mantissa = str(digits[0])
    if len(digits) > 1:
        mantissa += "." + "".join(map(str, digits[1:]))
    return f"{'-' if sign else ''}{mantissa}e{'+' if exp10 >= 0 else '-'}{abs(exp10):02d}"


_GO_DECIMAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_GO_SPECIAL = re.compile(r"[+-]?(?:inf|infinity|nan)", re.IGNORECASE)
_GO_HEX = re.compile(r"[+-]?0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)[pP][+-]?[0-9]+")


def parse_go_float(text: str) -> float | None:
    """Go's ``strconv.ParseFloat``, or None where it fails (out of range included)."""
    if _GO_SPECIAL.fullmatch(text):
        return float(text)
    if _GO_HEX.fullmatch(text):
        value = float.fromhex(text)
    elif _GO_DECIMAL.fullmatch(text):
        value = float(text)
    else:
        return None
    return None if math.isinf(value) else value
