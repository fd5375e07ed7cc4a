"""The table the reliability suite prints at its end: attack | expected | observed.

Every test in tests/reliability/ takes the ``attack`` fixture and fills its row::

    def test_deep_nesting_is_refused(tmp_path: Path, attack: AttackRow) -> None:
        attack.describe("10,000-level nested config", "exit 2, PATH:LINE:COL error")
        result = check(...)
        attack.saw(f"exit {result.code}: {result.out.splitlines()[0]}")
        assert result.code == 2

``describe`` names the attack and what a user should see (set it first: a test that fails
early still has its row); ``saw`` records what happened, measured, as the test goes (call it
again to add to it; each call adds a clause). ``pytest_terminal_summary`` (imported into
tests/conftest.py, so that any test directory can use the fixture) prints one row per test
that filled one, in run order, with its outcome where it did not pass. Parametrised tests get
one row per case (the case id is appended to the attack).
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

WIDTHS = (44, 36, 60)


@dataclass
class AttackRow:
    nodeid: str
    case: str = ""
    attack: str = ""
    expected: str = ""
    observed: list[str] = field(default_factory=list)

    def describe(self, attack: str, expected: str) -> None:
        self.attack = f"{attack} [{self.case}]" if self.case else attack
        self.expected = expected

    def saw(self, what: str) -> None:
        self.observed.append(what)


ROWS: list[AttackRow] = []


@pytest.fixture
def attack(request: pytest.FixtureRequest) -> Iterator[AttackRow]:
    """This test's row of the attack table (see the module's docstring)."""
    callspec = getattr(request.node, "callspec", None)
    row = AttackRow(request.node.nodeid, callspec.id if callspec is not None else "")
    ROWS.append(row)
    yield row


def _outcomes(reporter: pytest.TerminalReporter) -> dict[str, str]:
    out: dict[str, str] = {}
    for outcome in ("failed", "error", "skipped"):
        for report in reporter.stats.get(outcome, []):
            nodeid = getattr(report, "nodeid", "")
            if nodeid and nodeid not in out:
                out[nodeid] = outcome.upper()
    return out


def _cells(row: AttackRow, outcome: str | None) -> list[list[str]]:
    observed = "; ".join(row.observed) or "(nothing recorded)"
    if outcome is not None:
        observed = f"{outcome}: {observed}"
    texts = (row.attack or row.nodeid, row.expected, observed)
    return [textwrap.wrap(t, w) or [""] for t, w in zip(texts, WIDTHS, strict=True)]


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    rows = [r for r in ROWS if r.attack]
    if not rows:
        return
    outcomes = _outcomes(terminalreporter)
    tr = terminalreporter
    tr.section("attack table")
    rule = "+".join("-" * (w + 2) for w in WIDTHS)
    tr.write_line(
        "|".join(
            f" {h:<{w}} " for h, w in zip(("attack", "expected", "observed"), WIDTHS, strict=True)
        )
    )
    for row in rows:
        tr.write_line(rule)
        cells = _cells(row, outcomes.get(row.nodeid))
        for i in range(max(len(c) for c in cells)):
            parts = [c[i] if i < len(c) else "" for c in cells]
            tr.write_line("|".join(f" {p:<{w}} " for p, w in zip(parts, WIDTHS, strict=True)))
