"""The dashboards as code: the committed JSON is what grafana/build.py generates, every query
reads the `datasource` variable (no hard-coded UID), the variables exist, the fleet
dashboard's prom: names are recorded by deploy/'s rule files, and provisioning points where
the compose file mounts the dashboards."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys

import pytest
import yaml

from conftest import IN_CI, REPO
from grafana.dashboard_json import dashboard_files, expressions, load, panels, variables

PROM_NAME = re.compile(r"(?<![\w:])(prom:[\w:]+)")


def test_committed_json_is_what_build_py_generates() -> None:
    if importlib.util.find_spec("grafana_foundation_sdk") is None:
        message = "grafana-foundation-sdk is not installed (pip install -e '.[dev]')"
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)
    done = subprocess.run(
        [sys.executable, str(REPO / "grafana" / "build.py"), "--check"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr


def test_both_dashboards_exist_with_their_variables() -> None:
    assert [p.name for p in dashboard_files()] == ["inferwatch-fleet.json", "inferwatch-host.json"]
    host = variables(load("inferwatch-host.json"))
    assert set(host) == {"datasource", "host", "gpu", "engine"}
    assert set(variables(load("inferwatch-fleet.json"))) == {"datasource", "host"}
    for name in ("inferwatch-host.json", "inferwatch-fleet.json"):
        var = variables(load(name))["datasource"]
        assert var["type"] == "datasource" and var["query"] == "prometheus"


@pytest.mark.parametrize("name", ["inferwatch-host.json", "inferwatch-fleet.json"])
def test_every_query_reads_the_datasource_variable(name: str) -> None:
    doc = load(name)
    refs = [p["datasource"] for p in panels(doc) if p["type"] != "row"]
    refs += [t["datasource"] for p in panels(doc) for t in p.get("targets", [])]
    refs += [v["datasource"] for v in variables(doc).values() if "datasource" in v]
    refs += [a["datasource"] for a in doc.get("annotations", {}).get("list", [])]
    assert refs and all(r == {"type": "prometheus", "uid": "${datasource}"} for r in refs)
    assert len({p["id"] for p in panels(doc)}) == len(list(panels(doc)))


def test_host_panels_filter_by_host_and_the_fleet_draws_recording_rules() -> None:
    for where, expr in expressions(load("inferwatch-host.json")):
        assert 'host="$host"' in expr, where
    recorded = {
        rule["record"]
        for path in (REPO / "deploy" / "prometheus").glob("*-rules.yml")
        for group in yaml.safe_load(path.read_text())["groups"]
        for rule in group["rules"]
        if "record" in rule
    }
    fleet = [(w, e) for w, e in expressions(load("inferwatch-fleet.json"))]
    drawn = {n for _, e in fleet for n in PROM_NAME.findall(e)}
    assert drawn and drawn <= recorded
    assert all(PROM_NAME.search(e) for _, e in fleet)
    assert {n for n in recorded if n.startswith("prom:inferwatch_host")} <= drawn


def test_provisioning_loads_the_dashboards_compose_mounts() -> None:
    provisioning = REPO / "grafana" / "provisioning"
    (source,) = yaml.safe_load((provisioning / "datasources" / "prometheus.yaml").read_text())[
        "datasources"
    ]
    assert source["type"] == "prometheus"
    (provider,) = yaml.safe_load((provisioning / "dashboards" / "inferwatch.yaml").read_text())[
        "providers"
    ]
    compose = yaml.safe_load((REPO / "deploy" / "compose.yaml").read_text())
    mounts = dict(v.split(":")[:2] for v in compose["services"]["grafana"]["volumes"])
    assert mounts["../grafana/dashboards"] == provider["options"]["path"]
    assert mounts["../grafana/provisioning"] == "/etc/grafana/provisioning"
