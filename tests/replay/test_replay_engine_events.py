"""Replay's engine events: one per line. A start-up line is reported by the start-up deriver's
event or, for the chatty facts it keeps out of the event log (routes, …), by the line event,
never by both (signal-quality issue, item 11)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from inferwatch.cli import main

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "corpus"


def test_every_start_up_line_is_one_event(capsys: pytest.CaptureFixture[str]) -> None:
    log = CORPUS / "engine-lines.txt"
    args = ["replay", "--engine-log", str(log), "--format", "jsonl", "--year", "2026"]
    assert main(args) == 0
    docs = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line]
    events = [d for d in docs if d["kind"] == "event" and d["type"] != "engine_crash"]
    per_line = Counter((d["type"], d["line"]) for d in events)
    assert [key for key, count in per_line.items() if count > 1] == []
    expected = [
        json.loads(line) for line in (CORPUS / "engine-lines.expect.jsonl").read_text().splitlines()
    ]
    startup_lines = {e["line_no"] for e in expected if e["type"] == "startup"}
    assert {d["line"] for d in events if d["type"] == "startup"} == startup_lines
    summary = docs[-1]
    assert summary["events"]["startup"] == len(startup_lines)
