"""Calendar fields of a Unix time, computed as Go's ``time`` package computes them.

``minute()``, ``hour()``, ``day_of_week()``, ``day_of_month()``, ``day_of_year()``,
``days_in_month()``, ``month()`` and ``year()`` convert each value with Go's ``int64(v)`` and then
read a UTC calendar date. Python's ``datetime`` stops at year 9999 and cannot follow Go where the
conversion overflows: on amd64 (where promtool runs) ``int64`` of NaN, ±Inf or anything beyond
±2^63 is -2^63, and Go's date arithmetic then wraps around in 64 bits. We follow the same
arithmetic (Go 1.19's absolute-date algorithm: 400/100/4-year cycles from year -292277022399),
so every input gives promtool's answer, garbage included.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

_MASK = (1 << 64) - 1
_DAY = 86_400
_DAYS_400 = 365 * 400 + 97
_DAYS_100 = 365 * 100 + 24
_DAYS_4 = 365 * 4 + 1
_ABSOLUTE_ZERO_YEAR = -292_277_022_399
_UNIX_TO_INTERNAL = (1969 * 365 + 1969 // 4 - 1969 // 100 + 1969 // 400) * _DAY
# Go evaluates (zero year - 1) * 365.2425 * seconds-per-day exactly (untyped constants).
_INTERNAL_TO_ABSOLUTE = -((_ABSOLUTE_ZERO_YEAR - 1) * 3_652_425 * _DAY // 10_000)
_DAYS_BEFORE = (0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334, 365)


def go_int64(v: float) -> int:
    """Go's ``int64(v)`` on amd64: truncation, or -2^63 where the value does not fit."""
    if math.isnan(v) or not -(2.0**63) <= v < 2.0**63:
        return -(1 << 63)
    return int(v)


def _wrap64(x: int) -> int:
    x &= _MASK
    return x - (1 << 64) if x >= 1 << 63 else x


class GoDate(NamedTuple):
    year: int
    month: int
    day: int
    yday: int  # 0-based
    hour: int
    minute: int
    weekday: int  # Sunday = 0


def _is_leap(year: int) -> bool:
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def go_date(unix_seconds: int) -> GoDate:
    """The UTC date Go's ``time.Unix(s, 0).UTC()`` reports for ``s``."""
    absolute = _wrap64(unix_seconds + _wrap64(_UNIX_TO_INTERNAL + _INTERNAL_TO_ABSOLUTE)) & _MASK
    d = absolute // _DAY
    n = d // _DAYS_400
    y = 400 * n
    d -= _DAYS_400 * n
    n = d // _DAYS_100
    n -= n >> 2
    y += 100 * n
    d -= _DAYS_100 * n
    n = d // _DAYS_4
    y += 4 * n
    d -= _DAYS_4 * n
    n = d // 365
    n -= n >> 2
    y += n
    d -= 365 * n
    year = _wrap64(y + _ABSOLUTE_ZERO_YEAR)
    yday = d
    day = yday
    month = 0
    if _is_leap(year) and day >= 31 + 29 - 1:
        if day == 31 + 29 - 1:
            month, day = 2, 29
        else:
            day -= 1
    if month == 0:
        month = day // 31
        end = _DAYS_BEFORE[month + 1]
        if day >= end:
            month += 1
            begin = end
        else:
            begin = _DAYS_BEFORE[month]
        month += 1
        day = day - begin + 1
    seconds = absolute % _DAY
    weekday = (((absolute + _DAY) & _MASK) % (7 * _DAY)) // _DAY  # the absolute epoch is a Monday
    return GoDate(year, month, day, yday, seconds // 3600, seconds % 3600 // 60, weekday)


def _days_in_month(d: GoDate) -> int:
    if d.month == 2 and _is_leap(d.year):
        return 29
    return _DAYS_BEFORE[d.month] - _DAYS_BEFORE[d.month - 1]


DATE_PARTS: dict[str, Callable[[GoDate], int]] = {
    "minute": lambda d: d.minute,
    "hour": lambda d: d.hour,
    "day_of_week": lambda d: d.weekday,
    "day_of_month": lambda d: d.day,
    "day_of_year": lambda d: d.yday + 1,
    "days_in_month": _days_in_month,
    "month": lambda d: d.month,
    "year": lambda d: d.year,
}


def date_part(name: str, value: float) -> float:
    """``name`` (e.g. ``"month"``) of the Unix time ``value``, as a PromQL sample value."""
    return float(DATE_PARTS[name](go_date(go_int64(value))))
