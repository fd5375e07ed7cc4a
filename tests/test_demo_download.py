"""``inferwatch demo`` watches a model download by a real child process: its progress series
and then its ``finished`` verdict are on /metrics within 25 s, and the status API lists it."""

from __future__ import annotations

import subprocess
import sys

import httpx

from conftest import free_port, wait_until

DEMO = 'download="demo-model"'


def _get(url: str) -> str | None:
    try:
        return httpx.get(url, timeout=2.0, trust_env=False).text
    except httpx.HTTPError:
        return None


def test_demo_download_finishes_within_25_seconds() -> None:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "inferwatch", "demo", "--duration", "60",
         "--listen", f"127.0.0.1:{port}", "--log-level", "warning"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until(lambda: _get(base + "/metrics"), 60, "the demo's /metrics")  # start-up
        progress = wait_until(
            lambda: (t := _get(base + "/metrics") or "") and f"inferwatch_download_bytes{{{DEMO}}}" in t and t,
            25, "the download's progress series",
        )  # fmt: skip
        assert f"inferwatch_download_expected_bytes{{{DEMO}}} 4.194304e+06" in progress
        assert f'inferwatch_download_state{{{DEMO},state="downloading"}} 1.0' in progress
        done = wait_until(
            lambda: (t := _get(base + "/metrics") or "")
            and f'inferwatch_download_verdicts_total{{{DEMO},verdict="finished"}} 1.0' in t
            and t,
            25, "the download's finished verdict",
        )  # fmt: skip
        assert f'inferwatch_download_state{{{DEMO},state="finished"}} 1.0' in done
        status = httpx.get(base + "/api/v1/status", timeout=5.0, trust_env=False).json()
        (row,) = status["downloads"]
        assert row["name"] == "demo-model" and row["state"] == "finished"
        assert row["bytes"] == row["expected_bytes"] == 4_194_304
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert proc.returncode == 0, proc.stderr.read().decode() if proc.stderr else ""
