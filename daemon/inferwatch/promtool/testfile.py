"""promtool's rule unit-test files (``promtool test rules``), as Prometheus 2.42 reads them.

The whole format is modelled (``rule_files``, ``evaluation_interval``, ``group_eval_order``, and per
test group ``interval``, ``input_series``, ``alert_rule_test``, ``promql_expr_test``,
``external_labels``, ``external_url``, ``name``), with promtool's strict keys, its duration syntax
and its expanding value notation (reference/promql.md §9, notify.md §1.2). Running the
expression tests is :mod:`inferwatch.promtool.expr_tests`; the alert tests belong to the alert
lifecycle. The series notation itself is :mod:`inferwatch.promtool.seriesdesc` (re-exported
here as ``parse_metric`` and ``expand_values``). Times are kept in integer milliseconds, as
promtool keeps them, so sample times and ``eval_time`` line up exactly.
"""

from __future__ import annotations

import glob
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from inferwatch import durations
from inferwatch.durations import format_duration_ms
from inferwatch.labels import Labels, make_labels
from inferwatch.promtool.seriesdesc import SeriesDescError, expand_values, parse_metric
from inferwatch.store.tsdb import SeriesStore

__all__ = [
    "AlertRuleTest",
    "ExpAlert",
    "ExpSample",
    "InputSeries",
    "PromqlExprTest",
    "RuleTestFile",
    "TestFileError",
    "TestGroup",
    "expand_values",
    "format_duration_ms",
    "load_input_series",
    "load_test_file",
    "parse_duration_ms",
    "parse_metric",
]

DEFAULT_EVALUATION_INTERVAL_MS = 60_000


class TestFileError(ValueError):
    """A test file promtool would refuse (bad YAML, unknown key, bad duration or notation)."""

    __test__ = False  # not a pytest class


def parse_duration_ms(value: object) -> int:
    """:func:`~inferwatch.durations.parse_duration_ms`, failing as a test file does."""
    try:
        return durations.parse_duration_ms(value)
    except durations.DurationError as exc:
        raise TestFileError(str(exc)) from None


# -- the file -------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class InputSeries:
    name: str
    labels: Labels
    values: tuple[float | None, ...]


@dataclass(frozen=True, slots=True)
class ExpSample:
    name: str
    labels: tuple[tuple[str, str], ...]
    value: float


@dataclass(frozen=True, slots=True)
class PromqlExprTest:
    expr: str
    eval_time_ms: int
    exp_samples: tuple[ExpSample, ...]


@dataclass(frozen=True, slots=True)
class ExpAlert:
    labels: Mapping[str, str]
    annotations: Mapping[str, str]


@dataclass(frozen=True, slots=True)
class AlertRuleTest:
    eval_time_ms: int
    alertname: str
    exp_alerts: tuple[ExpAlert, ...]


@dataclass(frozen=True, slots=True)
class TestGroup:
    __test__ = False

    name: str
    interval_ms: int | None
    input_series: tuple[InputSeries, ...]
    alert_rule_tests: tuple[AlertRuleTest, ...]
    promql_expr_tests: tuple[PromqlExprTest, ...]
    external_labels: Mapping[str, str]
    external_url: str

    def max_eval_time_ms(self) -> int:
        times = [t.eval_time_ms for t in self.alert_rule_tests]
        times += [t.eval_time_ms for t in self.promql_expr_tests]
        return max(times, default=0)

    def samples(self, until_ms: int | None = None) -> Iterator[tuple[InputSeries, int, float]]:
        """(series, time in ms, value) of every input sample, as promtool loads them.

        Slot k sits at k * interval; without ``interval`` (0 in 2.42) every slot is at 0 and only
        the first present value counts.
        """
        step = self.interval_ms or 0
        for series in self.input_series:
            last = -1
            for k, value in enumerate(series.values):
                t = k * step
                if value is None or t <= last or (until_ms is not None and t > until_ms):
                    continue
                last = t
                yield series, t, value


@dataclass(frozen=True, slots=True)
class RuleTestFile:
    __test__ = False

    path: Path
    rule_files: tuple[str, ...]
    evaluation_interval_ms: int
    group_eval_order: tuple[str, ...]
    tests: tuple[TestGroup, ...]
    warnings: tuple[str, ...] = field(default=())

    def resolve_rule_files(self) -> list[Path]:
        """The rule files, globbed relative to the test file (a pattern matching nothing only
        warns in promtool, so it yields nothing here)."""
        found: list[Path] = []
        for pattern in self.rule_files:
            full = pattern if Path(pattern).is_absolute() else str(self.path.parent / pattern)
            found.extend(Path(p) for p in sorted(glob.glob(full)))  # noqa: PTH207 (full-path globs)
        return found


def _strict(node: Any, allowed: set[str], where: str) -> dict[str, Any]:
    if node is None:
        return {}
    if not isinstance(node, dict):
        raise TestFileError(f"{where}: expected a mapping")
    for key in node:
        if key not in allowed:
            raise TestFileError(f"{where}: field {key} not found")
    return node


def _strings(node: Any, where: str) -> dict[str, str]:
    if node is None:
        return {}
    if not isinstance(node, dict):
        raise TestFileError(f"{where}: expected a mapping of strings")
    return {str(k): (str(v).lower() if isinstance(v, bool) else str(v)) for k, v in node.items()}


def _exp_sample(node: Any, where: str) -> ExpSample:
    d = _strict(node, {"labels", "value"}, where)
    name, pairs = parse_metric(str(d.get("labels", "")))
    value = d.get("value", 0.0)
    if not isinstance(value, int | float):
        raise TestFileError(f"{where}: value must be a number")
    return ExpSample(name, pairs, float(value))


def _group(node: Any, where: str, warnings: list[str]) -> TestGroup:
    keys = {"interval", "input_series", "alert_rule_test", "promql_expr_test"}
    d = _strict(node, keys | {"external_labels", "external_url", "name"}, where)
    interval = parse_duration_ms(d["interval"]) if d.get("interval") is not None else None
    if interval is None:
        warnings.append(f"{where}: no interval: promtool 2.42 puts every input sample at t=0")
    series = []
    for i, s in enumerate(d.get("input_series") or []):
        sd = _strict(s, {"series", "values"}, f"{where}.input_series[{i}]")
        name, pairs = parse_metric(str(sd.get("series", "")))
        values = expand_values(str(sd.get("values", "")))
        series.append(InputSeries(name, make_labels(pairs), tuple(values)))
    exprs = []
    for i, e in enumerate(d.get("promql_expr_test") or []):
        w = f"{where}.promql_expr_test[{i}]"
        ed = _strict(e, {"expr", "eval_time", "exp_samples"}, w)
        samples = tuple(_exp_sample(s, w) for s in ed.get("exp_samples") or [])
        t = parse_duration_ms(ed.get("eval_time", "0"))
        exprs.append(PromqlExprTest(str(ed.get("expr", "")), t, samples))
    alerts = []
    for i, a in enumerate(d.get("alert_rule_test") or []):
        w = f"{where}.alert_rule_test[{i}]"
        ad = _strict(a, {"eval_time", "alertname", "exp_alerts"}, w)
        expected = tuple(
            ExpAlert(
                _strings(x.get("exp_labels"), w),
                _strings(x.get("exp_annotations"), w),
            )
            for x in (
                _strict(x, {"exp_labels", "exp_annotations"}, w) for x in ad.get("exp_alerts") or []
            )
        )
        t = parse_duration_ms(ad.get("eval_time", "0"))
        alerts.append(AlertRuleTest(t, str(ad.get("alertname", "")), expected))
    return TestGroup(
        name=str(d.get("name", "")),
        interval_ms=interval,
        input_series=tuple(series),
        alert_rule_tests=tuple(alerts),
        promql_expr_tests=tuple(exprs),
        external_labels=_strings(d.get("external_labels"), where),
        external_url=str(d.get("external_url", "")),
    )


def load_test_file(path: str | Path) -> RuleTestFile:
    """Read and check a promtool test file; raises :class:`TestFileError`."""
    path = Path(path)
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise TestFileError(f"{path}: {exc}") from None
    keys = {"rule_files", "evaluation_interval", "group_eval_order", "tests"}
    d = _strict(doc, keys, str(path))
    warnings: list[str] = []
    interval = d.get("evaluation_interval")
    try:
        groups = tuple(
            _group(g, f"{path}: tests[{i}]", warnings) for i, g in enumerate(d.get("tests") or [])
        )
    except SeriesDescError as exc:
        raise TestFileError(f"{path}: {exc}") from None
    return RuleTestFile(
        path=path,
        rule_files=tuple(str(p) for p in d.get("rule_files") or []),
        evaluation_interval_ms=(
            parse_duration_ms(interval) if interval is not None else DEFAULT_EVALUATION_INTERVAL_MS
        ),
        group_eval_order=tuple(str(g) for g in d.get("group_eval_order") or []),
        tests=groups,
        warnings=tuple(warnings),
    )


def load_input_series(store: SeriesStore, group: TestGroup, until_ms: int | None = None) -> None:
    """Write the group's input samples with time ≤ ``until_ms`` into ``store`` (t=0 is Unix 0)."""
    for series, t_ms, value in group.samples(until_ms):
        store.set(series.name, series.labels, value, t_ms / 1000)
