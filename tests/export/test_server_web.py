"""The export server with a ``web:`` config, on a real 127.0.0.1 socket: HTTPS with a
certificate made for the test, basic auth on every endpoint, client certificates."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import bcrypt
import httpx
import pytest
from prometheus_client import CollectorRegistry

from certs import Pair, make_ca, make_leaf, server_pair
from inferwatch.clock import FakeClock
from inferwatch.config.web import BASE_DIR, WebConfig
from inferwatch.export.server import ExportServer
from inferwatch.notify.silence import Silences
from inferwatch.notify.silence_api import SilenceAPI

HASH = bcrypt.hashpw(b"pw", bcrypt.gensalt(rounds=4)).decode()
Check = Callable[[str, ExportServer], Awaitable[None]]


def web(doc: dict[str, Any], base: Path) -> WebConfig:
    return WebConfig.model_validate(doc, context={BASE_DIR: base})


def serve(tmp_path: Path, config: WebConfig | None, check: Check) -> None:
    silences = Silences()
    api = SilenceAPI(lambda: silences, tmp_path / "silences.json", FakeClock(1.79e9))

    async def no_events(**_kw: Any) -> list[dict[str, Any]]:
        return []

    async def main() -> None:
        server = ExportServer(CollectorRegistry(), dict, no_events, silences=api, web_config=config)
        host, port = await server.start("127.0.0.1", 0)
        try:
            await check(f"{server.scheme}://{host}:{port}", server)
        finally:
            await server.stop()

    asyncio.run(main())


def test_every_endpoint_asks_for_credentials(tmp_path: Path) -> None:
    async def check(base: str, _server: ExportServer) -> None:
        async with httpx.AsyncClient(base_url=base, trust_env=False, timeout=10) as client:
            for path in ("/metrics", "/healthz", "/api/v1/status", "/api/v1/silences", "/"):
                r = await client.get(path)
                assert r.status_code == 401, path
                assert r.headers["WWW-Authenticate"].startswith("Basic")
            r = await client.get("/metrics", auth=("alice", "wrong"))
            assert r.status_code == 401
            r = await client.get("/metrics", auth=("alice", "pw"))
            assert r.status_code == 200
            # a write without credentials is 401 whatever its content type
            r = await client.post(
                "/api/v1/silences", content=b"x", headers={"Content-Type": "text/plain"}
            )
            assert r.status_code == 401

    serve(tmp_path, web({"basic_auth_users": {"alice": HASH}}, tmp_path), check)


def test_a_reload_changes_the_users(tmp_path: Path) -> None:
    async def check(base: str, server: ExportServer) -> None:
        async with httpx.AsyncClient(base_url=base, trust_env=False, timeout=10) as client:
            assert (await client.get("/healthz")).status_code == 200
            assert server.set_web(web({"basic_auth_users": {"alice": HASH}}, tmp_path))
            assert (await client.get("/healthz")).status_code == 401
            assert server.set_web(None)
            assert (await client.get("/healthz")).status_code == 200

    serve(tmp_path, None, check)


def test_https_with_a_certificate_the_client_trusts(tmp_path: Path) -> None:
    ca = make_ca(tmp_path)
    server_pair(tmp_path, ca)
    config = web(
        {"tls_server_config": {"cert_file": "server.crt", "key_file": "server.key"},
         "basic_auth_users": {"alice": HASH}},
        tmp_path,
    )  # fmt: skip

    async def check(base: str, server: ExportServer) -> None:
        assert base.startswith("https://127.0.0.1:")
        trusted = ssl.create_default_context(cafile=ca.cert)
        async with httpx.AsyncClient(base_url=base, verify=trusted, trust_env=False) as client:
            r = await client.get("/metrics", auth=("alice", "pw"))
            assert r.status_code == 200
        async with httpx.AsyncClient(base_url=base, trust_env=False) as client:
            with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
                await client.get("/metrics")
        plain = base.replace("https://", "http://")
        async with httpx.AsyncClient(trust_env=False, timeout=5) as client:
            with pytest.raises(httpx.HTTPError):
                await client.get(plain + "/metrics")
        # TLS settings are read at start: a reload cannot change them
        assert not server.set_web(web({"basic_auth_users": {"alice": HASH}}, tmp_path))
        assert server.scheme == "https"

    serve(tmp_path, config, check)


def _client_context(ca: Pair, client: Pair | None) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=ca.cert)
    if client is not None:
        ctx.load_cert_chain(client.cert, client.key)
    return ctx


def test_client_certificates_and_allowed_names(tmp_path: Path) -> None:
    ca = make_ca(tmp_path)
    server_pair(tmp_path, ca)
    scraper = make_leaf(tmp_path, ca, "scraper", "DNS:scraper.example", "clientAuth")
    stranger = make_leaf(tmp_path, ca, "stranger", "DNS:stranger.example", "clientAuth")
    config = web(
        {"tls_server_config": {
            "cert_file": "server.crt", "key_file": "server.key",
            "client_auth_type": "RequireAndVerifyClientCert", "client_ca_file": "ca.crt",
            "client_allowed_sans": ["scraper.example"]}},
        tmp_path,
    )  # fmt: skip

    async def get(base: str, client: Pair | None) -> int:
        ctx = _client_context(ca, client)
        async with httpx.AsyncClient(base_url=base, verify=ctx, trust_env=False) as c:
            return (await c.get("/healthz")).status_code

    async def check(base: str, _server: ExportServer) -> None:
        assert await get(base, scraper) == 200
        assert await get(base, stranger) == 403
        with pytest.raises(httpx.HTTPError):
            await get(base, None)

    serve(tmp_path, config, check)
