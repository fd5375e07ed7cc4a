"""services[] and engines[].canary in the config: defaults, and bad entries located at
PATH:LINE:COL with their field path."""

from __future__ import annotations

from config.test_loader import problems
from inferwatch.configfile import parse_config


def test_service_defaults() -> None:
    cfg = parse_config(
        "services:\n  - name: flashnext\n    unit: flashnext.service\n    port: 8000\n", "c.yaml"
    )
    svc = cfg.services[0]
    assert (svc.interval, svc.startup_grace, svc.up_after, svc.down_after) == (10, 600, 2, 3)
    assert (svc.flap_changes, svc.flap_window) == (6, 600)


def test_bad_service_entries_are_located() -> None:
    text = (
        "services:\n"
        "  - name: ok\n"
        "    http_url: http://127.0.0.1:8000/health\n"
        "  - name: both\n"
        "    unit: a.service\n"
        "    container: b\n"
        "  - name: model\n"
        "    expect_model: m\n"
        "  - name: nothing\n"
        "    interval: 5s\n"
        "  - name: templ\n"
        "    http_url: http://127.0.0.1:{port}/health\n"
    )
    assert problems(text) == [
        "c.yaml:4:5: services[1]: set only one of unit, user_unit and container"
        " (got ['unit', 'container'])",
        "c.yaml:7:5: services[2]: expect_model needs http_url (the engine's /v1/models)",
        "c.yaml:9:5: services[3]: nothing to probe: set unit, user_unit, container, signature,"
        " port, port_file, http_url or ws_url",
        "c.yaml:11:5: services[4]: http_url uses {port}: set port or port_file",
    ]


def test_bad_service_fields_are_located() -> None:
    text = "services:\n  - name: a\n    port: 99999\n    http_url: localhost:80\n"
    lines = problems(text)
    assert lines[0].startswith("c.yaml:3:5: services[0].port: ")
    assert lines[1].startswith("c.yaml:4:5: services[0].http_url: expected an absolute URL")


def test_duplicate_service_names() -> None:
    text = "services:\n  - {name: a, port: 1}\n  - {name: a, port: 2}\n"
    assert problems(text) == ["c.yaml:3:6: services[1].name: service name 'a' is used twice"]


def test_canary_is_off_by_default_and_has_defaults() -> None:
    cfg = parse_config("engines:\n  - name: a\n  - name: b\n    canary: {}\n", "c.yaml")
    assert cfg.engines[0].canary is None
    canary = cfg.engines[1].canary
    assert canary is not None
    assert (canary.expect, canary.every, canary.max_tokens) == ("Paris", 1800.0, 16)
    assert problems("engines:\n  - name: a\n    canary: {every: never}\n")[0].startswith(
        "c.yaml:3:14: engines[0].canary.every: "
    )


def test_service_engine_must_be_configured() -> None:
    text = "engines:\n  - name: main\nservices:\n  - name: a\n    engine: mian\n    port: 1\n"
    assert problems(text) == [
        "c.yaml:5:5: services[0].engine: engine 'mian' is not defined (engines: main)"
    ]
    # without engines configured, the implicit engine's name is not checked
    assert parse_config("services:\n  - {name: a, engine: x, port: 1}\n", "c.yaml").services
