"""Replay's settings: the embedded defaults equal what the config models give, and a config
file's engines, labels and rule files come through."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from inferwatch.config.models import Config
from inferwatch.configfile import parse_config
from inferwatch.replay.runner import engine_for
from inferwatch.replay.settings import ReplaySettings


def test_defaults_are_the_config_models_defaults() -> None:
    assert ReplaySettings.defaults() == ReplaySettings.of(Config())


def test_a_config_file_gives_engines_labels_and_rules() -> None:
    config = parse_config(
        "engines:\n"
        "  - name: big\n"
        "    kind: vllm\n"
        "    log: [/var/log/vllm.log]\n"
        "    decode_anchor: 120\n"
        "external_labels: {host: gpu1}\n"
        "rule_files: [/etc/inferwatch/rules/*.yaml]\n"
        "kernel: {correlation_window: 5s}\n",
        "config.yaml",
    )
    settings = ReplaySettings.of(config)
    assert settings.engine_names == {"/var/log/vllm.log": "big"}
    assert settings.engine_thresholds["big"].decode_anchor == 120.0
    assert settings.external_labels == {"host": "gpu1"}
    assert settings.rule_files == ("/etc/inferwatch/rules/*.yaml",)
    assert settings.correlation_window == 5.0


def test_a_replay_with_the_shipped_rules_never_loads_asyncio() -> None:
    """Replay runs in virtual time: no event loop, nothing of asyncio (nor ssl) imported."""
    code = (
        "import sys; from inferwatch.cli import main\n"
        "try:\n    main(['replay', '--kernel', sys.argv[1], '--engine-log', sys.argv[2],"
        " '--year', '2026', '--boot-time', '2026-01-10T00:00:00'])\n"
        "except SystemExit:\n    pass\n"
        "print('asyncio' in sys.modules, 'ssl' in sys.modules)"
    )
    fixtures = Path(__file__).parents[1] / "fixtures"
    kernel, engine = fixtures / "kernel" / "kmsg.txt", fixtures / "corpus" / "engine-lines.txt"
    done = subprocess.run(
        [sys.executable, "-c", code, str(kernel), str(engine)],
        capture_output=True,
        text=True,
        check=True,
    )
    lines = done.stdout.strip().splitlines()
    assert any(line.startswith("replayed ") for line in lines)  # the replay ran
    assert lines[-1] == "False False"


def test_a_replay_without_a_config_never_loads_the_config_models() -> None:
    code = (
        "import sys; from inferwatch.cli import main\n"
        "try:\n    main(['replay', '--no-rules', '--engine-log', sys.argv[1]])\n"
        "except SystemExit:\n    pass\n"
        "print('pydantic' in sys.modules)"
    )
    corpus = Path(__file__).parents[1] / "fixtures" / "corpus" / "engine-lines.txt"
    done = subprocess.run(
        [sys.executable, "-c", code, str(corpus)], capture_output=True, text=True, check=True
    )
    lines = done.stdout.strip().splitlines()
    assert any(line.startswith("replayed ") for line in lines)  # the replay ran
    assert lines[-1] == "False"


def test_a_relative_path_or_a_glob_finds_its_configured_engine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    logs = tmp_path / "vllm"
    logs.mkdir()
    names = {str(logs / "reg.log"): "flashnext", str(tmp_path / "sg" / "*.log"): "sglang"}
    monkeypatch.chdir(logs)
    assert engine_for("reg.log", names) == "flashnext"  # given relative, configured absolute
    assert engine_for(str(tmp_path / "sg" / "a.log"), names) == "sglang"  # a configured glob
    assert engine_for("other.log", names) is None
