"""Replay of the engine issue's acceptance logs, against committed golden JSON.

The goldens are regenerated only on request: ``pytest tests/replay --update-golden``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from inferwatch.cli import main

FIXTURES = Path(__file__).parents[1] / "fixtures" / "replay"
GOLDEN = Path(__file__).parents[1] / "golden" / "replay"
CASES = ["decode-normal", "decode-collapse", "xid31-pair"]


def run_replay(capsys: pytest.CaptureFixture[str], name: str) -> list[dict[str, object]]:
    path = FIXTURES / f"{name}.log"
    flag = "--kernel" if name.startswith("xid") else "--engine-log"
    # Sources are given relative to the repo so the goldens do not depend on the checkout path.
    rel = path.relative_to(Path(__file__).parents[2])

    cwd = Path.cwd()
    os.chdir(Path(__file__).parents[2])
    try:
        assert main(["replay", flag, str(rel), "--format", "jsonl", "--year", "2026"]) == 0
    finally:
        os.chdir(cwd)
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


@pytest.mark.parametrize("name", CASES)
def test_replay_matches_golden(
    name: str, capsys: pytest.CaptureFixture[str], request: pytest.FixtureRequest
) -> None:
    docs = run_replay(capsys, name)
    golden = GOLDEN / f"{name}.jsonl"
    if request.config.getoption("--update-golden"):
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text("".join(json.dumps(d, sort_keys=True) + "\n" for d in docs))
    expected = [json.loads(line) for line in golden.read_text().splitlines()]
    assert docs == expected


def test_normal_single_stream_log_raises_no_decode_alert(
    capsys: pytest.CaptureFixture[str],
) -> None:
    docs = run_replay(capsys, "decode-normal")
    assert [d for d in docs if d["kind"] == "alert"] == []
    summary = docs[-1]
    (period,) = summary["engines"][0]["busy_periods"]
    assert 94 <= period["decode"] <= 120 and 2.6 <= period["mal"] <= 3.1


def test_collapse_raises_collapse_and_below_anchor(capsys: pytest.CaptureFixture[str]) -> None:
    docs = run_replay(capsys, "decode-collapse")
    firing = {d["alertname"] for d in docs if d["kind"] == "alert" and d["state"] == "firing"}
    assert {"EngineDecodeCollapse", "EngineDecodeBelowAnchor"} <= firing
    collapse = next(d for d in docs if d.get("alertname") == "EngineDecodeCollapse")
    assert collapse["severity"] == "critical"
    assert collapse["labels"]["engine"] == "decode-collapse"
