"""Parity with promtool 2.42: every file in parity/ must pass under promtool *and* inferwatch.

Each file is an ordinary ``promtool test rules`` file of ``promql_expr_test`` cases; the expected
samples were written from reference/promql.md and confirmed by promtool itself. Our side loads the
same input series into a SeriesStore and compares the same way promtool does (exact labels, exact
float equality).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from inferwatch.promql.types import EvalOptions
from inferwatch.promtool.expr_tests import run_expr_tests
from inferwatch.promtool.testfile import load_test_file

PARITY = sorted((Path(__file__).parent / "parity").glob("*.yaml"))
PROMTOOL = shutil.which("promtool")


def _ids(paths: list[Path]) -> list[str]:
    return [p.stem for p in paths]


@pytest.mark.parametrize("path", PARITY, ids=_ids(PARITY))
def test_promtool_accepts(path: Path) -> None:
    if PROMTOOL is None:
        pytest.skip("promtool is not installed")
    done = subprocess.run(
        [PROMTOOL, "test", "rules", str(path)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("path", PARITY, ids=_ids(PARITY))
def test_inferwatch_agrees(path: Path, eval_options: EvalOptions) -> None:
    failures = run_expr_tests(load_test_file(path), eval_options)
    assert not failures, "\n".join(f.message for f in failures)


def test_enough_cases() -> None:
    cases = sum(
        len(group.promql_expr_tests) for path in PARITY for group in load_test_file(path).tests
    )
    assert cases >= 60
