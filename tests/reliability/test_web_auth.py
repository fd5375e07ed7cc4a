"""Hardening item 4, the auth half: with ``web.basic_auth_users`` (and TLS) the real daemon lets
nobody in without the password, the CLI still works with it, and listening beyond loopback
without it raises an alert that configuring auth clears."""

from __future__ import annotations

import json
import os
import signal
import ssl
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import bcrypt
import httpx
import pytest

from certs import make_ca, server_pair
from conftest import free_port, wait_until

PASSWORD = "c0rrect-h0rse"
HASH = bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt(rounds=4)).decode()
SILENCE = {
    "matchers": [{"name": "alertname", "value": ".+", "isRegex": True, "isEqual": True}],
    "startsAt": "2030-01-01T00:00:00Z",
    "endsAt": "2099-01-01T00:00:00Z",
    "createdBy": "mallory",
    "comment": "shh",
}


@dataclass
class Daemon:
    proc: subprocess.Popen[bytes]
    base: str
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


@contextmanager
def daemon(tmp_path: Path, listen: str, web: str | None, *args: str) -> Iterator[Daemon]:
    tmp_path.mkdir(exist_ok=True)
    config = tmp_path / "config.yaml"
    config.write_text(
        "kernel: {source: 'off'}\ngpus: {backend: 'off'}\n" + (f"web:\n{web}" if web else "")
    )
    log_path = tmp_path / "daemon.log"
    cmd = [sys.executable, "-m", "inferwatch", "run", "--config", str(config), "--listen", listen]
    cmd += ["--state-dir", str(tmp_path / "state"), *args]
    with log_path.open("wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
    port = listen.rsplit(":", 1)[1]
    d = Daemon(proc, f"http://127.0.0.1:{port}", log_path)
    try:
        yield d
    finally:
        proc.terminate()
        proc.wait(15)


def wait_serving(d: Daemon, **client: object) -> None:
    def answers() -> bool | None:
        assert d.proc.poll() is None, d.log()
        try:
            httpx.get(f"{d.base}/healthz", timeout=5, trust_env=False, **client)  # type: ignore[arg-type]
        except httpx.HTTPError:
            return None
        return True

    wait_until(answers, 30, "the daemon's HTTP server")


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "inferwatch", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **(env or {})},
    )


@pytest.mark.integration
def test_basic_auth_keeps_everyone_out_but_the_user(tmp_path: Path) -> None:
    with daemon(
        tmp_path, f"127.0.0.1:{free_port()}", f"  basic_auth_users: {{alice: '{HASH}'}}\n"
    ) as d:
        wait_serving(d)
        with httpx.Client(base_url=d.base, trust_env=False, timeout=10) as c:
            assert c.post("/api/v1/silences", json=SILENCE).status_code == 401
            assert c.get("/metrics").status_code == 401
            assert c.get("/api/v1/status").status_code == 401
            assert c.get("/metrics", auth=("alice", "wrong")).status_code == 401
            assert c.get("/metrics", auth=("mallory", PASSWORD)).status_code == 401
            assert c.get("/metrics", auth=("alice", PASSWORD)).status_code == 200
            ok = c.post("/api/v1/silences", json=SILENCE, auth=("alice", PASSWORD))
            assert ok.status_code == 200, ok.text
            listed = c.get("/api/v1/silences", auth=("alice", PASSWORD)).json()
        assert [s["createdBy"] for s in listed["silences"]] == ["mallory"]
    assert HASH not in d.log() and PASSWORD not in d.log()


@pytest.mark.integration
def test_the_cli_works_with_tls_and_auth(tmp_path: Path) -> None:
    ca = make_ca(tmp_path)
    server_pair(tmp_path, ca)
    web_file = tmp_path / "web-config.yml"
    web_file.write_text(
        "tls_server_config: {cert_file: server.crt, key_file: server.key}\n"
        f"basic_auth_users: {{alice: '{HASH}'}}\n"
    )
    password_file = tmp_path / "alice.pw"
    password_file.write_text(PASSWORD + "\n")
    client_file = tmp_path / "http-config.yml"  # amtool's --http.config.file format
    client_file.write_text(
        f"basic_auth: {{username: alice, password_file: {password_file}}}\n"
        f"tls_config: {{ca_file: {ca.cert}}}\n"
    )
    port = free_port()
    url = f"https://127.0.0.1:{port}"
    args = ("--web.config.file", str(web_file))
    with daemon(tmp_path, f"127.0.0.1:{port}", None, *args) as d:
        d.base = url
        wait_serving(d, verify=ssl.create_default_context(cafile=ca.cert))
        refused = cli(
            "status",
            "--url",
            url,
            "--http.config.file",
            str(client_file).replace("http-config", "nope"),
        )
        assert refused.returncode == 2 and "cannot read" in refused.stderr
        no_password = client_file.with_name("ca-only.yml")
        no_password.write_text(f"tls_config: {{ca_file: {ca.cert}}}\n")
        asked = cli("status", "--url", url, "--http.config.file", str(no_password))
        assert asked.returncode == 1 and "asks for credentials" in asked.stderr
        status = cli("status", "--url", url, "--http.config.file", str(client_file))
        assert status.returncode == 0, status.stderr
        assert json.loads(status.stdout)["listen"] == f"127.0.0.1:{port}"
        env = {"INFERWATCH_URL": url, "INFERWATCH_HTTP_CONFIG_FILE": str(client_file)}
        added = cli("silence", "add", "--matcher", 'alertname="X"', "--comment", "maint", env=env)
        assert added.returncode == 0, added.stderr
        listed = cli("silence", "list", env=env)
        assert listed.returncode == 0 and "maint" in listed.stdout, listed.stderr
        expired = cli("silence", "expire", added.stdout.strip(), env=env)
        assert expired.returncode == 0, expired.stderr


def exposed_metric(d: Daemon, auth: tuple[str, str] | None = None) -> str:
    text = httpx.get(f"{d.base}/metrics", auth=auth, timeout=10, trust_env=False).text
    [line] = [x for x in text.splitlines() if x.startswith("inferwatch_http_exposed_without_auth")]
    return line.split()[-1]


@pytest.mark.integration
def test_beyond_loopback_the_alert_series_follows_auth(tmp_path: Path) -> None:
    """Open at start (series 1, a problem); auth added by a reload (SIGHUP) closes it: the
    series goes to 0 and only the no-TLS remark stays."""
    with daemon(tmp_path, f"0.0.0.0:{free_port()}", None) as d:
        wait_serving(d)
        assert exposed_metric(d) == "1.0"
        problems = httpx.get(f"{d.base}/api/v1/status", timeout=10, trust_env=False).json()
        assert any("without authentication" in p for p in problems["problems"])
        config = tmp_path / "config.yaml"
        config.write_text(config.read_text() + f"web:\n  basic_auth_users: {{alice: '{HASH}'}}\n")
        d.proc.send_signal(signal.SIGHUP)

        def closed() -> bool | None:
            r = httpx.get(f"{d.base}/metrics", timeout=10, trust_env=False)
            return True if r.status_code == 401 else None

        wait_until(closed, 30, "the reloaded config's basic auth")
        assert exposed_metric(d, ("alice", PASSWORD)) == "0.0"
        doc = httpx.get(
            f"{d.base}/api/v1/status", auth=("alice", PASSWORD), timeout=10, trust_env=False
        ).json()
        [problem] = [p for p in doc["problems"] if "not loopback" in p]
        assert "without TLS" in problem  # a password in clear is still worth a word
