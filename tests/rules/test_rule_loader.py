"""Rule files: what promtool refuses is refused with PATH:LINE:COL, the rest becomes a RuleSet."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from inferwatch.clock import FakeClock
from inferwatch.labels import make_labels
from inferwatch.promql import engine as promql_engine
from inferwatch.promql import eval as promql_eval
from inferwatch.promql.ast import Expr
from inferwatch.promql.context import Ctx
from inferwatch.promql.engine import Value, Vector, load
from inferwatch.rules.evaluator import RuleManager
from inferwatch.rules.loader import (
    expand_rule_paths,
    load_rule_files,
    load_rule_text,
    reload_rule_files,
)
from inferwatch.rules.ruleset import AlertingRule, RecordingRule, RuleSet
from inferwatch.store.tsdb import SeriesStore

GOOD = """\
groups:
  - name: g
    interval: 15s
    limit: 3
    rules:
      - record: job:x:rate5m
        expr: sum by (job) (rate(x_total[5m]))
        labels: {team: a, drop: ""}
      - alert: High
        expr: job:x:rate5m > 1 and on(job) y offset 10m
        for: 2m
        keep_firing_for: 30s
        labels: {severity: page, where: "{{ $labels.job }}"}
        annotations:
          summary: "{{ $value | humanize }} {{ with query \\"max_over_time(z[1h])\\" }}{{ end }}"
  - name: h
    rules:
      - alert: Scalar
        expr: "1"
"""


def problems(text: str) -> list[str]:
    groups, found = load_rule_text(text, "r.yaml")
    assert not groups or not found
    return [str(p) for p in found]


def test_good_file() -> None:
    groups, found = load_rule_text(GOOD, "r.yaml")
    assert found == []
    g, h = groups
    assert (g.name, g.file, g.interval_s, g.limit, h.interval_s) == ("g", "r.yaml", 15.0, 3, None)
    rec, alert = g.rules
    assert isinstance(rec, RecordingRule) and isinstance(alert, AlertingRule)
    assert rec.labels == (("drop", ""), ("team", "a"))
    assert rec.key.labels == (("team", "a"),)
    assert (alert.for_s, alert.keep_firing_for_s) == (120.0, 30.0)
    assert [k for k, _ in alert.labels] == ["severity", "where"]
    assert alert.raw_labels == (("severity", "page"), ("where", "{{ $labels.job }}"))
    assert alert.line == 9
    assert [q.text for q in alert.query_literals] == ["max_over_time(z[1h])"]


def test_lookback_and_reading() -> None:
    groups, _ = load_rule_text(GOOD, "r.yaml")
    rule_set = RuleSet(tuple(groups))
    need = rule_set.lookback_by_metric()
    assert need["x_total"] == 300.0
    assert need["y"] == 600.0 + 300.0
    assert need["z"] == 3600.0
    assert rule_set.lookback_s() == 3600.0
    g, h = groups
    assert g.reads("x_total") and g.reads("job:x:rate5m") and g.reads("z")
    assert not h.reads("x_total")
    assert rule_set.groups_reading("x_total") == [g]


@pytest.mark.parametrize(
    ("text", "want"),
    [
        (
            "groups:\n- name: g\n  rules:\n  - alert: A\n    expr: up\n    bogus: 1\n",
            "r.yaml:6:5: groups[0].rules[0].bogus: field bogus not found in type rulefmt.RuleNode",
        ),
        (
            "groups:\n- name: g\n  bogus: 1\n  rules: []\n",
            "r.yaml:3:3: groups[0].bogus: field bogus not found in type rulefmt.RuleGroup",
        ),
        (
            "groups: []\nother: 1\n",
            "r.yaml:2:1: other: field other not found in type rulefmt.RuleGroups",
        ),
        (
            "groups:\n- name: g\n  rules:\n  - record: bad-name\n    expr: up\n",
            "r.yaml:4:5: groups[0].rules[0].record: invalid recording rule name: bad-name",
        ),
        (
            "groups:\n- name: g\n  rules:\n  - alert: A\n    expr: up\n    for: 5\n",
            'r.yaml:6:5: groups[0].rules[0].for: not a valid duration string: "5"',
        ),
        (
            "groups:\n- name: g\n  interval: 1x\n  rules: []\n",
            'r.yaml:3:3: groups[0].interval: not a valid duration string: "1x"',
        ),
        (
            "groups:\n- name: g\n  rules: []\n- name: g\n  rules: []\n",
            'r.yaml:4:3: groups[1].name: groupname: "g" is repeated in the same file',
        ),
        ("groups:\n- rules: []\n", "r.yaml:2:3: groups[0]: Groupname must not be empty"),
        (
            "groups:\n- name: g\n  rules:\n  - alert: A\n    record: b\n    expr: up\n",
            "r.yaml:4:5: groups[0].rules[0]: only one of 'record' and 'alert' must be set",
        ),
        (
            "groups:\n- name: g\n  rules:\n  - expr: up\n",
            "r.yaml:4:5: groups[0].rules[0]: one of 'record' or 'alert' must be set",
        ),
        (
            "groups:\n- name: g\n  rules:\n  - alert: A\n",
            "r.yaml:4:5: groups[0].rules[0].expr: field 'expr' must be set in rule",
        ),
        (
            "groups:\n- name: g\n  rules:\n  - alert: A\n    expr: up\n    labels: {1bad: x}\n",
            "r.yaml:6:14: groups[0].rules[0].labels.1bad: invalid label name: 1bad",
        ),
        (
            "groups:\n- name: g\n  rules:\n  - alert: A\n    expr: up\n    labels: {__name__: x}\n",
            "r.yaml:6:14: groups[0].rules[0].labels.__name__: invalid label name: __name__",
        ),
        (
            "groups:\n- name: g\n  rules:\n  - alert: A\n    expr: up\n    annotations: {bad-name: x}\n",
            "r.yaml:6:19: groups[0].rules[0].annotations.bad-name: invalid annotation name: bad-name",
        ),
        (
            "groups:\n- name: g\n  rules:\n  - alert: A\n    expr: up\n    annotations: {f: '{{ default 1 }}'}\n",
            'r.yaml:6:19: groups[0].rules[0].annotations.f: annotation "f": template: __alert_A:1: function "default" not defined',
        ),
        (
            "groups:\n- name: g\n  rules:\n  - alert: A\n    expr: up\n    labels: {f: '{{ $foo }}'}\n",
            'r.yaml:6:14: groups[0].rules[0].labels.f: label "f": template: __alert_A:1: undefined variable "$foo"',
        ),
        (
            "groups:\n- name: g\n  rules:\n  - alert: A\n    expr: sum(up\n",
            "r.yaml:5:5: groups[0].rules[0].expr: could not parse expression: parse error: unclosed left parenthesis",
        ),
        (
            "groups:\n- name: g\n  rules:\n  - record: a\n    expr: up\n    keep_firing_for: 1m\n",
            "r.yaml:6:5: groups[0].rules[0].keep_firing_for: invalid field 'keep_firing_for' in recording rule",
        ),
        (
            "groups:\n- name: g\n  rules:\n  - alert: A\n    expr: x\n    labels: {a: 1, a: 2}\n",
            "r.yaml:6:20: groups[0].rules[0].labels.a: duplicate key 'a'",
        ),
        (
            "groups: [\n",
            "r.yaml:2:1: <root>: YAML syntax: expected the node content, but found '<stream end>'",
        ),
    ],
)
def test_refused_like_promtool(text: str, want: str) -> None:
    assert want in problems(text)


@pytest.mark.parametrize(
    ("expr", "what"),
    [
        ("max_over_time(x[5m:1m])", "subqueries are not supported"),
        ("mad_over_time(x[5m])", "function 'mad_over_time' is not supported"),
    ],
)
def test_unsupported_promql_is_named(expr: str, what: str) -> None:
    text = f"groups:\n- name: g\n  rules:\n  - alert: A\n    expr: {expr}\n"
    (found,) = problems(text)
    assert what in found


def test_unsupported_template_function_is_named() -> None:
    text = "groups:\n- name: g\n  rules:\n  - alert: A\n    expr: x\n    annotations: {a: '{{ js 1 }}'}\n"
    assert 'function "js" is not supported by inferwatch' in problems(text)[0]


def test_yaml_scalars_as_label_values() -> None:
    text = "groups:\n- name: g\n  rules:\n  - alert: A\n    expr: x\n    labels: {send_resolved: false, n: 1}\n"
    groups, found = load_rule_text(text, "r.yaml")
    assert found == []
    rule = groups[0].rules[0]
    assert isinstance(rule, AlertingRule)
    assert rule.raw_labels == (("n", "1"), ("send_resolved", "false"))


def test_newer_group_fields_are_accepted() -> None:
    text = "groups:\n- name: g\n  labels: {team: x}\n  query_offset: 30s\n  rules:\n  - alert: A\n    expr: x\n    labels: {team: y}\n  - record: r\n    expr: x\n"
    groups, found = load_rule_text(text, "r.yaml")
    assert found == []
    alert, rec = groups[0].rules
    assert isinstance(alert, AlertingRule) and alert.raw_labels == (("team", "y"),)
    assert isinstance(rec, RecordingRule) and rec.labels == (("team", "x"),)
    assert groups[0].query_offset_s == 30.0


def test_one_bad_file_never_stops_the_others(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("groups:\n- name: g\n  rules:\n  - alert: A\n    expr: sum(\n")
    good = tmp_path / "good.yaml"
    good.write_text(GOOD)
    missing = tmp_path / "missing.yaml"
    rule_set, found = load_rule_files([bad, missing, good])
    assert [g.name for g in rule_set.groups] == ["g", "h"]
    assert {p.path for p in found} == {str(bad), str(missing)}


def test_expand_rule_paths(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text("groups: []\n")
    (tmp_path / "b.yaml").write_text("groups: []\n")
    paths, found = expand_rule_paths(
        [
            str(tmp_path / "*.yaml"),
            str(tmp_path / "a.yaml"),
            str(tmp_path / "none-*.yaml"),
            str(tmp_path / "gone.yaml"),
        ]
    )
    assert paths == [tmp_path / "a.yaml", tmp_path / "b.yaml"]
    assert [p.message for p in found] == ["no such rule file"]


def test_builtin_rules_expand() -> None:
    paths, found = expand_rule_paths(["builtin:rules/*.yaml"])
    assert found == [] and {p.name for p in paths} >= {"gpu.yaml", "engine.yaml", "inferwatch.yaml"}


def test_reload_keeps_a_broken_files_previous_groups(tmp_path: Path) -> None:
    one, two = tmp_path / "one.yaml", tmp_path / "two.yaml"
    one.write_text(GOOD)
    two.write_text("groups:\n- name: t\n  rules:\n  - record: t\n    expr: x\n")
    first, found = load_rule_files([one, two])
    assert found == [] and [g.name for g in first.groups] == ["g", "h", "t"]
    one.write_text(GOOD.replace("sum by (job)", "sum by (job"))
    two.write_text("groups:\n- name: t2\n  rules:\n  - record: t\n    expr: x\n")
    second, found = reload_rule_files([one, two], first)
    assert [p.path for p in found] == [str(one)]
    assert [g.name for g in second.groups] == ["g", "h", "t2"]
    assert second.groups[0] is first.groups[0]


SHARING = """
groups:
  - name: g
    rules:
      - alert: Over
        expr: x > 1
      - alert: Both
        expr: x > 2 and y > 0
"""


def test_a_group_keeps_only_what_two_of_its_reads_share(monkeypatch: pytest.MonkeyPatch) -> None:
    """A group's expressions are compiled together: in an evaluation, only ``x`` (which both
    rules read) is looked up among the results kept for the group; ``y`` and the comparisons
    are read once and never kept. The alerts are those of keeping every result."""
    looked_up: list[str] = []
    real = promql_eval._memoized

    def recording(key: str, inner: Callable[[Ctx], Vector]) -> Callable[[Ctx], Vector]:
        kept = real(key, inner)

        def run(ctx: Ctx) -> Vector:
            looked_up.append(key)
            return kept(ctx)

        return run

    monkeypatch.setattr(promql_eval, "_memoized", recording)
    groups, found = load_rule_text(SHARING, "r.yaml")
    assert found == []
    s = SeriesStore(FakeClock(0.0))
    s.set("x", make_labels({"job": "a"}), 5.0, 0.0)
    s.set("y", make_labels({"job": "a"}), 1.0, 0.0)
    out = RuleManager(RuleSet(tuple(groups)), s).evaluate_all(0.0)
    assert [t.alert.name for t in out] == ["Over", "Both"]
    assert looked_up == [repr(load("x").ast)] * 2


def test_only_rules_sharing_reads_with_others_are_compiled_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Loading compiles each expression once (the fast form; the plain one when first asked
    for); a rule is compiled once more only when another rule of its group reads a part of it
    (``x`` here), never for what it alone reads twice (``sum(z)``, already kept by its own
    compilation)."""
    compiled: list[str] = []
    real = promql_engine.compile_expr
    shared_x = {repr(load(t).ast) for t in ("x > 1", "x > 2 and y > 0")}
    own = {repr(load(e).ast) for e in ("sum(z)", "z")}

    def counting(ast: Expr, *args: Any) -> Callable[[Ctx], Value]:
        compiled.append(repr(ast))
        return real(ast, *args)

    monkeypatch.setattr(promql_engine, "compile_expr", counting)
    groups, found = load_rule_text(SHARING + ALONE, "r.yaml")
    assert found == []
    assert groups[1].rules[0].query.shared == own
    assert {key for key in compiled if compiled.count(key) > 1} == shared_x
    assert len(compiled) == 3 + 2  # three expressions, two of them again


ALONE = """
  - name: h
    rules:
      - alert: Own
        expr: sum(z) > 1 or sum(z) < 0
"""
