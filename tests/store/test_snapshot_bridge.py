"""A restart after a long downtime must not page again for an event announced before it: the
restored event counters are bridged across the gap, so the first-occurrence idiom
(`x unless x offset 5m`) of the shipped rules sees no new counter; an event after the restart
(or one read late from the downtime) still pages."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from conftest import REPO
from inferwatch.clock import FakeClock
from inferwatch.labels import make_labels
from inferwatch.rules.evaluator import RuleManager
from inferwatch.rules.loader import load_rule_file
from inferwatch.rules.ruleset import RuleSet
from inferwatch.store import snapshot
from inferwatch.store.tsdb import SeriesStore

T0 = 1_800_000_000.0
XID79 = make_labels({"pci_bus_id": "0000:03:00.0", "xid": "79", "category": "hardware-bus"})


def firing(store: SeriesStore, at: float) -> list[str]:
    groups, problems = load_rule_file(REPO / "rules" / "gpu.yaml")
    assert problems == []
    rules = RuleManager(RuleSet(tuple(groups)), store, {})
    rules.evaluate_all(at)
    return sorted(dict(a.labels)["alertname"] for a in rules.alerts() if a.state == "firing")


def run_until(store: SeriesStore, clock: FakeClock, until: float) -> None:
    while clock.time() < until:
        clock.advance(10.0)
        store.tick()


@pytest.mark.parametrize("downtime", [120.0, 3 * 3600.0, 3 * 86400.0])
def test_no_second_page_after_a_restart(tmp_path: Path, downtime: float) -> None:
    clock = FakeClock(T0)
    store = SeriesStore(clock, retention_s=math.inf)
    store.inc("inferwatch_xid_errors_total", XID79, 1.0, T0)
    assert firing(store, T0) == ["GpuFallenOffBus"]
    run_until(store, clock, T0 + 900)
    assert firing(store, clock.time()) == []
    path = tmp_path / "snapshot.bin"
    snapshot.encode_and_write(path, snapshot.capture(store, {}, clock.time()))

    clock.advance(downtime)
    again = SeriesStore(clock, retention_s=math.inf)
    snapshot.restore(path, again, clock.time())
    again.tick()
    assert firing(again, clock.time()) == []
    run_until(again, clock, clock.time() + 600)
    assert firing(again, clock.time()) == []
    again.inc("inferwatch_xid_errors_total", XID79, 1.0, clock.time())  # a new fall-off
    assert firing(again, clock.time()) == ["GpuFallenOffBus"]
