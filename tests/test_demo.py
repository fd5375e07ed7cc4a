"""The demo runs the real daemon on a simulated host and exits 0; engine lines travel through the
real file tailer (the demo itself fails when none arrived)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import free_port

pytestmark = pytest.mark.integration


def test_demo_runs_for_ten_seconds_and_reads_the_engine_log() -> None:
    port = free_port()
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "inferwatch",
            "demo",
            "--duration",
            "10",
            "--listen",
            f"127.0.0.1:{port}",
        ],
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    finished = [line for line in result.stderr.splitlines() if '"demo finished"' in line]
    assert finished, result.stderr[-3000:]

    summary = json.loads(finished[-1])
    assert summary["engine_lines_read"] > 0
    assert summary["engine_lines_read"] == summary["engine_lines_written"]
