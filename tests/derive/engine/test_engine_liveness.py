"""A crashed engine is over only when it is seen back: the crashed gauge, and EngineCrashed in a
replay of real crash lines (tests/fixtures/corpus) with and without a restart after them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from inferwatch.cli import main
from inferwatch.derive.effects import CounterInc, GaugeSet
from inferwatch.derive.engine import names as n
from inferwatch.derive.engine.liveness import CrashState
from inferwatch.labels import make_labels

CORPUS = Path(__file__).resolve().parents[2] / "fixtures" / "corpus" / "engine-lines.txt"
LABELS = make_labels({"engine": "e", "signature": "nccl"})


def gauges(effects: list[object]) -> list[tuple[float, float]]:
    return [(e.at, e.value) for e in effects if isinstance(e, GaugeSet) and e.name == n.CRASHED]


def test_a_crash_sets_the_gauge_and_only_later_life_clears_it() -> None:
    state = CrashState()
    assert state.alive(5.0) == []  # nothing crashed: nothing to clear
    out = state.after_crash([CounterInc(n.CRASHES, LABELS, 1.0, 10.0)])
    assert gauges(out) == [(10.0, 1.0)]
    assert state.alive(9.0) == []  # life before the crash says nothing about it
    assert gauges(state.alive(30.0)) == [(30.0, 0.0)]
    assert state.alive(40.0) == []  # cleared once


def test_a_restart_seen_before_the_crash_chain_was_decided_clears_it_at_once() -> None:
    state = CrashState()
    state.alive(12.0)  # the new process started while the chain waited for its quiet window
    out = state.after_crash([CounterInc(n.CRASHES, LABELS, 1.0, 10.0)])
    assert gauges(out) == [(10.0, 1.0), (12.0, 0.0)]


def replay(capsys: pytest.CaptureFixture[str], path: Path) -> list[dict[str, object]]:
    args = ["replay", "--engine-log", str(path), "--format", "jsonl", "--year", "2026"]
    assert main(args) == 0
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def crash_alerts(docs: list[dict[str, object]]) -> list[tuple[object, object]]:
    return [(d["state"], d["at"]) for d in docs if d.get("alertname") == "EngineCrashed"]


def test_a_dead_engine_stays_paged(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = CORPUS.read_text().splitlines()
    log = tmp_path / "vllm.log"
    # the crash (June 11, 11:46:39), then an unrelated line an hour later: no sign of life
    later = "INFO 06-11 12:46:40 [launcher.py:80] Shutting down FastAPI HTTP server."
    log.write_text("\n".join([*lines[32:37], later]) + "\n")
    # fires once the crash chain is decided (its quiet window), and never resolves
    assert crash_alerts(replay(capsys, log)) == [("firing", "2026-06-11T11:46:49+00:00")]


def test_a_restarted_engine_resolves(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = CORPUS.read_text().splitlines()
    stats = lines[30].replace("06-11 11:46:37", "06-11 12:06:37")  # a stats line 20 min later
    log = tmp_path / "vllm.log"
    log.write_text("\n".join([*lines[32:37], stats]) + "\n")
    alerts = crash_alerts(replay(capsys, log))
    assert [state for state, _ in alerts] == ["firing", "resolved"]
    assert alerts[1][1] == "2026-06-11T12:06:37+00:00"  # at the stats line itself
