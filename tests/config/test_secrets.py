"""Secrets from env:/file: references are resolved and registered for redaction."""

from __future__ import annotations

from pathlib import Path

import pytest

from inferwatch.configfile import parse_config
from inferwatch.errors import ConfigError
from inferwatch.redact import MASK, redact, redact_obj


def test_env_reference_resolves_and_is_redacted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("IW_TEST_HOOK", "http://127.0.0.1:9/hook?key=s3cr3t-env-value")
    cfg = parse_config(
        "receivers:\n  - name: r\n    webhook_configs:\n      - url: env:IW_TEST_HOOK\n"
        "route:\n  receiver: r\n",
        "c.yaml",
    )
    url = cfg.receivers[0].integrations()["webhook_configs"][0]["url"]
    assert url.endswith("s3cr3t-env-value")
    assert "s3cr3t-env-value" not in redact(f"posting to {url} failed")
    assert MASK in redact(url)


def test_file_reference(tmp_path: Path) -> None:
    secret_file = tmp_path / "token"
    secret_file.write_text("tok-from-a-file-123\n")
    cfg = parse_config(
        f"receivers:\n  - name: r\n    telegram_configs:\n      - bot_token: file:{secret_file}\n"
        "        chat_id: 42\n"
        "route:\n  receiver: r\n",
        "c.yaml",
    )
    token = cfg.receivers[0].integrations()["telegram_configs"][0]["bot_token"]
    assert token == "tok-from-a-file-123"
    assert redact_obj({"a": [f"x {token} y"]}) == {"a": [f"x {MASK} y"]}


def test_plain_credential_fields_are_registered_too() -> None:
    parse_config(
        "receivers:\n  - name: r\n    wecom_configs:\n      - key: plain-wecom-key-777\n"
        "route:\n  receiver: r\n",
        "c.yaml",
    )
    assert "plain-wecom-key-777" not in redact("error for plain-wecom-key-777")


def test_missing_env_is_a_located_error() -> None:
    with pytest.raises(ConfigError) as info:
        parse_config(
            "receivers:\n  - name: r\n    webhook_configs:\n      - url: env:IW_SURELY_UNSET_VAR\n",
            "c.yaml",
        )
    (problem,) = info.value.problems
    assert "IW_SURELY_UNSET_VAR is not set" in str(problem)
    assert str(problem).startswith("c.yaml:2:5: receivers[0]: ")


def test_url_query_secrets_are_masked_even_unregistered() -> None:
    text = "POST https://qyapi.example/send?key=abcdef-unregistered failed"
    assert "abcdef-unregistered" not in redact(text)
    assert "user:pw-unregistered@" not in redact("http://user:pw-unregistered@host/x")
