"""README.md's configuration example is a valid config (it is what newcomers copy)."""

from __future__ import annotations

from pathlib import Path

import pytest

from inferwatch.configfile import parse_config

README = Path(__file__).resolve().parents[1] / "README.md"


def test_the_configuration_example_loads(monkeypatch: pytest.MonkeyPatch) -> None:
    section = README.read_text().split("## Configuration", 1)[1]
    block = section.split("```yaml\n", 1)[1].split("```", 1)[0]
    monkeypatch.setenv("PHONE_WEBHOOK_URL", "http://127.0.0.1:9/phone")
    monkeypatch.setenv("NTFY_TOPIC", "homelab-alerts")
    config = parse_config(block, "README.md")
    assert config.route.hold_time_intervals == ["night"]
    assert config.digests and config.digests[0].cron == "0 8 * * *"
    assert config.downloads[0].downloader() == ("user_unit", "nvfp4-download")
