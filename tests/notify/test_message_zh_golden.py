"""The Chinese message of every shipped alert, against committed golden text.

Every alerting rule in rules/*.yaml must carry ``summary_zh``, ``diagnosis_zh`` and
``action_zh``. The alerts are the ones the shipped rule tests (tests/rules/shipped) make fire,
each distinct label set once, with their templates expanded by the real rule engine on those
tests' series; each becomes the title and body a chat channel sends with ``language: zh``
(plus one resolved message per file, for the localised duration). The goldens are regenerated
only on request: ``pytest tests/notify/test_message_zh_golden.py --update-golden``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from conftest import REPO
from inferwatch.alerts.model import Alert
from inferwatch.notify.message import render
from inferwatch.notify.payload import rfc3339, webhook_v4
from inferwatch.promtool.runner import run_file
from inferwatch.promtool.testfile import AlertRuleTest, TestGroup
from inferwatch.rules.loader import load_rule_files

RULES = sorted((REPO / "rules").glob("*.yaml"))
TESTS = REPO / "tests" / "rules" / "shipped"
GOLDEN = REPO / "tests" / "golden" / "messages_zh"
ZH_KEYS = ("summary_zh", "diagnosis_zh", "action_zh")
LASTED_S = 754.0
"""How long the resolved example lasted: 12 minutes 34 seconds."""
EPOCH = 1772416800.0
"""The rule tests' time 0 shown as 2026-03-02 10:00 in Shanghai, where these messages are read."""
SHANGHAI = ZoneInfo("Asia/Shanghai")


def _alerts_of(rule_file: Path) -> list[Alert]:
    """The alerts the rule file's shipped tests make fire, first sighting of each label set."""
    seen: dict[tuple[tuple[str, str], ...], Alert] = {}

    def observe(_: TestGroup, __: AlertRuleTest, firing: list[Alert]) -> None:
        for alert in firing:
            seen.setdefault(alert.labels, alert)

    result = run_file(TESTS / f"{rule_file.stem}.test.yaml", observe=observe)
    assert result.ok, result.errors
    return list(seen.values())


def _payload(alert: Alert, *, resolved: bool = False) -> dict[str, Any]:
    payload = webhook_v4(receiver="chat", group_key="{}:{}", group_labels={"alertname": alert.name},
                         alerts=[alert], external_url="http://gpu-a:9945",
                         generator_url="")  # fmt: skip
    item = payload["alerts"][0]
    started = EPOCH + (alert.fired_at if alert.fired_at is not None else alert.active_at)
    item["startsAt"] = rfc3339(started)
    if resolved:
        item.update(status="resolved", endsAt=rfc3339(started + LASTED_S))
        payload["status"] = "resolved"
    return payload


def _messages(alerts: list[Alert]) -> str:
    out = []
    for i, alert in enumerate(alerts):
        names = " ".join(f"{k}={v}" for k, v in alert.labels)
        for resolved in (False, True) if i == 0 else (False,):
            msg = render(_payload(alert, resolved=resolved), language="zh", tz=SHANGHAI)
            out.append(f"===== {names}\n{msg.title}\n\n{msg.body}\n")
    return "\n".join(out)


def test_every_shipped_alert_has_chinese_annotations() -> None:
    rule_set, problems = load_rule_files(RULES)
    assert problems == []
    missing = [
        f"{rule.name}: {key}"
        for _, rule in rule_set.alerting_rules()
        for key in ZH_KEYS
        if key not in dict(rule.annotations) or not dict(rule.annotations)[key].source.strip()
    ]
    assert missing == []


@pytest.mark.parametrize("rule_file", RULES, ids=[p.name for p in RULES])
def test_chinese_messages_match_golden(rule_file: Path, request: pytest.FixtureRequest) -> None:
    alerts = _alerts_of(rule_file)
    rule_set, _ = load_rule_files([rule_file])
    names = {rule.name for _, rule in rule_set.alerting_rules()}
    assert names - {a.name for a in alerts} == set(), "an alert without a firing example"
    for alert in alerts:
        notes = dict(alert.annotations)
        for key in ZH_KEYS:
            assert notes.get(key, "").strip(), f"{alert.name}: {key} is empty"
            assert "<error expanding template" not in notes[key], f"{alert.name}: {notes[key]}"
    text = _messages(alerts)
    golden = GOLDEN / f"{rule_file.stem}.txt"
    if request.config.getoption("--update-golden"):
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(text)
    assert text == golden.read_text()
    assert "[严重]" in text or "[警告]" in text
    assert "已恢复，持续 12 分钟 34 秒" in text
