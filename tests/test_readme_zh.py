"""README.md's 简体中文 section: its configuration example loads, in Chinese, with critical alerts
routed at once, and every alert its table names is a shipped one."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from inferwatch.configfile import parse_config
from inferwatch.rules.loader import load_rule_files

REPO = Path(__file__).resolve().parents[1]
SECTION = (REPO / "README.md").read_text().split("## 简体中文", 1)[1]


def test_the_chinese_configuration_example_loads(monkeypatch: pytest.MonkeyPatch) -> None:
    block = SECTION.split("```yaml\n", 1)[1].split("```", 1)[0]
    monkeypatch.setenv("WECOM_KEY", "693a91f6-7xxx-4bc4-97a0-0ec2sifa5aaa")
    monkeypatch.setenv("PHONE_WEBHOOK_URL", "http://127.0.0.1:9/phone")
    config = parse_config(block, "README.md")
    assert config.language == "zh"
    (critical,) = [r for r in config.route.routes if r.matchers == ['severity="critical"']]
    assert critical.group_wait == 0.0
    assert [r.name for r in config.receivers] == ["wecom", "hook"]


def test_the_chinese_alert_table_names_shipped_alerts() -> None:
    rule_set, _ = load_rule_files(sorted((REPO / "rules").glob("*.yaml")))
    shipped = {rule.name for _, rule in rule_set.alerting_rules()}
    table = SECTION.split("### 常见告警与处理", 1)[1]
    named = set(re.findall(r"`([A-Z][A-Za-z]+)`", table))
    assert named and named <= shipped
