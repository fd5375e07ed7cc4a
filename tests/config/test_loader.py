"""Config loading: every problem located at PATH:LINE:COL with its field path."""

from __future__ import annotations

from pathlib import Path

import pytest

from inferwatch.config.models import DEFAULT_LISTEN, Config
from inferwatch.configfile import load_config, parse_config
from inferwatch.errors import ConfigError

FIXTURES = Path(__file__).parents[1] / "fixtures" / "config"


def problems(text: str) -> list[str]:
    with pytest.raises(ConfigError) as info:
        parse_config(text, "c.yaml")
    return [str(p) for p in info.value.problems]


def test_no_file_means_embedded_defaults() -> None:
    cfg = load_config(None)
    assert cfg.listen == DEFAULT_LISTEN == "127.0.0.1:9945"
    assert cfg.kernel.source == "auto"
    assert cfg.gpus.backend == "auto"
    assert cfg.route.receiver == "console"
    incident, critical = cfg.route.routes
    assert incident.matchers == ['alertname=~"EngineCrashed|GpuMmuFaultOnAllRanks|GpuHardwareXid"']
    assert (incident.group_by, incident.group_wait) == ([], 3.0)
    assert critical.matchers == ['severity="critical"']
    assert (critical.group_wait, critical.group_interval) == (0.0, 10.0)


def test_good_fixture_loads() -> None:
    cfg = load_config(FIXTURES / "conf.good.yml")
    assert [e.name for e in cfg.engines] == ["flashnext", "lab"]
    assert cfg.engines[0].log == ["/var/log/flashnext/pipeline.log"]
    assert cfg.engines[0].scrape_interval == 5.0
    assert cfg.kernel.alert_max_age == 600.0
    assert cfg.engines[1].scrape_interval == 90.0  # "1m30s"


def test_unknown_key_and_wrong_type_each_get_a_line() -> None:
    path = FIXTURES / "conf.bad.yml"
    with pytest.raises(ConfigError) as info:
        load_config(path)
    lines = [str(p) for p in info.value.problems]
    assert f"{path}:3:1: bogus: unknown key" in lines
    assert any(line.startswith(f"{path}:8:5: engines[1].kind: ") for line in lines), lines
    assert any(line.startswith(f"{path}:9:5: engines[1].decode_anchor: ") for line in lines)
    assert len(lines) == 3


def test_error_inside_nested_list_and_unknown_nested_key() -> None:
    text = "engines:\n  - name: a\n  - name: b\n    kindd: vllm\n"
    assert problems(text) == ["c.yaml:4:5: engines[1].kindd: unknown key; did you mean kind?"]


def test_missing_required_field_points_at_parent() -> None:
    text = "engines:\n  - kind: vllm\n"
    assert problems(text) == ["c.yaml:2:5: engines[0].name: required key is missing"]


def test_yaml_syntax_error_is_located() -> None:
    (line,) = problems("listen: [1, 2\nkernel: {}\n")
    assert line.startswith("c.yaml:")
    assert "YAML syntax" in line


def test_duplicate_keys_are_reported() -> None:
    assert problems("language: en\nlanguage: zh\n") == [
        "c.yaml:2:1: language: duplicate key 'language'"
    ]


def test_non_mapping_document() -> None:
    assert problems("- 1\n- 2\n") == [
        "c.yaml:1:1: <root>: the config file must be a mapping of keys"
    ]


@pytest.mark.parametrize(
    ("value", "seconds"),
    [("10s", 10.0), ("1m30s", 90.0), ("250ms", 0.25), ("2h", 7200.0), (15, 15.0), ("0", 0.0)],
)
def test_durations(value: object, seconds: float) -> None:
    cfg = parse_config(f"kernel:\n  alert_max_age: {value}\n", "c.yaml")
    assert cfg.kernel.alert_max_age == seconds


@pytest.mark.parametrize("value", ["10x", "ten", "-5", "1x", "true"])
def test_bad_durations(value: str) -> None:
    (line,) = problems(f"kernel:\n  alert_max_age: {value}\n")
    assert line.startswith("c.yaml:2:3: kernel.alert_max_age: ")


def test_cross_reference_errors() -> None:
    (line,) = problems("route:\n  receiver: nobody\n")
    assert (
        line == "c.yaml:2:3: route.receiver: receiver 'nobody' is not defined (receivers: console)"
    )
    (line,) = problems("engines:\n  - name: a\n  - name: a\n")
    assert line == "c.yaml:3:5: engines[1].name: engine name 'a' is used twice"


def test_undefined_receivers_come_with_every_other_problem_at_their_route() -> None:
    """One pass: field errors do not hide the references, each is at its own line."""
    text = (
        "engines:\n  - name: a\n    kind: vlm\n"
        "route:\n  receiver: phone\n  routes:\n    - receiver: pager\n"
        "receivers: [{name: phone}]\n"
        "fallback_receiver: nobody\n"
    )
    assert problems(text) == [
        "c.yaml:3:5: engines[0].kind: Input should be 'vllm', 'sglang' or 'llamacpp'",
        "c.yaml:7:7: route.routes[0].receiver: receiver 'pager' is not defined (receivers: phone)",
        "c.yaml:9:1: fallback_receiver: receiver 'nobody' is not defined (receivers: phone)",
    ]


@pytest.mark.parametrize(
    ("text", "hint"),
    [
        ("engines:\n  - name: a\n    metrics_ulr: http://x\n", "did you mean metrics_url?"),
        ("kernel: {sourse: kmsg}\n", "did you mean source?"),
        ("recievers: []\n", "did you mean receivers?"),
        ("route: {routes: [{matcher: [a=b]}]}\n", "did you mean matchers?"),
        (
            "receivers:\n  - name: console\n    webhook_configs:\n"
            "      - {url: 'http://127.0.0.1:1/', send_resolvd: true}\n",
            "did you mean send_resolved?",
        ),
    ],
)
def test_an_unknown_key_suggests_the_nearest_known_one(text: str, hint: str) -> None:
    (line,) = problems(text)
    assert line.endswith(f"unknown key; {hint}")


def test_no_suggestion_when_nothing_is_close() -> None:
    assert problems("bogus: 1\n") == ["c.yaml:1:1: bogus: unknown key"]


def test_fake_gpu_backend_needs_a_profile() -> None:
    (line,) = problems("gpus:\n  backend: fake\n")
    assert line.startswith("c.yaml:1:1: gpus: ")


def test_unknown_integration_in_receiver_is_located_at_its_key() -> None:
    # config accepts any <kind>_configs list; notify's channel registry rejects the kind
    (line,) = problems(
        "route: {receiver: x}\nreceivers:\n  - name: x\n    smoke_signal_configs: [{}]\n"
    )
    assert line.startswith(
        "c.yaml:4:5: receivers[0].smoke_signal_configs: unknown integration 'smoke_signal_configs'"
    )
    assert "webhook_configs" in line and "console_configs" in line  # the known ones are listed


def test_unknown_integration_does_not_hide_the_problems_of_known_ones() -> None:
    text = (
        "route: {receiver: x}\n"
        "receivers:\n"
        "  - name: x\n"
        "    webhook_configs: [{url: 'http://127.0.0.1:1/hook'}]\n"
        "    smoke_signal_configs:\n"
        "      - {}\n"
        "    wecom_configs:\n"
        "      - msgtype: text\n"
    )
    lines = problems(text)
    assert len(lines) == 2, lines
    assert lines[0].startswith("c.yaml:5:5: receivers[0].smoke_signal_configs: unknown integration")
    assert lines[1].startswith("c.yaml:8:9: receivers[0].wecom_configs[0]: ") and "key" in lines[1]


def test_receiver_field_that_is_no_integration_list() -> None:
    (line,) = problems("receivers:\n  - name: x\n    smoke_signal: [{}]\n")
    assert line.startswith("c.yaml:2:5: receivers[0]: ") and "'smoke_signal'" in line
    (line,) = problems("receivers:\n  - name: x\n    smoke_signal_configs: 3\n")
    assert line.startswith("c.yaml:2:5: receivers[0]: ")
    assert "smoke_signal_configs must be a list of mappings" in line


def test_unreadable_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path / "missing.yaml")
    assert "cannot read" in str(info.value)


def test_empty_file_is_defaults(tmp_path: Path) -> None:
    p = tmp_path / "empty.yaml"
    p.write_text("")
    assert load_config(p) == Config()


def test_bad_route_matcher_is_located_not_a_crash_later() -> None:
    (line,) = problems(
        "route:\n  receiver: console\n  routes:\n    - matchers: ['severity=~\"(\"']\n"
    )
    assert line.startswith("c.yaml:1:1: route: ")


def test_unknown_time_interval_reference() -> None:
    (line,) = problems(
        "route:\n  receiver: console\n  routes:\n    - mute_time_intervals: [night]\n"
    )
    assert line.startswith("c.yaml:1:1: route: ") and "night" in line


def test_check_builds_every_receiver_integration_and_locates_its_problem() -> None:
    text = (
        "route: {receiver: phone}\n"
        "receivers:\n"
        "  - name: phone\n"
        "    wecom_configs:\n"
        "      - key: abcdefgh\n"
        "        message: '{{ range .Alerts }}'\n"
        "      - msgtype: text\n"
    )
    with pytest.raises(ConfigError) as err:
        parse_config(text, "c.yaml")
    lines = str(err.value).splitlines()
    assert any(
        line.startswith("c.yaml:6:9: receivers[0].wecom_configs[0].message:") and "template" in line
        for line in lines
    )
    assert any(
        line.startswith("c.yaml:7:9: receivers[0].wecom_configs[1]:") and "key" in line
        for line in lines
    )


@pytest.mark.parametrize("word", ["off", "false", "False", "no", "'off'"])
def test_false_means_off_for_every_off_choice(word: str) -> None:
    """kernel.source and gpus.backend are the config's only choices with an `off`."""
    cfg = parse_config(f"gpus: {{backend: {word}}}\nkernel: {{source: {word}}}\n", "c.yaml")
    assert (cfg.gpus.backend, cfg.kernel.source) == ("off", "off")


def test_every_broken_template_is_reported_at_its_key() -> None:
    text = (
        "receivers:\n  - name: console\n    console_configs:\n"
        "      - title: '{{ .Foo '\n        message: '{{ end }}'\n"
        "  - name: other\n    console_configs:\n      - message: '{{ if }}'\n"
    )
    found = problems(text)
    assert [line.split(": ", 2)[:2] for line in found] == [
        ["c.yaml:4:9", "receivers[0].console_configs[0].title"],
        ["c.yaml:5:9", "receivers[0].console_configs[0].message"],
        ["c.yaml:8:9", "receivers[1].console_configs[0].message"],
    ]
    assert all("template does not parse" in line for line in found)


def test_a_bare_off_is_the_word_not_false() -> None:
    """YAML 1.1 reads `off` as false; the README writes `gpus: {backend: off}`."""
    cfg = parse_config("gpus: {backend: off}\nkernel: {source: off}\n", "c.yaml")
    assert (cfg.gpus.backend, cfg.kernel.source) == ("off", "off")
    with pytest.raises(ConfigError):
        parse_config("gpus: {backend: true}\n", "c.yaml")
