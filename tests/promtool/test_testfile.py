"""promtool test files: the model, strict keys, durations and the series notation."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from inferwatch.clock import FakeClock
from inferwatch.promtool.expr_tests import load_limit_ms, run_expr_tests
from inferwatch.promtool.testfile import (
    TestFileError,
    expand_values,
    format_duration_ms,
    load_input_series,
    load_test_file,
    parse_duration_ms,
    parse_metric,
)
from inferwatch.store.series import is_stale
from inferwatch.store.tsdb import SeriesStore


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("1 2 3", [1, 2, 3]),
        ("1x3", [1, 1, 1, 1]),
        ("5x0", [5]),
        ("-2+4x3", [-2, 2, 6, 10]),
        ("10-2x2", [10, 8, 6]),
        ("_x3 1", [None, None, None, 1]),
        ("_x0 1", [1]),
        ("1 2 _ 4 _x2 8", [1, 2, None, 4, None, None, 8]),
        ("1e3 -1.5e-3 +2 .5 5.", [1000, -0.0015, 2, 0.5, 5]),
        ("Inf -Inf", [math.inf, -math.inf]),
        ("", []),
    ],
)
def test_expand_values(text: str, want: list[float | None]) -> None:
    assert expand_values(text) == want


def test_expand_special_values() -> None:
    nan, stale = expand_values("NaN stale")
    assert nan is not None and math.isnan(nan) and not is_stale(nan)
    assert stale is not None and is_stale(stale)
    assert expand_values("0+0.1x10")[-1] == 0.9999999999999999


@pytest.mark.parametrize("bad", ["0x1F", "stalex2", "1x", "abc", "1+x2", "_x"])
def test_expand_refuses(bad: str) -> None:
    with pytest.raises(ValueError, match="bad series value"):
        expand_values(bad)


@pytest.mark.parametrize(
    ("text", "ms"),
    [("0", 0), ("90s", 90_000), ("1m30s", 90_000), ("2h", 7_200_000), ("1s500ms", 1500)],
)
def test_durations(text: str, ms: int) -> None:
    assert parse_duration_ms(text) == ms
    assert parse_duration_ms(format_duration_ms(ms)) == ms


@pytest.mark.parametrize("bad", ["90", "1.5m", "", "5 m", "-1m"])
def test_bad_durations(bad: str) -> None:
    with pytest.raises(TestFileError, match="not a valid duration"):
        parse_duration_ms(bad)


def test_format_duration_like_prometheus() -> None:
    assert format_duration_ms(0) == "0s"
    assert format_duration_ms(300_000) == "5m"
    assert format_duration_ms(90_000) == "1m30s"
    assert format_duration_ms(86_400_000 * 90) == "90d"
    assert format_duration_ms(86_400_000 * 14) == "2w"


def test_parse_metric() -> None:
    assert parse_metric('up{job="api", instance="h:1"}') == (
        "up",
        (("instance", "h:1"), ("job", "api")),
    )
    assert parse_metric("{}") == ("", ())
    assert parse_metric('{__name__="x", a="\\"q\\""}') == ("x", (("a", '"q"'),))
    assert parse_metric("x") == ("x", ())


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "t.yaml"
    path.write_text(text)
    return path


FULL = """
rule_files: [rules/*.yaml]
evaluation_interval: 30s
group_eval_order: [a, b]
tests:
- name: g
  interval: 15s
  external_labels: {host: h1}
  external_url: http://x
  input_series:
  - series: 'up{job="api"}'
    values: '1 0 stale'
  alert_rule_test:
  - eval_time: 1m
    alertname: Down
    exp_alerts:
    - exp_labels: {job: api, severity: critical, page: true}
      exp_annotations: {summary: down}
  - eval_time: 2m
    alertname: Down
    exp_alerts: []
  promql_expr_test:
  - expr: up == 0
    eval_time: 15s
    exp_samples: [{labels: 'up{job="api"}', value: 0}]
"""


def test_whole_format(tmp_path: Path) -> None:
    (tmp_path / "rules").mkdir()
    (tmp_path / "rules" / "r.yaml").write_text("groups: []\n")
    f = load_test_file(_write(tmp_path, FULL))
    assert f.evaluation_interval_ms == 30_000
    assert f.group_eval_order == ("a", "b")
    assert f.resolve_rule_files() == [tmp_path / "rules" / "r.yaml"]
    [g] = f.tests
    assert g.interval_ms == 15_000
    assert g.external_labels == {"host": "h1"}
    assert g.alert_rule_tests[0].exp_alerts[0].labels["page"] == "true"
    assert g.alert_rule_tests[1].exp_alerts == ()
    assert g.max_eval_time_ms() == 120_000
    assert not f.warnings
    assert run_expr_tests(f) == []


def test_unknown_keys_are_refused(tmp_path: Path) -> None:
    with pytest.raises(TestFileError, match="field bogus not found"):
        load_test_file(_write(tmp_path, "tests:\n- interval: 1m\n  bogus: 1\n"))
    with pytest.raises(TestFileError, match="field intervall not found"):
        load_test_file(_write(tmp_path, "intervall: 1m\n"))


def test_missing_interval_warns_and_puts_everything_at_zero(tmp_path: Path) -> None:
    f = load_test_file(
        _write(tmp_path, "tests:\n- input_series:\n  - series: a\n    values: '_ 1 2 3'\n")
    )
    assert f.warnings and "interval" in f.warnings[0]
    store = SeriesStore(FakeClock(0.0))
    load_input_series(store, f.tests[0])
    series = store.get("a", ())
    assert series is not None
    assert list(series.samples()[0]) == [0.0] and list(series.samples()[1]) == [1.0]


def test_load_limit_follows_the_evaluation_loop(tmp_path: Path) -> None:
    text = FULL.replace("eval_time: 2m\n", "eval_time: 2m50s\n")
    f = load_test_file(_write(tmp_path, text))
    assert load_limit_ms(f.tests[0], f.evaluation_interval_ms) == 150_000


def test_bad_notation_is_a_test_file_error(tmp_path: Path) -> None:
    text = "tests:\n- interval: 1m\n  input_series:\n  - series: a\n    values: '0x1F'\n"
    with pytest.raises(TestFileError, match="bad series value"):
        load_test_file(_write(tmp_path, text))


def test_failure_text_reads_like_promtool(tmp_path: Path) -> None:
    text = """
tests:
- interval: 1m
  input_series:
  - series: 'c{job="a"}'
    values: '0+10x10'
  promql_expr_test:
  - expr: rate(c[5m])
    eval_time: 5m
    exp_samples: [{labels: '{job="a"}', value: 0.16666666666666666}]
  - expr: nonexistent
    eval_time: 5m
    exp_samples: [{labels: '{}', value: 1}]
  - expr: sum(
    eval_time: 5m
"""
    failures = run_expr_tests(load_test_file(_write(tmp_path, text)))
    assert [f.message for f in failures[:2]] == [
        '    expr: "rate(c[5m])", time: 5m,\n'
        '        exp: {job="a"} 1.6666666666666666E-01\n'
        '        got: {job="a"} 1.6666666666666669E-01',
        '    expr: "nonexistent", time: 5m,\n        exp: {} 1E+00\n        got: nil',
    ]
    assert "parse error" in failures[2].message
