"""A normal day (tests/replay/normal_day.py: idle gaps from a minute to two hours, bursts with
1-4 requests running, prefill windows, MAL moving with the content, an unchanged stack) pages
for nothing, and the verdict blames nothing on the stack."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from normal_day import write_normal_day

from inferwatch.cli import main


def test_a_normal_day_pages_for_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "normal-day.log"
    assert write_normal_day(log) > 2000  # busy windows: hours of traffic
    args = ["replay", "--engine-log", str(log), "--format", "jsonl", "--year", "2026"]
    assert main(args) == 0
    docs = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [d for d in docs if d["kind"] == "alert"] == []
    (summary,) = [d for d in docs if d["kind"] == "summary"]
    periods = [p for e in summary["engines"] for p in e["busy_periods"]]
    assert len(periods) > 20
    verdicts = [p["verdict"] for p in periods]
    assert not any("stack" in v for v in verdicts), [v for v in verdicts if "stack" in v]
    assert "stack" not in summary["verdict"]
    assert all(e["step_rate_basis"] == "per request: decode / MAL / running"
               for e in summary["engines"])  # fmt: skip
