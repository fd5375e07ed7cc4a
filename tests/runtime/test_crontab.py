"""Crontab day-of-week numbering (0 = Sunday), which APScheduler's own from_crontab gets wrong."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from inferwatch.runtime.crontab import crontab_trigger, day_of_week


@pytest.mark.parametrize(
    ("field", "names"),
    [
        ("*", "*"),
        ("1-5", "mon,tue,wed,thu,fri"),
        ("0", "sun"),
        ("7", "sun"),
        ("5-7", "sun,fri,sat"),
        ("0,6", "sun,sat"),
        ("*/2", "sun,tue,thu,sat"),
        ("mon-fri", "mon,tue,wed,thu,fri"),
        ("1/3", "mon,thu"),
    ],
)
def test_day_of_week_is_read_the_crontab_way(field: str, names: str) -> None:
    assert day_of_week(field) == names


@pytest.mark.parametrize("bad", ["8", "5-1", "*/0", "1,,2", "funday"])
def test_bad_day_of_week_is_an_error(bad: str) -> None:
    with pytest.raises(ValueError, match="day of week"):
        day_of_week(bad)


def test_weekday_mornings_fire_monday_to_friday() -> None:
    trigger = crontab_trigger("0 8 * * 1-5", UTC)
    at = datetime(2026, 11, 27, 9, 0, tzinfo=UTC)  # a Friday, after 08:00
    fire = trigger.get_next_fire_time(None, at)
    assert fire == datetime(2026, 11, 30, 8, 0, tzinfo=UTC)  # the next Monday
    assert fire is not None and fire.strftime("%a") == "Mon"


def test_wrong_field_count_is_named() -> None:
    with pytest.raises(ValueError, match="expected 5 fields"):
        crontab_trigger("0 8 * *", UTC)
