"""The CLI's client settings: amtool's --http.config.file format, problems at their place."""

from __future__ import annotations

from pathlib import Path

import pytest

from inferwatch.errors import ConfigError
from inferwatch.export.apiclient import HTTP_CONFIG_ENV, URL_ENV, api_target, load_http_config


def test_an_amtool_style_file_loads(tmp_path: Path) -> None:
    path = tmp_path / "http.yml"
    path.write_text(
        "basic_auth:\n  username: alice\n  password: pw-1234\n"
        "tls_config:\n  insecure_skip_verify: true\nfollow_redirects: false\n"
    )
    options = load_http_config(str(path))
    assert options.http.authorization() == "Basic YWxpY2U6cHctMTIzNA=="
    assert options.http.follow_redirects is False


def test_problems_are_placed(tmp_path: Path) -> None:
    path = tmp_path / "http.yml"
    path.write_text("basic_auth: {username: a}\noauth2: {client_id: x}\nbasic_aut: {}\n")
    with pytest.raises(ConfigError) as info:
        load_http_config(str(path))
    lines = [str(p) for p in info.value.problems]
    assert lines[0].startswith(f"{path}:2:1: oauth2: not supported")
    assert lines[1] == f"{path}:3:1: basic_aut: unknown key"
    path.write_text("tls_config:\n  ca_file: /nonexistent.crt\n")
    with pytest.raises(ConfigError) as info:
        load_http_config(str(path))
    assert str(info.value.problems[0]).startswith(f"{path}:1:1: tls_config: ")


def test_flags_then_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(URL_ENV, raising=False)
    monkeypatch.delenv(HTTP_CONFIG_ENV, raising=False)
    assert api_target("127.0.0.1:9945", None, None).base == "http://127.0.0.1:9945"
    monkeypatch.setenv(URL_ENV, "https://gpu1:9945/")
    path = tmp_path / "http.yml"
    path.write_text("authorization: {credentials: t0ken}\n")
    monkeypatch.setenv(HTTP_CONFIG_ENV, str(path))
    target = api_target("127.0.0.1:9945", None, None)
    assert target.base == "https://gpu1:9945"
    assert target.http.authorization() == "Bearer t0ken"
    assert api_target("h:1", "http://other:2", None).base == "http://other:2"
