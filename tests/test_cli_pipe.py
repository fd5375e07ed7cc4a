"""`inferwatch replay` into a pipe: a reader that goes away (`... | head -1`) ends the command
quietly, and a reader that stays gets every line before the process ends."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from conftest import REPO
from inferwatch.cli import main


def test_a_closed_pipe_is_no_traceback() -> None:
    log = REPO / "tests/fixtures/engine/constructed_content_change.log"
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first write: every write gets EPIPE
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "inferwatch", "replay", "--engine-log", str(log)],
            stdout=write_end,
            stderr=subprocess.PIPE,
            timeout=60,
            check=False,
        )
    finally:
        os.close(write_end)
    assert proc.returncode == 141
    assert b"Traceback" not in proc.stderr


def test_every_line_reaches_a_pipe_before_the_fast_exit(capsys: pytest.CaptureFixture[str]) -> None:
    """``replay`` ends the process without the interpreter's teardown (``cli.console``): what
    it wrote is flushed first, all of it, as :func:`cli.main` in this process writes it."""
    log = REPO / "tests/fixtures/engine/constructed_content_change.log"
    args = ["replay", "--engine-log", str(log), "--format", "jsonl", "--year", "2026"]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # block-buffered
    proc = subprocess.run(
        [sys.executable, "-m", "inferwatch", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert main(args) == 0
    here = capsys.readouterr().out.splitlines()
    lines = proc.stdout.splitlines()
    assert len(lines) == len(here) > 1
    assert json.loads(lines[-1])["kind"] == "summary"
    assert lines == here
