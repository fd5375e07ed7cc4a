"""The garbage collector through `inferwatch replay`: held while the replay loads, running (and
blind to what was loaded) while it replays, and as before once it returns, even on an error."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

from inferwatch import cli
from inferwatch.replay import runner
from inferwatch.rules import loader

XID_LOG = Path(__file__).parent / "fixtures" / "replay" / "xid31-pair.log"


def test_the_collector_is_held_while_loading_and_restored_after(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    seen: dict[str, tuple[bool, int]] = {}
    load, run = loader.load_rule_files, runner.Replay.run

    def loading(*args: object) -> object:
        seen["loading"] = (gc.isenabled(), gc.get_freeze_count())
        return load(*args)  # type: ignore[arg-type]

    async def running(self: runner.Replay) -> runner.ReplayResult:
        seen["running"] = (gc.isenabled(), gc.get_freeze_count())
        return await run(self)

    monkeypatch.setattr(loader, "load_rule_files", loading)
    monkeypatch.setattr(runner.Replay, "run", running)
    threshold = gc.get_threshold()
    assert gc.isenabled() and gc.get_freeze_count() == 0
    assert cli.main(["replay", "--kernel", str(XID_LOG)]) == 0
    capsys.readouterr()
    assert seen["loading"] == (False, 0)
    assert seen["running"][0] and seen["running"][1] > 0
    assert (gc.isenabled(), gc.get_freeze_count(), gc.get_threshold()) == (True, 0, threshold)


def test_a_failed_replay_leaves_the_collector_as_it_was(
    capsys: pytest.CaptureFixture[str],
) -> None:
    threshold = gc.get_threshold()
    gc.disable()
    try:
        assert cli.main(["replay", "--kernel", str(XID_LOG), "--tz", "Mars/Base"]) == 2
        assert not gc.isenabled()
    finally:
        gc.enable()
    assert cli.main(["replay", "--kernel", str(XID_LOG), "--rules", "/nonexistent.yaml"]) == 2
    capsys.readouterr()
    assert (gc.isenabled(), gc.get_freeze_count(), gc.get_threshold()) == (True, 0, threshold)
