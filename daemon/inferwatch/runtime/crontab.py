"""Five-field crontab expressions with crontab's day-of-week numbering.

APScheduler 3 counts day-of-week from 0 = Monday, so ``CronTrigger.from_crontab("0 8 * * 1-5")``
fires Tuesday to Saturday, not on weekdays as crontab(5) means. Here the day-of-week field is
read the crontab way (0 and 7 = Sunday, names, ranges, steps, lists) and handed to APScheduler
as explicit day names, which both agree on; the other fields are the same in both.
"""

from __future__ import annotations

from datetime import tzinfo

from apscheduler.triggers.cron import CronTrigger

NAMES = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")


def _day(token: str) -> int:
    token = token.strip().lower()
    if token in NAMES:
        return NAMES.index(token)
    if not token.isdigit() or not 0 <= int(token) <= 7:
        raise ValueError(f"day of week {token!r}: use 0-7 (0 and 7 = Sunday) or sun-sat")
    return int(token) % 7


def _part(part: str) -> set[int]:
    spec, _, step_text = part.partition("/")
    step = int(step_text) if step_text else 1
    if step < 1:
        raise ValueError(f"day of week {part!r}: the step must be at least 1")
    if spec == "*":
        lo, hi = 0, 6
    elif "-" in spec:
        a, b = spec.split("-", 1)
        lo, hi = _day(a), _day(b)
        if b.strip() == "7":
            hi = 7
        if hi < lo:
            raise ValueError(f"day of week {part!r}: the range runs backwards")
    else:
        lo = hi = _day(spec)
        if step_text:
            hi = 6
    return {d % 7 for d in range(lo, hi + 1, step)}


def day_of_week(field: str) -> str:
    """A crontab day-of-week field as APScheduler day names (``*`` stays ``*``)."""
    if field == "*":
        return field
    days: set[int] = set()
    for part in field.split(","):
        if not part:
            raise ValueError(f"day of week {field!r}: empty list item")
        days |= _part(part)
    return ",".join(NAMES[d] for d in sorted(days))


def crontab_trigger(expression: str, tz: tzinfo) -> CronTrigger:
    """A trigger for a five-field crontab line; ValueError naming what is wrong."""
    fields = expression.split()
    if len(fields) != 5:
        raise ValueError(f"cron {expression!r}: expected 5 fields, got {len(fields)}")
    minute, hour, day, month, dow = fields
    try:
        return CronTrigger(
            minute=minute, hour=hour, day=day, month=month, day_of_week=day_of_week(dow),
            timezone=tz,
        )  # fmt: skip
    except ValueError as exc:
        raise ValueError(f"cron {expression!r}: {exc}") from None
