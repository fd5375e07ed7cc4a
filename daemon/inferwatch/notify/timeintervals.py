"""Alertmanager time intervals: quiet hours and working hours for routes.

A route's ``mute_time_intervals`` hold its notifications while the time is inside any of them;
``active_time_intervals`` hold them while outside all of them. An interval is a list of specs,
and the time is inside the interval when it is inside any spec; a spec's fields all have to hold,
an empty field holds always. Ranges are inclusive (``monday:friday``, ``1:5``), except ``times``,
whose end is exclusive (``start_time: "00:00"`` to ``end_time: "24:00"`` is the whole day).
Negative days of the month count from its end (``-1`` is the last day). Everything is checked
when the config loads, so a typo fails ``inferwatch check`` rather than muting a page at 3 a.m.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from inferwatch.config.alertmanager import TimeInterval, TimeIntervalSpec

_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_MONTHS = tuple(m.lower() for m in calendar.month_name[1:])
_TIME = re.compile(r"^(\d{2}):(\d{2})$")

Range = tuple[int, int]


class TimeIntervalError(ValueError):
    """A time interval Alertmanager would reject too."""


def _minutes(text: str) -> int:
    m = _TIME.match(text)
    if m is None or int(m.group(2)) > 59 or int(m.group(1)) * 60 + int(m.group(2)) > 1440:
        raise TimeIntervalError(f"invalid time {text!r}: expected HH:MM from 00:00 to 24:00")
    return int(m.group(1)) * 60 + int(m.group(2))


def _number(text: str, names: tuple[str, ...], lo: int, hi: int, what: str) -> int:
    word = text.strip().lower()
    if word in names:
        return names.index(word) + 1
    try:
        value = int(word)
    except ValueError:
        raise TimeIntervalError(f"invalid {what} {text!r}") from None
    if not lo <= value <= hi or value == 0:
        raise TimeIntervalError(f"{what} {text!r} is out of range")
    return value


def _ranges(
    items: Iterable[str], what: str, lo: int, hi: int, names: tuple[str, ...] = ()
) -> tuple[Range, ...]:
    out: list[Range] = []
    for item in items:
        first, sep, last = item.partition(":")
        start = _number(first, names, lo, hi, what)
        end = _number(last, names, lo, hi, what) if sep else start
        if (start < 0) == (end < 0) and start > end:
            raise TimeIntervalError(f"{what} range {item!r} ends before it starts")
        out.append((start, end))
    return tuple(out)


def _location(name: str) -> tzinfo | None:
    """None is the host's local zone (``Local``), as Alertmanager reads it."""
    if name == "Local":
        return None
    if name == "UTC":
        return UTC
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise TimeIntervalError(f"unknown location {name!r}") from None


def _within(value: int, ranges: tuple[Range, ...]) -> bool:
    return not ranges or any(a <= value <= b for a, b in ranges)


@dataclass(frozen=True, slots=True)
class Spec:
    times: tuple[Range, ...]  # minutes of the day, end exclusive
    weekdays: tuple[Range, ...]  # 1 = Monday
    days_of_month: tuple[Range, ...]
    months: tuple[Range, ...]
    years: tuple[Range, ...]
    location: tzinfo | None

    @classmethod
    def from_config(cls, cfg: TimeIntervalSpec) -> Spec:
        times = tuple((_minutes(t.start_time), _minutes(t.end_time)) for t in cfg.times)
        if any(a >= b for a, b in times):
            raise TimeIntervalError("a time range must end after it starts")
        return cls(
            times=times,
            weekdays=_ranges(cfg.weekdays, "weekday", 1, 7, _WEEKDAYS),
            days_of_month=_ranges(cfg.days_of_month, "day of month", -31, 31),
            months=_ranges(cfg.months, "month", 1, 12, _MONTHS),
            years=_ranges(cfg.years, "year", 1, 9999),
            location=_location(cfg.location),
        )

    def contains(self, at: datetime) -> bool:
        local = at.astimezone(self.location)
        minute = local.hour * 60 + local.minute
        if self.times and not any(a <= minute < b for a, b in self.times):
            return False
        if self.days_of_month:
            last = calendar.monthrange(local.year, local.month)[1]
            day = local.day
            if not any(
                (a if a > 0 else last + 1 + a) <= day <= (b if b > 0 else last + 1 + b)
                for a, b in self.days_of_month
            ):
                return False
        return (
            _within(local.isoweekday(), self.weekdays)
            and _within(local.month, self.months)
            and _within(local.year, self.years)
        )


@dataclass(frozen=True, slots=True)
class Interval:
    name: str
    specs: tuple[Spec, ...]

    @classmethod
    def from_config(cls, cfg: TimeInterval) -> Interval:
        try:
            return cls(cfg.name, tuple(Spec.from_config(s) for s in cfg.time_intervals))
        except TimeIntervalError as exc:
            raise TimeIntervalError(f"time interval {cfg.name!r}: {exc}") from None

    def contains(self, at: datetime) -> bool:
        return any(spec.contains(at) for spec in self.specs)


def load_intervals(cfgs: Iterable[TimeInterval]) -> dict[str, Interval]:
    out: dict[str, Interval] = {}
    for cfg in cfgs:
        if cfg.name in out:
            raise TimeIntervalError(f"time interval {cfg.name!r} is defined twice")
        out[cfg.name] = Interval.from_config(cfg)
    return out


def route_muted(
    mute: Iterable[str], active: Iterable[str], intervals: Mapping[str, Interval], at: float
) -> bool:
    """Whether a route with these interval names holds its notifications at Unix time ``at``."""
    when = datetime.fromtimestamp(at, UTC)
    if any(intervals[name].contains(when) for name in mute):
        return True
    names = tuple(active)
    return bool(names) and not any(intervals[name].contains(when) for name in names)


HOLD_HORIZON = 8 * 86400.0
"""A hold longer than this is a config mistake (an interval covering all time): release then."""


def hold_until(names: Iterable[str], intervals: Mapping[str, Interval], at: float) -> float | None:
    """When quiet hours that hold messages end: the first minute boundary after ``at`` outside
    every named interval (intervals have minute resolution); None when ``at`` is outside all."""
    chosen = [intervals[name] for name in names]

    def inside(ts: float) -> bool:
        when = datetime.fromtimestamp(ts, UTC)
        return any(i.contains(when) for i in chosen)

    if not chosen or not inside(at):
        return None
    t = (at // 60.0 + 1.0) * 60.0
    while inside(t) and t - at < HOLD_HORIZON:
        t += 60.0
    return t
