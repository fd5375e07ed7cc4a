"""Alert state handed to and from the daemon's snapshot; an older version's alerts.json."""

from __future__ import annotations

from pathlib import Path

from inferwatch.alerts import state as saved
from inferwatch.alerts.model import AlertState
from inferwatch.clock import FakeClock
from inferwatch.rules.service import LEGACY_STATE_FILE, RuleService
from inferwatch.store.tsdb import SeriesStore
from notify.test_backlog import T0, alert


def service(tmp_path: Path) -> RuleService:
    clock = FakeClock(T0)
    return RuleService(SeriesStore(clock), clock, [], external_labels={}, state_dir=tmp_path)


def test_alerts_come_back_from_the_snapshot_text(tmp_path: Path) -> None:
    text = saved.encode([alert("GpuFallenOffBus", "critical", AlertState.FIRING, T0)], T0)
    assert service(tmp_path).restore(text) == 1
    assert service(tmp_path).state_text(T0 + 1).startswith("{")


def test_a_snapshot_without_alerts_falls_back_to_the_old_file(tmp_path: Path) -> None:
    assert service(tmp_path).restore(None) == 0  # neither: a fresh start
    text = saved.encode([alert("GpuFallenOffBus", "critical", AlertState.FIRING, T0)], T0)
    (tmp_path / LEGACY_STATE_FILE).write_text(text)
    assert service(tmp_path).restore(None) == 1


def test_unreadable_alert_state_starts_without_it(tmp_path: Path) -> None:
    assert service(tmp_path).restore("not json") == 0
    (tmp_path / LEGACY_STATE_FILE).write_text("{")
    assert service(tmp_path).restore(None) == 0
