"""``inferwatch export prometheus-rules``: the shipped rules for a real Prometheus."""

from __future__ import annotations

import subprocess
from pathlib import Path

import yaml

from conftest import require_tool
from inferwatch.promtool.export import _rename_in_promql, export_prometheus_rules
from inferwatch.rules.loader import load_rule_text
from inferwatch.rules.ruleset import AlertingRule, RecordingRule

RECORDED = "inferwatch_engine:steps_per_second:single_stream"
DECODE_BOUND = "inferwatch_engine:decode_tokens_per_second:decode_bound"


def test_header_and_renames() -> None:
    text = export_prometheus_rules()
    header = [line for line in text.splitlines() if line.startswith("#")]
    assert any("Pick ONE alerting path per host" in line for line in header)
    assert any(f"{RECORDED} -> prom:{RECORDED}" in line for line in header)
    groups, problems = load_rule_text(text, "exported.yaml")
    assert problems == []
    records = [r for g in groups for r in g.rules if isinstance(r, RecordingRule)]
    assert [r.name for r in records] == [f"prom:{RECORDED}", f"prom:{DECODE_BOUND}"]
    body = text.split("\ngroups:", 1)[1]
    assert RECORDED in body and f"prom:{RECORDED}" in body
    assert body.count(RECORDED) == body.count(f"prom:{RECORDED}")
    alerts = {r.name: r for g in groups for r in g.rules if isinstance(r, AlertingRule)}
    summary = dict(alerts["EngineStepRateRegression"].annotations)["summary"].source
    assert f"prom:{RECORDED}" in summary


def test_promtool_accepts_the_export(tmp_path: Path) -> None:
    promtool = require_tool("promtool")
    path = tmp_path / "exported.yaml"
    path.write_text(export_prometheus_rules())
    done = subprocess.run([promtool, "check", "rules", str(path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_groups_keep_their_intervals() -> None:
    doc = yaml.safe_load(export_prometheus_rules())
    by_name = {g["name"]: g for g in doc["groups"]}
    assert by_name["inferwatch-engine-baseline"]["interval"] == "30s"


def test_rename_leaves_strings_and_longer_names_alone() -> None:
    names = {"a:b": "prom:a:b"}
    assert _rename_in_promql('a:b + a:bc + x{l="a:b"} + a:b[5m]', names) == (
        'prom:a:b + a:bc + x{l="a:b"} + prom:a:b[5m]'
    )
