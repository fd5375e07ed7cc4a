"""What systemctl, docker and an OpenAI server print, read into facts."""

from __future__ import annotations

from inferwatch.parsers.service_state import (
    listed_models,
    parse_container_state,
    parse_port_file,
    parse_unit_show,
)


def test_unit_show() -> None:
    text = (
        "LoadState=loaded\nActiveState=failed\nSubState=failed\nMainPID=0\nNRestarts=2\n"
        "ExecMainStatus=1\nResult=exit-code\n"
    )
    unit = parse_unit_show(text)
    assert unit is not None
    assert (unit.active, unit.main_pid, unit.restarts, unit.exit_status) == ("failed", 0, 2, 1)
    assert unit.summary == "failed/failed, result exit-code, exit status 1"
    assert parse_unit_show("") is None
    assert parse_unit_show("garbage") is None


def test_container_state() -> None:
    text = (
        '{"Status":"running","Running":true,"Pid":4242,"ExitCode":0,'
        '"StartedAt":"2024-05-01T10:00:00.5Z","Health":{"Status":"starting"}}\t3\n'
    )
    state = parse_container_state(text)
    assert state is not None
    assert (state.running, state.pid, state.health, state.restarts) == (True, 4242, "starting", 3)
    assert state.started_at == 1714557600.5
    assert parse_container_state("not json\t1") is None


def test_models_and_port_file() -> None:
    assert listed_models(b'{"data":[{"id":"a"},{"id":"b"}]}') == ["a", "b"]
    assert listed_models(b"<html>") is None
    assert listed_models(b'{"detail":"x"}') is None
    assert parse_port_file("8000\n") == 8000
    assert parse_port_file("127.0.0.1:30001") == 30001
    assert parse_port_file("") is None
    assert parse_port_file("70000") is None
