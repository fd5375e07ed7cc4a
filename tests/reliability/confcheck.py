"""Run ``inferwatch check`` in a child process bounded in time and memory.

A config that makes the loader run away (an alias bomb, a stack overflow) must fail the test,
not the test run: the child gets a wall-clock timeout and an address-space limit.
"""

from __future__ import annotations

import resource
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

MEMORY_LIMIT = 1536 * 1024 * 1024  # bytes of address space the child may map
TIMEOUT_S = 30.0


@dataclass(frozen=True)
class Checked:
    code: int | None  # None: it ran past the timeout
    out: str


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def check(path: Path, timeout: float = TIMEOUT_S) -> Checked:
    """``inferwatch check --config path``: exit code and stdout+stderr."""
    cmd = [sys.executable, "-m", "inferwatch", "check", "--config", str(path)]
    try:
        done = subprocess.run(
            cmd,
            capture_output=True,
            text=True,
            timeout=timeout,
            preexec_fn=_limit_memory,
        )
    except subprocess.TimeoutExpired as exc:
        return Checked(None, str(exc.stdout or ""))
    return Checked(done.returncode, done.stdout + done.stderr)
