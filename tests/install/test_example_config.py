"""deploy/config.example.yaml, the config install-service installs: valid for `inferwatch
check`, routed like the embedded default, and carrying the inhibit rules (which the default
lacks) whose alert names all exist among the shipped rules."""

from __future__ import annotations

import pytest
import yaml

from conftest import REPO
from inferwatch.cli import main
from inferwatch.config.models import DEFAULT_ROUTE, Config
from inferwatch.configfile import load_config
from inferwatch.notify.matchers import parse_list

EXAMPLE = REPO / "deploy" / "config.example.yaml"


def test_inferwatch_check_passes(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--config", str(EXAMPLE)]) == 0
    assert capsys.readouterr().out.strip() == f"{EXAMPLE}: OK"


def test_it_routes_like_the_embedded_default() -> None:
    config = load_config(EXAMPLE)
    assert config.route == DEFAULT_ROUTE
    assert [r.name for r in config.receivers] == [r.name for r in Config().receivers]


def test_it_has_inhibit_rules_and_the_default_has_none() -> None:
    assert Config().inhibit_rules == []
    assert len(load_config(EXAMPLE).inhibit_rules) >= 2


def shipped_alert_names() -> set[str]:
    names: set[str] = set()
    for path in (REPO / "rules").glob("*.yaml"):
        for group in yaml.safe_load(path.read_text())["groups"]:
            names.update(r["alert"] for r in group["rules"] if "alert" in r)
    return names


def test_inhibit_rules_name_real_alerts() -> None:
    known = shipped_alert_names()
    for rule in load_config(EXAMPLE).inhibit_rules:
        for matcher in parse_list([*rule.source_matchers, *rule.target_matchers]):
            if matcher.name != "alertname":
                continue
            wanted = matcher.value.split("|") if matcher.op.endswith("~") else [matcher.value]
            assert set(wanted) <= known, f"{matcher}: not a shipped alert"
