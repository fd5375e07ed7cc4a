"""Hardening item 11: a key no channel reads is refused at its place, never ignored; the
``http_config`` keys inferwatch implements (authorization, basic_auth, tls_config…) load, and
those of Alertmanager's it lacks are named as such."""

from __future__ import annotations

from pathlib import Path

import pytest

from inferwatch.configfile import load_config
from inferwatch.errors import ConfigError
from reliability.confcheck import check

WEBHOOK = """\
route: {receiver: phone}
receivers:
  - name: phone
    webhook_configs:
      - url: http://127.0.0.1:9/hook
        send_resolvd: false
        http_config:
          authorization: {type: Bearer, credentials: abc}
          oauth2: {client_id: u, client_secret: p}
          tls_config: {insecure_skip_verify: true, ca_fil: /x}
          enable_http2: true
          proxy_url: http://127.0.0.1:3128
"""


def lines(path: Path) -> list[str]:
    with pytest.raises(ConfigError) as info:
        load_config(path)
    return [str(p) for p in info.value.problems]


def test_webhook_typos_and_unsupported_http_config_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(WEBHOOK)
    at = f"{path}:{{}}: receivers[0].webhook_configs[0]."
    unsupported = "not supported: inferwatch does not implement http_config."
    assert lines(path) == [
        at.format("6:9") + "send_resolvd: unknown key; did you mean send_resolved?",
        at.format("9:11") + "http_config.oauth2: " + unsupported + "oauth2",
        at.format("10:52") + "http_config.tls_config.ca_fil: unknown key",
        at.format("11:11") + "http_config.enable_http2: " + unsupported + "enable_http2",
    ]


def test_check_exits_2_on_an_unknown_channel_key(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(WEBHOOK)
    result = check(path)
    assert result.code == 2, result.out
    assert "send_resolvd: unknown key" in result.out


@pytest.mark.parametrize(
    ("entry", "where"),
    [
        ("ntfy_configs: [{topic: t0p1c, priorty: 5}]", "ntfy_configs[0].priorty"),
        ("console_configs: [{send_resolved: false, titel: x}]", "console_configs[0].titel"),
        (
            "slack_configs: [{api_url: 'http://127.0.0.1:9/x', chanel: '#a'}]",
            "slack_configs[0].chanel",
        ),
        (
            "alertmanager_configs: [{url: 'http://127.0.0.1:9', http_config: {timeout: 5s}}]",
            "alertmanager_configs[0].http_config.timeout",
        ),
    ],
)
def test_every_channel_refuses_keys_it_does_not_read(
    tmp_path: Path, entry: str, where: str
) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(f"route: {{receiver: r}}\nreceivers:\n  - name: r\n    {entry}\n")
    [line] = lines(path)
    assert f": receivers[0].{where}: unknown key" in line, line
    assert line.startswith(f"{path}:4:"), line


def test_known_keys_still_load(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(
        "language: zh\nroute: {receiver: r}\nreceivers:\n  - name: r\n"
        "    webhook_configs: [{url: 'http://127.0.0.1:9/h', send_resolved: false,\n"
        "                       max_alerts: 3, http_config: {proxy_url: 'http://127.0.0.1:1',\n"
        "                       timeout: 5s}}]\n"
        "    ntfy_configs: [{topic: t0p1c, language: en, title: '{{ .Status }}'}]\n"
    )
    config = load_config(path)
    assert config.receivers[0].name == "r"
