"""Shared test helpers: waiting on conditions (never fixed sleeps), free ports, the CLI."""

from __future__ import annotations

import os
import shutil
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest

from inferwatch.promql.types import DEFAULT_OPTIONS, PLAIN_OPTIONS, EvalOptions
from reliability.attack_table import attack, pytest_terminal_summary  # noqa: F401 (registered)

T = TypeVar("T")
REPO = Path(__file__).resolve().parents[1]
IN_CI = os.environ.get("CI") == "true"


def wait_until(check: Callable[[], T | None], timeout: float = 30.0, what: str = "") -> T:
    """Poll ``check`` until it returns something truthy; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    delay = 0.01
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout}s waiting for {what or check}")
        time.sleep(delay)
        delay = min(delay * 2, 0.2)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def require_tool(path: str) -> str:
    """A real external tool the suite depends on: missing is a failure under CI, else a skip."""

    found = shutil.which(path)
    if found:
        return found
    message = f"{path} is not installed (make test installs it from Debian packages)"
    if IN_CI:
        pytest.fail(message)
    pytest.skip(message)
    raise AssertionError  # unreachable


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden",
        action="store_true",
        default=False,
        help="rewrite the golden files under tests/golden instead of comparing with them",
    )


@pytest.fixture(params=[DEFAULT_OPTIONS, PLAIN_OPTIONS], ids=["plan", "plain"])
def eval_options(request: pytest.FixtureRequest) -> EvalOptions:
    """Evaluator options with the speed machinery on, then off (``EvalOptions.plan``): a test
    taking this runs under both, and must pass alike."""
    options: EvalOptions = request.param
    return options
