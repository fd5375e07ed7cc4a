"""The committed dashboards read back: their panels' expressions, variables and metric names."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from conftest import REPO

DASHBOARDS = REPO / "grafana" / "dashboards"
FAMILY = re.compile(r"(?<![\w:])((?:inferwatch|process)_[\w:]+)")


def load(name: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((DASHBOARDS / name).read_text(encoding="utf-8"))
    return doc


def panels(doc: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for panel in doc["panels"]:
        yield panel
        yield from panel.get("panels", [])


def expressions(doc: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """(where, PromQL) for every panel target and annotation."""
    for panel in panels(doc):
        for target in panel.get("targets", []):
            yield panel["title"], target["expr"]
    for annotation in doc.get("annotations", {}).get("list", []):
        if "expr" in annotation:
            yield f"annotation {annotation['name']}", annotation["expr"]


def variables(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {v["name"]: v for v in doc["templating"]["list"]}


def families(expr: str) -> set[str]:
    """The inferwatch_* and process_* metric names an expression reads (inferwatch's own
    recorded series included; Prometheus's prom: ones are not)."""
    return {name.removesuffix("_bucket") for name in FAMILY.findall(expr)}  # histograms


def dashboard_files() -> list[Path]:
    return sorted(DASHBOARDS.glob("*.json"))
