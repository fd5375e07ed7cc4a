"""A planted secret in every channel never shows: not in the daemon's log, its errors, /metrics,
the status, alerts and silences APIs, the outbox's stored errors, `notify-test` or `check`.

Every integration points at a hostile local endpoint that fails with HTTP 500 and echoes the
whole request (URL, headers, body) back in its error body, so any error text built from the
answer or the request would carry the secret out.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from conftest import free_port, wait_until
from integration.daemon_proc import start_daemon

pytestmark = pytest.mark.integration


@pytest.fixture
def echo() -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0") or 0))
            echo = json.dumps({"url": self.path, "headers": dict(self.headers),
                               "body": body.decode(errors="replace")})  # fmt: skip
            self.send_response(500)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(echo.encode())

        do_POST = do_GET = _answer

        def log_message(self, *_args: object) -> None:
            return

    port = free_port()
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.shutdown()
        server.server_close()


def test_a_planted_secret_never_leaves(tmp_path: Path, echo: str) -> None:
    secrets = {name: f"CANARY{name.upper()}{uuid.uuid4().hex[:12]}" for name in (
        "wecom", "telegram", "dingtalk", "dingsign", "feishu", "bark", "pushover", "ntfy",
        "discord", "serverchan", "pushplus", "gotify", "slack", "webhook", "file",
    )}  # fmt: skip
    (tmp_path / "key").write_text(secrets["file"] + "\n")
    env = {"IW_TEST_TELEGRAM": secrets["telegram"]}
    s = secrets
    receivers = {
        "wecom_configs": [{"key": s["wecom"], "api_url": f"{echo}/wecom"}],
        "telegram_configs": [{"bot_token": "env:IW_TEST_TELEGRAM", "chat_id": 42,
                              "api_url": f"{echo}/tg"}],
        "dingtalk_configs": [{"access_token": s["dingtalk"], "secret": s["dingsign"],
                              "api_url": f"{echo}/ding"}],
        "feishu_configs": [{"token": s["feishu"], "api_url": f"{echo}/feishu"}],
        "bark_configs": [{"device_key": s["bark"], "url": f"{echo}/bark"}],
        "pushover_configs": [{"token": s["pushover"], "user_key": f"file:{tmp_path / 'key'}",
                              "api_url": f"{echo}/po"}],
        "ntfy_configs": [{"topic": "alerts", "token": s["ntfy"], "url": f"{echo}/ntfy"}],
        "discord_configs": [{"webhook_url": f"{echo}/api/webhooks/1/{s['discord']}"}],
        "serverchan_configs": [{"sendkey": s["serverchan"], "api_url": f"{echo}/sc"}],
        "pushplus_configs": [{"token": s["pushplus"], "api_url": f"{echo}/pp"}],
        "gotify_configs": [{"token": s["gotify"], "url": f"{echo}/gotify"}],
        "slack_configs": [{"api_url": f"{echo}/services/T0/B0/{s['slack']}"}],
        "webhook_configs": [{"url": f"{echo}/hook/{s['webhook']}"}],
    }  # fmt: skip
    rules = tmp_path / "canary.yaml"
    rules.write_text(
        "groups:\n  - name: canary\n    interval: 1s\n    rules:\n"
        "      - alert: CanaryAlways\n        expr: vector(1)\n"
        "        labels: {severity: critical}\n        annotations: {summary: canary}\n"
    )
    config = tmp_path / "c.yaml"
    config.write_text(json.dumps({
        "gpus": {"backend": "off"}, "kernel": {"source": "off"},
        "rule_files": [str(rules)],
        "route": {"receiver": "all", "group_wait": "0s", "group_interval": "10s"},
        "receivers": [{"name": "all", **receivers}],
    }))  # fmt: skip
    d = start_daemon(tmp_path, "--config", str(config), env=env)
    seen: dict[str, str] = {}
    try:
        d.wait_ready()
        kinds = [k.removesuffix("_configs") for k in receivers]

        def all_failed() -> bool:
            text = d.metrics()
            return all(
                f'integration="{k}",outcome="failure"' in text
                or f'integration="{k}",outcome="failure",' in text
                for k in kinds
            )

        wait_until(all_failed, 60, "every integration to fail against the echo endpoint")
        seen["metrics"] = d.metrics()
        for path in ("/api/v1/status", "/api/v1/alerts", "/api/v1/silences", "/api/v1/events"):
            seen[path] = d.get(path).text
    finally:
        d.terminate()
    seen["log"] = d.log()
    with sqlite3.connect(d.state_dir / "outbox.db") as db:
        seen["outbox"] = json.dumps(db.execute("SELECT * FROM outbox").fetchall())
    assert "HTTP 500" in seen["outbox"]  # the errors are there, just without the secrets
    run = [sys.executable, "-m", "inferwatch"]
    test = subprocess.run([*run, "notify-test", "--receiver", "all", "--config", str(config)],
                          capture_output=True, text=True, timeout=120, env={**env, **_env()})  # fmt: skip
    seen["notify-test"] = test.stdout + test.stderr
    assert "retry" in seen["notify-test"] or "permanent" in seen["notify-test"]
    bad = tmp_path / "bad.yaml"
    broken = {**json.loads(config.read_text()), "listen": "nowhere"}
    bad.write_text(json.dumps(broken))
    check = subprocess.run([*run, "check", "--config", str(bad)], capture_output=True,
                           text=True, timeout=60, env={**env, **_env()})  # fmt: skip
    seen["check"] = check.stdout + check.stderr
    for where, text in seen.items():
        for name, secret in secrets.items():
            assert secret not in text, f"{name}'s secret leaked into {where}"


def _env() -> dict[str, str]:

    return {k: v for k, v in os.environ.items() if k != "IW_TEST_TELEGRAM"}
