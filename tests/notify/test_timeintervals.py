from __future__ import annotations

import shutil
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from inferwatch.config.alertmanager import TimeInterval
from inferwatch.notify.timeintervals import (
    Interval,
    TimeIntervalError,
    load_intervals,
    route_muted,
)


def interval(**spec: Any) -> Interval:
    return Interval.from_config(TimeInterval(name="t", time_intervals=[spec]))


def utc(year: int, month: int, day: int, hour: int = 0, minute: int = 0) -> datetime:
    return datetime(year, month, day, hour, minute, tzinfo=UTC)


# 2026-11-30 is a Monday; 2026-02 has 28 days.
@pytest.mark.parametrize(
    ("spec", "at", "inside"),
    [
        ({}, utc(2026, 11, 30, 3), True),
        (
            {"times": [{"start_time": "22:00", "end_time": "24:00"}]},
            utc(2026, 11, 30, 23, 59),
            True,
        ),
        (
            {"times": [{"start_time": "22:00", "end_time": "24:00"}]},
            utc(2026, 11, 30, 21, 59),
            False,
        ),
        ({"times": [{"start_time": "00:00", "end_time": "07:00"}]}, utc(2026, 11, 30, 7, 0), False),
        ({"weekdays": ["monday:friday"]}, utc(2026, 11, 30), True),
        ({"weekdays": ["saturday", "Sunday"]}, utc(2026, 11, 30), False),
        ({"weekdays": ["saturday", "Sunday"]}, utc(2026, 11, 29), True),
        ({"days_of_month": ["1:5", "-1"]}, utc(2026, 2, 28), True),
        ({"days_of_month": ["-3:-1"]}, utc(2026, 2, 25), False),
        ({"days_of_month": ["-3:-1"]}, utc(2026, 2, 26), True),
        ({"days_of_month": ["-3:-1"]}, utc(2026, 1, 29), True),
        ({"days_of_month": ["-3:-1"]}, utc(2026, 1, 28), False),
        ({"days_of_month": ["1:5"]}, utc(2026, 2, 6), False),
        ({"months": ["january:march", "12"]}, utc(2026, 12, 1), True),
        ({"months": ["january:march"]}, utc(2026, 4, 1), False),
        ({"years": ["2025:2026"]}, utc(2026, 1, 1), True),
        ({"years": ["2027"]}, utc(2026, 1, 1), False),
        (
            {"times": [{"start_time": "09:00", "end_time": "18:00"}], "location": "Asia/Shanghai"},
            utc(2026, 11, 30, 2),  # 10:00 in Shanghai
            True,
        ),
        (
            {"times": [{"start_time": "09:00", "end_time": "18:00"}], "location": "Asia/Shanghai"},
            utc(2026, 11, 30, 11),  # 19:00 in Shanghai
            False,
        ),
        (
            {"weekdays": ["monday"], "location": "Asia/Shanghai"},
            utc(2026, 11, 29, 17),  # Sunday in UTC, Monday 01:00 in Shanghai
            True,
        ),
    ],
)
def test_contains(spec: dict[str, Any], at: datetime, inside: bool) -> None:
    assert interval(**spec).contains(at) is inside


@pytest.mark.parametrize(
    ("spec", "fragment"),
    [
        ({"times": [{"start_time": "25:00", "end_time": "26:00"}]}, "invalid time"),
        ({"times": [{"start_time": "9:00", "end_time": "10:00"}]}, "invalid time"),
        ({"times": [{"start_time": "10:00", "end_time": "09:00"}]}, "end after"),
        ({"weekdays": ["funday"]}, "invalid weekday"),
        ({"weekdays": ["friday:monday"]}, "ends before"),
        ({"days_of_month": ["0"]}, "out of range"),
        ({"days_of_month": ["32"]}, "out of range"),
        ({"days_of_month": ["-1:-3"]}, "ends before"),
        ({"months": ["13"]}, "out of range"),
        ({"location": "Mars/Base"}, "unknown location"),
    ],
)
def test_invalid(spec: dict[str, Any], fragment: str) -> None:
    with pytest.raises(TimeIntervalError, match=fragment) as info:
        interval(**spec)
    assert "'t'" in str(info.value)


def test_any_spec_matches_and_duplicates_rejected() -> None:
    cfg = TimeInterval.model_validate(
        {"name": "q", "time_intervals": [{"weekdays": ["saturday"]}, {"months": ["may"]}]}
    )
    q = load_intervals([cfg])["q"]
    assert q.contains(utc(2026, 11, 28)) and q.contains(utc(2026, 5, 4))
    assert not q.contains(utc(2026, 11, 30))
    with pytest.raises(TimeIntervalError, match="defined twice"):
        load_intervals([cfg, cfg])


def test_route_muted() -> None:
    night = TimeInterval.model_validate(
        {
            "name": "night",
            "time_intervals": [{"times": [{"start_time": "00:00", "end_time": "07:00"}]}],
        }
    )
    intervals = load_intervals([night])
    at_3 = utc(2026, 11, 30, 3).timestamp()
    at_12 = utc(2026, 11, 30, 12).timestamp()
    assert route_muted(["night"], [], intervals, at_3)
    assert not route_muted(["night"], [], intervals, at_12)
    assert route_muted([], ["night"], intervals, at_12)  # active only at night
    assert not route_muted([], ["night"], intervals, at_3)
    assert not route_muted([], [], intervals, at_3)


AMTOOL = shutil.which("amtool")
VALIDITY = [
    {"days_of_month": ["1:-1"]},
    {"days_of_month": ["-1:-3"]},
    {"days_of_month": ["0"]},
    {"weekdays": ["friday:monday"]},
    {"weekdays": ["monday:friday"]},
    {"months": ["may:2"]},
    {"months": ["may:december"]},
    {"times": [{"start_time": "09:00", "end_time": "09:00"}]},
    {"times": [{"start_time": "22:00", "end_time": "24:00"}]},
    {"location": "Asia/Shanghai"},
]


@pytest.mark.skipif(AMTOOL is None, reason="amtool is not installed")
@pytest.mark.parametrize("spec", VALIDITY)
def test_validity_agrees_with_alertmanager(tmp_path: Path, spec: dict[str, Any]) -> None:
    config = {
        "route": {"receiver": "r"},
        "receivers": [{"name": "r"}],
        "time_intervals": [{"name": "t", "time_intervals": [spec]}],
    }
    path = tmp_path / "am.yml"
    path.write_text(yaml.safe_dump(config))
    assert AMTOOL is not None
    done = subprocess.run(
        [AMTOOL, "check-config", str(path)], capture_output=True, text=True, timeout=30
    )
    try:
        interval(**spec)
        ours = True
    except TimeIntervalError:
        ours = False
    assert ours is (done.returncode == 0), done.stdout + done.stderr
