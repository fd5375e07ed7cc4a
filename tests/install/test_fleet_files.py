"""The fleet's files in deploy/: Prometheus's config and rules pass promtool, the exported rules
are current, Alertmanager's config passes amtool with the example config's inhibit rules, and
the compose file pins its images and mounts files that exist."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import yaml

from conftest import REPO, require_tool
from inferwatch.promtool.export import PREFIX, export_prometheus_rules

DEPLOY = REPO / "deploy"
PROM = DEPLOY / "prometheus"
AM = DEPLOY / "alertmanager"
REGENERATE = (
    ".venv/bin/inferwatch export prometheus-rules --output deploy/prometheus/inferwatch-rules.yml"
)


def load(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def run(*cmd: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=False)


def test_prometheus_yml_is_the_only_one_and_promtool_accepts_it() -> None:
    assert sorted(p.name for p in DEPLOY.rglob("prometheus*.yml")) == ["prometheus.yml"]
    promtool = require_tool("promtool")
    done = run(promtool, "check", "config", str(PROM / "prometheus.yml"))
    assert done.returncode == 0, done.stdout + done.stderr
    for name in load(PROM / "prometheus.yml")["rule_files"]:
        done = run(promtool, "check", "rules", str(PROM / name))
        assert done.returncode == 0, done.stdout + done.stderr


def test_rule_files_are_the_current_export_and_the_fleet_rules() -> None:
    assert load(PROM / "prometheus.yml")["rule_files"] == [
        "inferwatch-rules.yml",
        "fleet-rules.yml",
    ]
    committed = (PROM / "inferwatch-rules.yml").read_text(encoding="utf-8")
    assert committed == export_prometheus_rules(), f"stale: regenerate with `{REGENERATE}`"


def test_fleet_recording_rules_use_the_prom_prefix_and_clash_with_nothing() -> None:
    exported = load(PROM / "inferwatch-rules.yml")
    taken = {r.get("record") for g in exported["groups"] for r in g["rules"]}
    records = [r["record"] for g in load(PROM / "fleet-rules.yml")["groups"] for r in g["rules"]]
    assert records and all(r.startswith(PREFIX) for r in records)
    assert len(set(records)) == len(records) and not taken & set(records)


def test_every_target_names_its_host_and_alerts_keep_it() -> None:
    config = load(PROM / "prometheus.yml")
    targets = [e for job in config["scrape_configs"] for e in job.get("static_configs", [])]
    assert len(targets) >= 2
    for entry in targets:
        assert entry["labels"]["host"] and entry["labels"]["instance"] == entry["labels"]["host"]
    restore, drop = config["alerting"]["alert_relabel_configs"]
    # host from instance where an aggregation dropped it; one alerting path: drop by instance
    assert restore == {
        "source_labels": ["host", "instance"],
        "regex": ";(.+)",
        "target_label": "host",
    }
    assert drop["source_labels"] == ["instance"] and drop["action"] == "drop"


def test_alertmanager_yml_passes_amtool_and_routes_to_the_webhook() -> None:
    assert [p.name for p in AM.iterdir()] == ["alertmanager.yml"]
    amtool = require_tool("amtool")
    config = str(AM / "alertmanager.yml")
    done = run(amtool, "check-config", config)
    assert done.returncode == 0, done.stdout + done.stderr
    done = run(amtool, "config", "routes", "test", f"--config.file={config}",
               "alertname=GpuLost", "severity=critical", "host=gpu-01")  # fmt: skip
    assert done.returncode == 0 and done.stdout.strip() == "oncall", done.stderr
    (receiver,) = load(AM / "alertmanager.yml")["receivers"]
    assert receiver["webhook_configs"][0]["url"].startswith("http://")


def test_inhibit_rules_are_the_example_configs() -> None:
    ours = load(AM / "alertmanager.yml")["inhibit_rules"]
    assert ours and ours == load(DEPLOY / "config.example.yaml")["inhibit_rules"]


def test_compose_pins_its_images_and_mounts_what_exists() -> None:
    compose = load(DEPLOY / "compose.yaml")
    assert set(compose["services"]) == {"prometheus", "alertmanager", "grafana"}
    for name, service in compose["services"].items():
        assert re.fullmatch(r"[\w./-]+:v?\d+\.\d+\.\d+", service["image"]), name
        for volume in service.get("volumes", []):
            source = volume.split(":")[0]
            if source.startswith("."):
                assert (DEPLOY / source).resolve().exists(), f"{name}: {volume}"
