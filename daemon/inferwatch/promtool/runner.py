"""``inferwatch test-rules``: promtool's rule unit tests, run on inferwatch's own engine.

Each test group gets a fresh store and rule manager, then promtool 2.42's loop (reference/
promql.md §7.1): for ts = 0, Δ, 2Δ … up to the group's largest ``eval_time`` (Δ =
``evaluation_interval``), load the input samples up to ts, evaluate every rule group (those in
``group_eval_order`` first, then file order; a group's own ``interval`` is ignored), then check
the alert tests with ts ≤ eval_time < ts + Δ. A rule error stops that test group. Afterwards each
``promql_expr_test`` runs against what the loop left in the store. Rules write ``ALERTS`` and
``ALERTS_FOR_STATE`` under Prometheus's names here, so expression tests can read them.

Output and exit status are promtool's: ``Unit Testing:  FILE``, then ``  SUCCESS`` or
``  FAILED:`` and the failures (on stderr); exit 1 if any file failed.
"""

from __future__ import annotations

import glob
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from inferwatch.alerts.model import Alert
from inferwatch.clock import FakeClock
from inferwatch.promql.engine import DEFAULT_OPTIONS, EvalOptions
from inferwatch.promtool import alert_tests
from inferwatch.promtool.expr_tests import check_expr_test
from inferwatch.promtool.testfile import (
    AlertRuleTest,
    RuleTestFile,
    TestFileError,
    TestGroup,
    load_test_file,
)
from inferwatch.rules.evaluator import RuleManager
from inferwatch.rules.loader import load_rule_files
from inferwatch.rules.rule_eval import PROMETHEUS_ALERT_SERIES
from inferwatch.rules.ruleset import RuleGroup, RuleSet
from inferwatch.store.tsdb import SeriesStore

Observer = Callable[[TestGroup, AlertRuleTest, list[Alert]], None]
"""Called with each alert test and the alerts firing at its ``eval_time`` (the message golden
test renders them)."""


@dataclass(frozen=True, slots=True)
class FileResult:
    path: Path
    errors: tuple[str, ...]
    warnings: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return not self.errors


def _ordered(rule_set: RuleSet, order: tuple[str, ...]) -> list[RuleGroup]:
    first = [g for name in order for g in rule_set.groups if g.name == name]
    return first + [g for g in rule_set.groups if g not in first]


def run_group(
    test_file: RuleTestFile,
    group: TestGroup,
    rule_set: RuleSet,
    options: EvalOptions = DEFAULT_OPTIONS,
    observe: Observer | None = None,
) -> list[str]:
    """Run one test group; the failure texts (none when it passes)."""
    step = test_file.evaluation_interval_ms
    if step <= 0:
        return ["    evaluation_interval must be positive"]
    store = SeriesStore(FakeClock(0.0), retention_s=float("inf"))
    manager = RuleManager(rule_set, store, group.external_labels, group.external_url,
                          options=options, default_interval_s=step / 1000,
                          series=PROMETHEUS_ALERT_SERIES)  # fmt: skip
    groups = _ordered(rule_set, test_file.group_eval_order)
    samples = sorted(group.samples(), key=lambda s: s[1])
    loaded = 0
    failures: list[str] = []
    maxt = group.max_eval_time_ms()
    ts = 0
    while ts <= maxt:
        while loaded < len(samples) and samples[loaded][1] <= ts:
            series, t_ms, value = samples[loaded]
            store.set(series.name, series.labels, value, t_ms / 1000)
            loaded += 1
        errors: list[str] = []
        for rule_group in groups:
            outcome = manager.evaluate_group_outcome(rule_group, ts / 1000)
            errors.extend(
                f"    rule: {e.rule}, time: {alert_tests.go_duration(ts)}, err: {e.message}"
                for e in outcome.errors
            )
        if errors:
            return failures + errors
        for test in group.alert_rule_tests:
            if ts <= test.eval_time_ms < ts + step:
                firing = manager.firing(test.alertname)
                if observe is not None:
                    observe(group, test, firing)
                message = alert_tests.check(test, firing, group.name)
                if message is not None:
                    failures.append(message)
        ts += step
    for expr_test in group.promql_expr_tests:
        message = check_expr_test(expr_test, store, options)
        if message is not None:
            failures.append(message)
    return failures


def run_file(
    path: str | Path, options: EvalOptions = DEFAULT_OPTIONS, observe: Observer | None = None
) -> FileResult:
    path = Path(path)
    try:
        test_file = load_test_file(path)
    except TestFileError as exc:
        return FileResult(path, (str(exc),), ())
    warnings = list(test_file.warnings)
    rule_paths: list[Path] = []
    for pattern in test_file.rule_files:
        full = pattern if Path(pattern).is_absolute() else str(test_file.path.parent / pattern)
        found = sorted(glob.glob(full))  # noqa: PTH207 (full-path globs)
        if not found:
            warnings.append(f"no file match pattern {pattern}")
        rule_paths.extend(Path(p) for p in found)
    rule_set, problems = load_rule_files(rule_paths)
    if problems:
        return FileResult(path, tuple(str(p) for p in problems), tuple(warnings))
    errors: list[str] = []
    for group in test_file.tests:
        errors.extend(run_group(test_file, group, rule_set, options, observe))
    return FileResult(path, tuple(errors), tuple(warnings))


def main(
    paths: list[str],
    out: TextIO | None = None,
    err: TextIO | None = None,
    options: EvalOptions = DEFAULT_OPTIONS,
) -> int:
    """Run every file, print as promtool does (default: stdout/stderr); exit status 0 or 1."""
    out = out or sys.stdout
    err = err or sys.stderr
    failed = False
    for name in paths:
        print("Unit Testing: ", name, file=out)
        result = run_file(name, options)
        for warning in result.warnings:
            print(f"  WARNING: {warning}", file=err)
        if result.ok:
            print("  SUCCESS", file=out)
        else:
            failed = True
            print("  FAILED:", file=err)
            for message in result.errors:
                print(message, file=err)
                print(file=out)
        print(file=out)
    return 1 if failed else 0
