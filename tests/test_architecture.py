"""The package map of DESIGN.md §2 holds (import-linter's contracts in pyproject.toml), and the
contracts are not vacuous: forbidden imports, planted in a copy of the package, break them."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from conftest import REPO

LINT = Path(sys.executable).with_name("lint-imports")


def lint(root: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(root / "daemon")}
    return subprocess.run(
        [str(LINT), str(root / "pyproject.toml"), "--no-cache"],
        cwd=root / "daemon",
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_contracts_hold() -> None:
    result = lint(REPO)
    assert result.returncode == 0, result.stdout[-4000:]
    assert "0 broken" in result.stdout


def test_planted_violations_break_the_contracts(tmp_path: Path) -> None:
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    shutil.copytree(REPO / "daemon" / "inferwatch", tmp_path / "daemon" / "inferwatch",
                    ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip
    parser = tmp_path / "daemon" / "inferwatch" / "parsers" / "xid.py"
    parser.write_text(parser.read_text() + "\nfrom inferwatch.store import tsdb  # noqa\n")
    store = tmp_path / "daemon" / "inferwatch" / "store" / "events.py"  # upwards: a layer break
    store.write_text(store.read_text() + "\nfrom inferwatch.rules import loader  # noqa\n")
    result = lint(tmp_path)
    assert result.returncode != 0
    assert "inferwatch.parsers is not allowed to import inferwatch.store" in result.stdout
    assert "inferwatch.store is not allowed to import inferwatch.rules" in result.stdout
    assert "No cycles are allowed in inferwatch." in result.stdout  # store <-> rules
    assert "Contracts: 5 kept, 3 broken." in result.stdout
