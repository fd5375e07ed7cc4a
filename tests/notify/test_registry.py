"""The channel registry is the one list of channels: config accepts a ``<kind>_configs`` list
exactly when notify has registered ``kind``, with no second list to keep in step."""

from __future__ import annotations

import importlib
import subprocess
import sys
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from inferwatch.configfile import parse_config
from inferwatch.errors import ConfigError
from inferwatch.notify.channels import KINDS, REGISTRY, Notifier, build
from inferwatch.notify.channels.console import ConsoleNotifier

CONFIG = "route: {receiver: x}\nreceivers:\n  - name: x\n    pigeon_configs: [{loft: roof}]\n"


def pigeon_factory(raw: Mapping[str, Any]) -> Notifier:
    if "loft" not in raw:
        raise ValueError("pigeon: loft is required")
    return ConsoleNotifier(raw)


@pytest.fixture
def pigeon() -> Iterator[None]:
    REGISTRY["pigeon"] = pigeon_factory
    try:
        yield
    finally:
        del REGISTRY["pigeon"]


def test_every_registered_kind_is_a_receiver_key() -> None:
    for kind in REGISTRY:
        raw = f"route: {{receiver: x}}\nreceivers:\n  - name: x\n    {kind}_configs: []\n"
        assert parse_config(raw, "c.yaml").receivers[0].integrations() == {f"{kind}_configs": []}


def test_an_unregistered_kind_is_rejected_at_its_key() -> None:
    with pytest.raises(ConfigError) as info:
        parse_config(CONFIG, "c.yaml")
    (problem,) = info.value.problems
    assert (problem.line, problem.col) == (4, 5)
    assert str(problem).startswith(
        "c.yaml:4:5: receivers[0].pigeon_configs: unknown integration 'pigeon_configs'; "
        "integrations: webhook_configs, "
    )


def test_registering_a_channel_is_all_config_needs(pigeon: None) -> None:
    config = parse_config(CONFIG, "c.yaml")
    entries = config.receivers[0].integrations()["pigeon_configs"]
    assert isinstance(build("pigeon", entries[0]), ConsoleNotifier)
    with pytest.raises(ConfigError) as info:  # and its entries are built as the daemon will
        parse_config(CONFIG.replace("loft: roof", "lofty: roof"), "c.yaml")
    assert [str(p) for p in info.value.problems] == [
        "c.yaml:4:22: receivers[0].pigeon_configs[0]: pigeon: loft is required"
    ]


def test_each_kind_names_its_module_and_factory() -> None:
    """A kind's module is imported when a receiver first uses it: the name in KINDS must lead
    to ``inferwatch.notify.channels.<kind>.<kind>_factory``."""
    assert set(KINDS) <= set(REGISTRY)
    for kind in KINDS:
        module = importlib.import_module(f"inferwatch.notify.channels.{kind}")
        assert callable(getattr(module, f"{kind}_factory")), kind


def test_a_channel_module_loads_only_when_a_receiver_uses_it() -> None:
    code = (
        "import sys\n"
        "from inferwatch.notify.channels import build\n"
        "assert 'inferwatch.notify.channels.telegram' not in sys.modules\n"
        "build('console', {})\n"
        "assert 'inferwatch.notify.channels.console' in sys.modules\n"
        "assert 'inferwatch.notify.channels.telegram' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
