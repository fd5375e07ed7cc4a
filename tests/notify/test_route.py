from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from inferwatch.config.alertmanager import Route
from inferwatch.config.models import DEFAULT_ROUTE
from inferwatch.labels import make_labels
from inferwatch.notify.route import RouteError, build_tree

TREE: dict[str, Any] = {
    "receiver": "default",
    "group_by": ["alertname"],
    "routes": [
        {
            "matchers": ['severity="critical"'],
            "receiver": "phone",
            "continue": True,
            "group_wait": "0s",
            "routes": [{"matchers": ['engine=~"main|aux"'], "receiver": "engine-phone"}],
        },
        {"matchers": ['severity=~"crit.*|warning"'], "receiver": "chat", "group_by": ["..."]},
        {"matchers": ['team!="infra"', 'gpu=""'], "receiver": "noinfra", "repeat_interval": "1h"},
    ],
}
RECEIVERS = ["default", "phone", "engine-phone", "chat", "noinfra"]

CASES: list[tuple[dict[str, str], list[str]]] = [
    ({"severity": "critical", "engine": "main"}, ["engine-phone", "chat"]),
    ({"severity": "critical", "gpu": "1"}, ["phone", "chat"]),
    ({"severity": "warning", "gpu": "1"}, ["chat"]),
    ({"severity": "info", "gpu": "1", "team": "infra"}, ["default"]),
    ({"team": "x"}, ["noinfra"]),
    ({"severity": "critical"}, ["phone", "chat"]),
    ({"severity": "criticalish", "gpu": "0"}, ["chat"]),
    ({"gpu": "0"}, ["default"]),
]


def _tree() -> Route:
    return Route.model_validate(TREE)


@pytest.mark.parametrize(("labels", "receivers"), CASES)
def test_match_receivers(labels: dict[str, str], receivers: list[str]) -> None:
    nodes = build_tree(_tree()).match(make_labels(labels))
    assert [n.receiver for n in nodes] == receivers


def test_inheritance_and_defaults() -> None:
    root = build_tree(_tree())
    assert (root.opts.group_wait, root.opts.group_interval, root.opts.repeat_interval) == (
        30.0,
        300.0,
        4 * 3600.0,
    )
    phone, chat, noinfra = root.routes
    assert phone.opts.group_wait == 0.0 and phone.opts.group_by == ("alertname",)
    engine = phone.routes[0]
    assert engine.opts.group_wait == 0.0  # inherited from its parent, not the root
    assert engine.opts.group_interval == 300.0
    assert chat.opts.group_by is None  # '...'
    assert noinfra.opts.repeat_interval == 3600.0 and noinfra.opts.receiver == "noinfra"
    labels = make_labels({"alertname": "A", "gpu": "1", "x": "y"})
    assert phone.opts.group_labels(labels) == (("alertname", "A"),)
    assert chat.opts.group_labels(labels) == labels


def test_keys_are_unique_and_stable() -> None:
    keys = [n.key for n in build_tree(_tree()).walk()]
    assert keys[0] == "{}"
    assert keys[1] == '{}/0{severity="critical"}'
    assert len(set(keys)) == len(keys)
    assert keys == [n.key for n in build_tree(_tree()).walk()]


def test_default_route_sends_critical_at_once() -> None:
    root = build_tree(DEFAULT_ROUTE)
    (node,) = root.match(make_labels({"severity": "critical", "alertname": "X"}))
    assert node.opts.group_wait == 0.0 and node.opts.group_interval == 10.0
    assert node.receiver == "console"


@pytest.mark.parametrize(
    ("cfg", "fragment"),
    [
        ({}, "must name a receiver"),
        ({"receiver": "r", "matchers": ["a=b"]}, "cannot have matchers"),
        ({"receiver": "r", "continue": True}, "cannot have continue"),
        ({"receiver": "r", "mute_time_intervals": ["night"]}, "root route cannot"),
        ({"receiver": "r", "routes": [{"matchers": ["a=~("]}]}, "invalid regex"),
        ({"receiver": "r", "routes": [{"mute_time_intervals": ["nope"]}]}, "unknown time"),
        ({"receiver": "r", "group_by": ["...", "a"]}, "only entry"),
        ({"receiver": "r", "group_by": ["a", "a"]}, "duplicate"),
        ({"receiver": "r", "group_interval": 0}, "greater than zero"),
    ],
)
def test_invalid_trees(cfg: dict[str, Any], fragment: str) -> None:
    with pytest.raises(RouteError, match=fragment):
        build_tree(Route.model_validate(cfg), time_intervals=["night"])


def test_time_intervals_are_not_inherited() -> None:
    cfg = Route.model_validate(
        {
            "receiver": "r",
            "routes": [{"mute_time_intervals": ["night"], "routes": [{"matchers": ["a=b"]}]}],
        }
    )
    child = build_tree(cfg, time_intervals=["night"]).routes[0]
    assert child.opts.mute_time_intervals == ("night",)
    assert child.routes[0].opts.mute_time_intervals == ()


AMTOOL = shutil.which("amtool")


@pytest.mark.skipif(AMTOOL is None, reason="amtool is not installed")
def test_same_receivers_as_alertmanager(tmp_path: Path) -> None:
    config = {"route": TREE, "receivers": [{"name": r} for r in RECEIVERS]}
    path = tmp_path / "am.yml"
    path.write_text(yaml.safe_dump(config))
    tree = build_tree(_tree())
    assert AMTOOL is not None
    for labels, _ in CASES:
        args = [f"{k}={v}" for k, v in labels.items()]
        done = subprocess.run(
            [AMTOOL, "config", "routes", "test", f"--config.file={path}", *args],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        )
        theirs = done.stdout.strip().split(",")
        ours = [n.receiver for n in tree.match(make_labels(labels))]
        assert ours == theirs, labels
