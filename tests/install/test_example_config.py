"""deploy/config.example.yaml, the config install-service installs: valid for `inferwatch
check`, routed like the embedded default, and carrying the inhibit rules (which the default
lacks) whose alert names all exist among the shipped rules."""

from __future__ import annotations

import re
import typing

import pytest
import yaml
from pydantic import BaseModel

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


# Keys the config model only has to refuse them at their place (README: "not supported").
REFUSED = {"cert", "key", "client_ca", "cipher_suites", "curve_preferences",
           "http_server_config", "rate_limit"}  # fmt: skip


def model_keys(model: type[BaseModel], seen: set[type[BaseModel]]) -> set[str]:
    keys: set[str] = set()
    for name, info in model.model_fields.items():
        keys.add(info.alias or name)
        for arg in _flatten(info.annotation):
            if isinstance(arg, type) and issubclass(arg, BaseModel) and arg not in seen:
                seen.add(arg)
                keys |= model_keys(arg, seen)
    return keys


def _flatten(annotation: object) -> list[object]:
    args = typing.get_args(annotation)
    if not args:
        return [annotation]
    return [leaf for arg in args for leaf in _flatten(arg)]


def test_it_shows_every_key_of_the_config() -> None:
    """Every key the config model takes is in the example (set, or commented with a value), so
    the file is the reference a user edits (issue "user surface", item 6)."""
    text = EXAMPLE.read_text()
    missing = sorted(
        key
        for key in model_keys(Config, set()) - REFUSED
        if not re.search(rf"(^|[\s{{,\[-]){re.escape(key)}:", text, re.MULTILINE)
    )
    assert missing == [], missing
