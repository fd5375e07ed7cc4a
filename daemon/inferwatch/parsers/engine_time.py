"""When an engine line was written, from the timestamps its prefix carries (engine.md §1.5).

A docker wrapper's RFC 3339 time is complete and in UTC, so it wins. vLLM's own ``MM-DD
HH:MM:SS`` has neither year nor zone: the year comes from the caller (the clock, or replay's
``--year``) and the zone is the engine's local time (``tz``). A time more than two days in the
future of ``now`` belongs to the previous year (a log read across New Year). SGLang's bare
``HH:MM:SS`` has no date at all: None, and the caller keeps the last known time.
"""

from __future__ import annotations

import functools
import re
from datetime import UTC, datetime, tzinfo

from inferwatch.parsers.engine_prefix import LinePrefix
from inferwatch.parsers.months import month_number

_RFC3339 = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(Z|[+-]\d{2}:\d{2})"
)
_MMDD = re.compile(r"(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})$")
_FULL = re.compile(r"(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})(?:[.,](\d+))?")
_SYSLOG = re.compile(r"(\S+) +(\d{1,2}) (\d{2}):(\d{2}):(\d{2})")
_WRAP_S = 2 * 86400.0


def engine_time(
    prefix: LinePrefix, *, year: int, tz: tzinfo, now: float | None = None
) -> float | None:
    """Unix seconds of the line, or None when its prefix carries no usable date."""
    if prefix.wrapper == "docker" and prefix.wrapper_ts:
        m = _RFC3339.match(prefix.wrapper_ts)
        if m:
            return _rfc3339(m)
    ts = prefix.ts
    if ts:
        if now is None:  # replay: the lines of one second share their time text
            at = _month_day(ts, year, tz)
            if at is not None:
                return at
        m = _MMDD.match(ts)
        if m:
            month, day, hh, mm, ss = (int(g) for g in m.groups())
            return _with_year(year, month, day, hh, mm, ss, 0.0, tz, now)
        m = _FULL.match(ts)
        if m:
            y, month, day, hh, mm, ss = (int(g) for g in m.groups()[:6])
            frac = float(f"0.{m[7]}") if m[7] else 0.0
            return _stamp(y, month, day, hh, mm, ss, frac, tz)
    if prefix.wrapper == "journald" and prefix.wrapper_ts:
        m = _SYSLOG.match(prefix.wrapper_ts)
        mon = month_number(m[1]) if m else None
        if m and mon:
            day, hh, mm, ss = (int(g) for g in m.groups()[1:])
            return _with_year(year, mon, day, hh, mm, ss, 0.0, tz, now)
    return None


@functools.lru_cache(maxsize=256)
def _month_day(ts: str, year: int, tz: tzinfo) -> float | None:
    """A ``MM-DD HH:MM:SS`` time in ``year``, None for any other text (cached)."""
    m = _MMDD.match(ts)
    if m is None:
        return None
    month, day, hh, mm, ss = (int(g) for g in m.groups())
    return _stamp(year, month, day, hh, mm, ss, 0.0, tz)


def _rfc3339(m: re.Match[str]) -> float | None:
    y, mo, d, hh, mm, ss = (int(g) for g in m.groups()[:6])
    frac = float(f"0.{m[7][:9]}") if m[7] else 0.0
    offset = m[8]
    try:
        base = datetime(y, mo, d, hh, mm, ss, tzinfo=UTC).timestamp()
    except ValueError:
        return None
    if offset != "Z":
        sign = 1 if offset[0] == "+" else -1
        base -= sign * (int(offset[1:3]) * 3600 + int(offset[4:6]) * 60)
    return base + frac


def _stamp(
    y: int, mo: int, d: int, hh: int, mm: int, ss: int, frac: float, tz: tzinfo
) -> float | None:
    try:
        return datetime(y, mo, d, hh, mm, ss, tzinfo=tz).timestamp() + frac
    except ValueError:
        return None


def _with_year(
    year: int,
    mo: int,
    d: int,
    hh: int,
    mm: int,
    ss: int,
    frac: float,
    tz: tzinfo,
    now: float | None,
) -> float | None:
    at = _stamp(year, mo, d, hh, mm, ss, frac, tz)
    if at is not None and now is not None and at - now > _WRAP_S:
        at = _stamp(year - 1, mo, d, hh, mm, ss, frac, tz)
    return at
