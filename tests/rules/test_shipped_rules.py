"""The shipped rules (rules/*.yaml): valid for promtool, and their tests pass under promtool
*and* ``inferwatch test-rules`` (tests/rules/shipped/*.test.yaml).

Every rule on a rare event must fire on the first occurrence of a new series (a counter born at
1), in inferwatch and in a real Prometheus alike: the tests hold such a series for each of them.
"""

from __future__ import annotations

import io
import re
import subprocess
from pathlib import Path

import pytest
import yaml

from conftest import REPO, require_tool
from inferwatch.promql.types import EvalOptions
from inferwatch.promtool.runner import main as run_rule_tests
from inferwatch.promtool.testfile import load_test_file
from inferwatch.rules.loader import load_rule_files
from inferwatch.rules.ruleset import AlertingRule

RULES = sorted((REPO / "rules").glob("*.yaml"))
TESTS = sorted((Path(__file__).parent / "shipped").glob("*.test.yaml"))
FIRST_OCCURRENCE = {
    "GpuMmuFaultOnAllRanks", "GpuHardwareXid", "GpuFallenOffBus", "GpuRepeatedMmuFaults",
    "GpuNvlinkFault", "EngineCrashed", "InferwatchNotificationsFailing", "GpuProcessOomKilled",
    "HostOomKill", "GpuPcieUncorrectableError", "GpuDriverFault", "InferwatchSeriesDropped",
    "DownloadFinished", "DownloadFailed",
}  # fmt: skip


def _ids(paths: list[Path]) -> list[str]:
    return [p.name for p in paths]


def test_shipped_files_exist() -> None:
    assert {p.name for p in RULES} >= {"gpu.yaml", "engine.yaml", "inferwatch.yaml"}
    assert {p.name.removesuffix(".test.yaml") for p in TESTS} == {p.stem for p in RULES}


@pytest.mark.parametrize("path", RULES, ids=_ids(RULES))
def test_promtool_check_rules(path: Path) -> None:
    promtool = require_tool("promtool")
    done = subprocess.run([promtool, "check", "rules", str(path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_inferwatch_loads_them() -> None:
    rule_set, problems = load_rule_files(RULES)
    assert problems == []
    assert rule_set.rule_count() >= 14
    for _, rule in rule_set.alerting_rules():
        labels = dict(rule.raw_labels)
        severity = labels.get("severity", "")
        # a templated severity may only ever expand to one of the three
        values = set(re.findall(r"}}(\w+){{", severity)) if "{{" in severity else {severity}
        assert values and values <= {"critical", "warning", "info"}, rule.name
        notes = dict(rule.annotations)
        assert {"summary", "diagnosis", "action"} <= set(notes), rule.name


@pytest.mark.parametrize("path", TESTS, ids=_ids(TESTS))
def test_promtool_passes(path: Path) -> None:
    promtool = require_tool("promtool")
    done = subprocess.run([promtool, "test", "rules", str(path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("path", TESTS, ids=_ids(TESTS))
def test_inferwatch_passes(path: Path, eval_options: EvalOptions) -> None:
    out, err = io.StringIO(), io.StringIO()
    assert run_rule_tests([str(path)], out, err, eval_options) == 0, err.getvalue()
    assert "SUCCESS" in out.getvalue()


def test_every_alert_is_tested_firing() -> None:
    """Each shipped alert has at least one test expecting it to fire."""
    rule_set, _ = load_rule_files(RULES)
    names = {rule.name for _, rule in rule_set.alerting_rules()}
    fired: set[str] = set()
    for path in TESTS:
        for group in load_test_file(path).tests:
            fired |= {t.alertname for t in group.alert_rule_tests if t.exp_alerts}
    assert names - fired == set()


def test_rare_events_are_tested_from_a_series_born_at_one() -> None:
    """A series whose first sample is 1, after missing slots, feeds each first-occurrence rule."""
    rule_set, _ = load_rule_files(RULES)
    by_name = {rule.name: rule for _, rule in rule_set.alerting_rules()}
    assert set(by_name) >= FIRST_OCCURRENCE
    for name in FIRST_OCCURRENCE:
        rule = by_name[name]
        assert isinstance(rule, AlertingRule)
        assert "unless" in rule.expr and "offset" in rule.expr, name
    born: list[str] = []
    for path in TESTS:
        for series in yaml.safe_load(path.read_text())["tests"]:
            for s in series.get("input_series", []):
                values = str(s["values"]).split()
                if values[0].startswith("_") and values[1].startswith("1"):
                    born.append(s["series"].split("{")[0])
    for metric in ("inferwatch_gpu_fault_incidents_total", "inferwatch_xid_errors_total",
                   "inferwatch_gpu_repeated_mmu_faults_total", "inferwatch_gpu_nvlink_faults_total",
                   "inferwatch_engine_crashes_total", "inferwatch_notifications_total",
                   "inferwatch_kernel_oom_kills_total",
                   "inferwatch_gpu_pcie_uncorrectable_errors_total",
                   "inferwatch_series_dropped_total",
                   "inferwatch_download_verdicts_total"):  # fmt: skip
        assert metric in born, metric
