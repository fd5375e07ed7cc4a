"""Alert parity with promtool 2.42: every file in alert_parity/ passes under promtool *and*
``inferwatch test-rules``, and every file in alert_parity/failing/ fails under both with the
very same output (promtool's failure text, byte for byte).

The cases cover ``for`` and ``keep_firing_for`` edges, pending → firing → resolved and a fresh
``for`` after a resolve, lookback and staleness, label templates, ``$value`` formatting, template
functions and errors, ALERTS/ALERTS_FOR_STATE and recorded series with their staleness markers,
and traps #2, #7 and #9 of reference/promql.md §10.
"""

from __future__ import annotations

import io
import subprocess
from pathlib import Path

import pytest

from conftest import require_tool
from inferwatch.promql.types import DEFAULT_OPTIONS, EvalOptions
from inferwatch.promtool.runner import main as run_rule_tests
from inferwatch.promtool.testfile import load_test_file

HERE = Path(__file__).parent / "alert_parity"
PASSING = sorted(HERE.glob("*.test.yaml"))
FAILING = sorted((HERE / "failing").glob("*.test.yaml"))


def _ids(paths: list[Path]) -> list[str]:
    return [p.name for p in paths]


def _inferwatch(path: Path, options: EvalOptions = DEFAULT_OPTIONS) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = run_rule_tests([str(path)], out, err, options)
    return code, out.getvalue(), err.getvalue()


def _promtool(path: Path) -> tuple[int, str, str]:
    promtool = require_tool("promtool")
    done = subprocess.run([promtool, "test", "rules", str(path)], capture_output=True, text=True)
    return done.returncode, done.stdout, done.stderr


@pytest.mark.parametrize("path", PASSING, ids=_ids(PASSING))
def test_promtool_passes(path: Path) -> None:
    code, out, err = _promtool(path)
    assert code == 0, out + err


@pytest.mark.parametrize("path", PASSING, ids=_ids(PASSING))
def test_inferwatch_passes(path: Path, eval_options: EvalOptions) -> None:
    code, _, err = _inferwatch(path, eval_options)
    assert code == 0, err


@pytest.mark.parametrize("path", FAILING, ids=_ids(FAILING))
def test_both_fail_alike(path: Path, eval_options: EvalOptions) -> None:
    ours = _inferwatch(path, eval_options)
    assert ours[0] == 1
    assert _promtool(path) == ours


def test_enough_cases() -> None:
    cases = sum(
        len(group.alert_rule_tests) for path in PASSING for group in load_test_file(path).tests
    )
    assert cases >= 15
