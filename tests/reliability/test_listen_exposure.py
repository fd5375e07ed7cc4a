"""A daemon listening beyond loopback without authentication says so: a log warning at start
and an entry in the status API's problems list."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from conftest import free_port, wait_until
from inferwatch.export.exposure import exposure_problem, is_loopback
from reliability.attack_table import AttackRow


@pytest.mark.parametrize(
    ("address", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.8.9.10", True),
        ("::1", True),
        ("[::1]", True),
        ("localhost", True),
        ("::ffff:127.0.0.1", True),
        ("0.0.0.0", False),
        ("::", False),
        ("", False),
        ("10.1.2.3", False),
        ("gpu-host.example", False),
    ],
)
def test_is_loopback(address: str, loopback: bool, attack: AttackRow) -> None:
    attack.describe("listen address classified", "loopback" if loopback else "off the host")
    attack.saw("loopback" if is_loopback(address) else "off the host")
    assert is_loopback(address) is loopback


def test_the_problem_names_the_exposed_addresses(attack: AttackRow) -> None:
    attack.describe("bound to 127.0.0.1 and 0.0.0.0", "a problem naming 0.0.0.0; none for loopback")
    assert exposure_problem(["127.0.0.1", "::1"]) is None
    problem = exposure_problem(["127.0.0.1", "0.0.0.0"])
    attack.saw(repr(problem)[:90])
    assert problem is not None
    assert "0.0.0.0" in problem and "without authentication" in problem


@pytest.mark.integration
def test_a_wildcard_listen_warns_at_start_and_in_status(tmp_path: Path, attack: AttackRow) -> None:
    attack.describe(
        "`run --listen 0.0.0.0:PORT` without auth", "one warning at start, a problem in status"
    )
    port = free_port()
    log_path = tmp_path / "daemon.log"
    cmd = [sys.executable, "-m", "inferwatch", "run", "--listen", f"0.0.0.0:{port}"]
    cmd += ["--state-dir", str(tmp_path / "state")]
    with log_path.open("wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
    try:

        def status() -> dict[str, object] | None:
            assert proc.poll() is None, log_path.read_text()
            try:
                doc: dict[str, object] = httpx.get(
                    f"http://127.0.0.1:{port}/api/v1/status", timeout=5, trust_env=False
                ).json()
            except httpx.HTTPError:
                return None
            return doc

        doc = wait_until(status, 30, "the daemon's status API")
    finally:
        proc.terminate()
        proc.wait(10)
    problems = doc["problems"]
    assert isinstance(problems, list)
    assert any("0.0.0.0" in p and "without authentication" in p for p in problems), problems
    lines = [json.loads(x) for x in log_path.read_text().splitlines() if x.startswith("{")]
    warned = [x for x in lines if x.get("event") == "HTTP API reachable off the host"]
    exposed = [p for p in problems if "0.0.0.0" in str(p)]
    attack.saw(f"{len(warned)} warning(s) logged; {len(exposed)} problem(s) in status")
    assert len(warned) == 1 and warned[0]["level"] == "warning"
