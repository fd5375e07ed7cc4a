"""Alertmanager's ``http_config`` on the HTTP channels, against real servers on 127.0.0.1:
the Authorization header arrives, TLS trusts the configured CA (certificates made for the
test), ``global.http_config`` is the default, and credentials never leave redacted."""

from __future__ import annotations

import asyncio
import base64
import ssl
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from certs import make_ca, make_leaf, server_pair
from inferwatch.configfile import load_config
from inferwatch.errors import ConfigError
from inferwatch.notify.channels import build
from inferwatch.notify.channels.common import with_defaults
from inferwatch.notify.channels.httpconfig import parse_http_config
from inferwatch.notify.retry import Outcome, OutcomeKind
from inferwatch.redact import redact
from notify.emulator import serve_posts

PAYLOAD: dict[str, Any] = {
    "status": "firing",
    "alerts": [
        {
            "status": "firing",
            "labels": {"alertname": "X"},
            "annotations": {},
            "startsAt": "2026-01-01T00:00:00Z",
            "endsAt": "0001-01-01T00:00:00Z",
        }
    ],
    "groupLabels": {},
    "commonLabels": {"alertname": "X"},
    "commonAnnotations": {},
}


def send(
    entry: dict[str, Any], ssl_context: ssl.SSLContext | None = None, kind: str = "webhook"
) -> tuple[Outcome, list[str | None]]:
    """Send PAYLOAD through a channel built from ``entry`` (``url`` filled in with the
    server's); returns the outcome and the Authorization headers the server saw."""
    seen: list[str | None] = []

    async def handler(request: web.Request) -> web.Response:
        seen.append(request.headers.get("Authorization"))
        return web.json_response({})

    async def main() -> Outcome:
        async with serve_posts(["/hook"], handler, asyncio.Event(), "/hook", ssl_context) as url:
            channel = build(kind, {**entry, "url": entry.get("url", url).replace("URL", url)})
            try:
                return await channel.notify(PAYLOAD)
            finally:
                await channel.aclose()

    return asyncio.run(main()), seen


def test_authorization_credentials_arrive() -> None:
    out, seen = send({"http_config": {"authorization": {"credentials": "t0ken-abc"}}})
    assert out.kind is OutcomeKind.OK and seen == ["Bearer t0ken-abc"]
    out, seen = send({"http_config": {"authorization": {"type": "Token", "credentials": "zz99"}}})
    assert seen == ["Token zz99"]


def test_basic_auth_arrives_with_a_password_file_read_at_each_send(tmp_path: Path) -> None:
    secret = tmp_path / "pw"
    secret.write_text("first-pass\n")
    entry = {"http_config": {"basic_auth": {"username": "am", "password_file": str(secret)}}}
    _, seen = send(entry)
    assert seen == ["Basic " + base64.b64encode(b"am:first-pass").decode()]
    secret.write_text("second-pass\n")  # rotated: no reload needed
    _, seen = send(entry)
    assert seen == ["Basic " + base64.b64encode(b"am:second-pass").decode()]
    assert "second-pass" not in redact("a log line with second-pass")


def test_bearer_token_file_and_an_unreadable_one(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("file-t0ken\n")
    _, seen = send({"http_config": {"bearer_token_file": str(token)}})
    assert seen == ["Bearer file-t0ken"]
    out, seen = send({"http_config": {"bearer_token_file": str(tmp_path / "gone")}})
    assert out.kind is OutcomeKind.RETRY and seen == []


def test_every_http_channel_carries_it() -> None:
    # the Alertmanager push channel builds its own config: it reads http_config as well
    auth = {"http_config": {"authorization": {"credentials": "am-t0ken"}}}

    async def handler(request: web.Request) -> web.Response:
        seen.append(request.headers.get("Authorization"))
        return web.json_response({})

    seen: list[str | None] = []

    async def main() -> Outcome:
        async with serve_posts(["/api/v2/alerts"], handler, asyncio.Event()) as url:
            channel = build("alertmanager", {**auth, "url": url})
            try:
                return await channel.notify(PAYLOAD)
            finally:
                await channel.aclose()

    assert asyncio.run(main()).kind is OutcomeKind.OK
    assert seen == ["Bearer am-t0ken"]


def test_tls_trusts_the_configured_ca_only(tmp_path: Path) -> None:
    ca = make_ca(tmp_path)
    pair = server_pair(tmp_path, ca)
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server.load_cert_chain(pair.cert, pair.key)
    out, seen = send({"http_config": {"tls_config": {"ca_file": str(ca.cert)}}}, server)
    assert out.kind is OutcomeKind.OK and seen == [None]
    out, seen = send({}, server)  # the system's CAs do not know this one
    assert out.kind is OutcomeKind.RETRY and seen == []
    out, _ = send({"http_config": {"tls_config": {"insecure_skip_verify": True}}}, server)
    assert out.kind is OutcomeKind.OK


def test_tls_server_name_and_a_client_certificate(tmp_path: Path) -> None:
    ca = make_ca(tmp_path)
    pair = make_leaf(tmp_path, ca, "named", "DNS:alerts.example", "serverAuth")
    client = make_leaf(tmp_path, ca, "client", "DNS:inferwatch.example", "clientAuth")
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=ca.cert)
    server.load_cert_chain(pair.cert, pair.key)
    server.verify_mode = ssl.CERT_REQUIRED
    tls = {"ca_file": str(ca.cert), "server_name": "alerts.example"}
    with_cert = {**tls, "cert_file": str(client.cert), "key_file": str(client.key)}
    out, _ = send({"http_config": {"tls_config": with_cert}}, server)
    assert out.kind is OutcomeKind.OK
    out, _ = send({"http_config": {"tls_config": tls}}, server)  # no client certificate
    assert out.kind is OutcomeKind.RETRY
    wrong_name = {**with_cert, "server_name": "other.example"}
    out, _ = send({"http_config": {"tls_config": wrong_name}}, server)
    assert out.kind is OutcomeKind.RETRY


def test_redirects_are_followed_unless_told_not_to() -> None:
    seen: list[str] = []

    async def moved(request: web.Request) -> web.Response:
        seen.append(request.path)
        if request.path == "/old":
            raise web.HTTPPermanentRedirect("/hook")
        return web.json_response({})

    async def main(follow: bool | None) -> Outcome:
        http = {} if follow is None else {"http_config": {"follow_redirects": follow}}
        async with serve_posts(["/old", "/hook"], moved, asyncio.Event()) as url:
            channel = build("webhook", {"url": f"{url}/old", **http})
            try:
                return await channel.notify(PAYLOAD)
            finally:
                await channel.aclose()

    assert asyncio.run(main(None)).kind is OutcomeKind.OK and seen == ["/old", "/hook"]
    seen.clear()
    assert asyncio.run(main(False)).kind is OutcomeKind.PERMANENT and seen == ["/old"]


@pytest.mark.parametrize(
    ("http_config", "says"),
    [
        ({"basic_auth": {"username": "u"}, "bearer_token": "abc1"}, "at most one of basic_auth"),
        ({"authorization": {"type": "Basic", "credentials": "x"}}, "use basic_auth"),
        ({"authorization": {"type": "Bearer"}}, "needs credentials or credentials_file"),
        ({"basic_auth": {"password": "p", "password_file": "/f"}}, "at most one of password"),
        ({"tls_config": {"cert_file": "/c"}}, "cert_file and key_file go together"),
        ({"tls_config": {"ca_file": "/nonexistent/ca.crt"}}, "cannot load a certificate"),
        ({"tls_config": {"min_version": "TLS9"}}, "min_version must be one of"),
        ({"tls_config": {"cert": "-----BEGIN"}}, "inline PEM is not supported"),
        ({"follow_redirects": "yes"}, "follow_redirects must be true or false"),
    ],
)
def test_bad_http_config_is_refused(http_config: dict[str, Any], says: str) -> None:
    with pytest.raises(ValueError, match=says):
        parse_http_config(http_config)


CONFIG = """\
global:
  http_config:
    authorization: {credentials: gl0bal-t0ken}
route: {receiver: r}
receivers:
  - name: r
    webhook_configs:
      - url: http://127.0.0.1:9/a
      - url: http://127.0.0.1:9/b
        http_config:
          basic_auth: {username: u, password: s3cret-pass}
"""


def test_global_http_config_is_the_default_and_an_entry_replaces_it(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(CONFIG)
    config = load_config(path)
    a, b = config.receivers[0].integrations()["webhook_configs"]
    first = build("webhook", with_defaults(a, "en", config.global_.http_config))
    second = build("webhook", with_defaults(b, "en", config.global_.http_config))
    assert first.config.http.authorization() == "Bearer gl0bal-t0ken"  # type: ignore[attr-defined]
    assert second.config.http.authorization().startswith("Basic ")  # type: ignore[attr-defined]
    for secret in ("gl0bal-t0ken", "s3cret-pass"):
        assert secret not in redact(f"error near {secret}")


def test_problems_point_at_the_key(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(
        CONFIG.replace(
            "{credentials: gl0bal-t0ken}", "{type: Basic, credentials: gl0bal-t0ken}"
        ).replace("password: s3cret-pass", "password: s3cret-pass, password_file: /x")
    )
    with pytest.raises(ConfigError) as info:
        load_config(path)
    lines = [str(p) for p in info.value.problems]
    assert any(
        line.startswith(f"{path}:3:21: global.http_config.authorization.type: ")
        and "use basic_auth" in line
        for line in lines
    ), lines
    assert any(
        ":11:11: receivers[0].webhook_configs[1].http_config.basic_auth: " in line
        and "at most one of password and password_file" in line
        for line in lines
    ), lines
    assert len(lines) == 2, lines  # the first entry's default is not reported twice
    assert not any("s3cret-pass" in line or "gl0bal-t0ken" in line for line in lines), lines
