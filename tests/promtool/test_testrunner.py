"""``inferwatch test-rules``: promtool's loop, output and exit status."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from inferwatch.promql.types import DEFAULT_OPTIONS, EvalOptions
from inferwatch.promtool.alert_tests import go_duration
from inferwatch.promtool.runner import main, run_file

RULES = """
groups:
  - name: g
    rules:
      - alert: Up
        expr: up == 0
        for: 1m
        labels: {severity: page}
"""


def write(tmp: Path, test: str, rules: str = RULES) -> Path:
    (tmp / "r.yaml").write_text(rules)
    path = tmp / "t.yaml"
    path.write_text(test)
    return path


def run(path: Path, options: EvalOptions = DEFAULT_OPTIONS) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    return main([str(path)], out, err, options), out.getvalue(), err.getvalue()


def test_success_output(tmp_path: Path, eval_options: EvalOptions) -> None:
    path = write(
        tmp_path,
        """
rule_files: [r.yaml]
tests:
  - interval: 1m
    input_series: [{series: 'up{job="a"}', values: '0x3'}]
    alert_rule_test:
      - {eval_time: 0m, alertname: Up, exp_alerts: []}
      - {eval_time: 1m, alertname: Up, exp_alerts: [{exp_labels: {job: a, severity: page}}]}
""",
    )
    assert run(path, eval_options) == (0, f"Unit Testing:  {path}\n  SUCCESS\n\n", "")


def test_failure_output(tmp_path: Path, eval_options: EvalOptions) -> None:
    path = write(
        tmp_path,
        """
rule_files: [r.yaml]
tests:
  - interval: 1m
    name: named
    input_series: [{series: 'up{job="a"}', values: '0x3'}]
    alert_rule_test:
      - {eval_time: 2m, alertname: Up, exp_alerts: []}
""",
    )
    code, out, err = run(path, eval_options)
    assert code == 1
    assert out == f"Unit Testing:  {path}\n\n\n"
    assert err == (
        "  FAILED:\n"
        "    name: named,\n"
        "    alertname: Up, time: 2m, \n"
        "        exp:[], \n"
        "        got:[\n"
        "            0:\n"
        '              Labels:{alertname="Up", job="a", severity="page"}\n'
        "              Annotations:{}\n"
        "            ]\n"
    )


def test_rule_errors_stop_the_group(tmp_path: Path, eval_options: EvalOptions) -> None:
    rules = "groups:\n- name: g\n  rules:\n  - alert: C\n    expr: up\n    labels: {job: x}\n"
    path = write(
        tmp_path,
        """
rule_files: [r.yaml]
tests:
  - interval: 1m
    input_series: [{series: 'up{job="a"}', values: '1'}, {series: 'up{job="b"}', values: '1'}]
    alert_rule_test:
      - {eval_time: 0m, alertname: C, exp_alerts: []}
""",
        rules,
    )
    assert run_file(path, eval_options).errors == (
        "    rule: C, time: 0s, err: vector contains metrics with the same labelset after applying alert labels",
    )


def test_problems_and_warnings(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "rule_files: [r.yaml, nothere-*.yaml]\ntests:\n  - input_series: []\n",
        "groups:\n- name: g\n  rules:\n  - record: bad-name\n    expr: up\n",
    )
    result = run_file(path)
    assert [e.split(": ", 1)[1] for e in result.errors] == [
        "groups[0].rules[0].record: invalid recording rule name: bad-name"
    ]
    assert any("no interval" in w for w in result.warnings)
    assert "no file match pattern nothere-*.yaml" in result.warnings


def test_bad_test_file(tmp_path: Path) -> None:
    path = write(tmp_path, "rule_files: [r.yaml]\nbogus: 1\n")
    code, _, err = run(path)
    assert code == 1 and "field bogus not found" in err


def test_group_eval_order_and_expressions(tmp_path: Path, eval_options: EvalOptions) -> None:
    rules = "groups:\n- name: b\n  rules:\n  - alert: B\n    expr: r > 0\n- name: a\n  rules:\n  - record: r\n    expr: vector(1)\n"
    test = """
rule_files: [r.yaml]
group_eval_order: [a]
tests:
  - interval: 1m
    alert_rule_test:
      - {eval_time: 0m, alertname: B, exp_alerts: [{exp_labels: {}}]}
    promql_expr_test:
      - {expr: r, eval_time: 0m, exp_samples: [{labels: 'r', value: 1}]}
"""
    assert run_file(write(tmp_path, test, rules), eval_options).errors == ()


@pytest.mark.parametrize(
    ("ms", "want"),
    [
        (0, "0s"),
        (500, "500ms"),
        (1500, "1.5s"),
        (60_000, "1m0s"),
        (90_000, "1m30s"),
        (3_600_000, "1h0m0s"),
        (3_661_500, "1h1m1.5s"),
    ],
)
def test_go_duration(ms: int, want: str) -> None:
    assert go_duration(ms) == want
