"""A reader that goes away (`inferwatch replay ... | head -1`) ends the command quietly."""

from __future__ import annotations

import os
import subprocess
import sys

from conftest import REPO


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
