"""The `limits:` section: defaults, merging of label_values, located errors, README's example."""

from __future__ import annotations

from pathlib import Path

import pytest

from inferwatch.config.defaults import LABEL_VALUES
from inferwatch.configfile import parse_config
from inferwatch.errors import ConfigError

README = Path(__file__).resolve().parents[2] / "README.md"


def test_defaults() -> None:
    limits = parse_config("{}\n", "c.yaml").limits
    assert limits.label_values == {"dp_rank": 64, "position": 32}
    assert limits.series_total >= limits.series_per_metric > max(LABEL_VALUES.values())
    assert limits.alerts_per_rule > 0


def test_label_values_add_to_the_defaults() -> None:
    limits = parse_config("limits: {label_values: {dp_rank: 8, rank: 4}}\n", "c.yaml").limits
    assert limits.label_values == {"dp_rank": 8, "position": 32, "rank": 4}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("limits: {label_values: {1x: 8}}\n", "c.yaml:1:10: limits.label_values: '1x' is not"),
        ("limits: {label_values: {a: 0}}\n", "c.yaml:1:10: limits.label_values: a: the limit"),
        ("limits: {series_total: 0}\n", "c.yaml:1:10: limits.series_total: Input should be"),
        ("limits: {alerts_per_rule: -1}\n", "c.yaml:1:10: limits.alerts_per_rule: Input"),
        ("limits: {series: 5}\n", "c.yaml:1:10: limits.series: unknown key"),
    ],
)
def test_errors_are_located(text: str, expected: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config(text, "c.yaml")
    [problem] = info.value.problems
    assert str(problem).startswith(expected), str(problem)


def test_the_readme_example_is_the_defaults() -> None:
    section = README.read_text().split("### Limits on what the host's words can make", 1)[1]
    block = section.split("```yaml\n", 1)[1].split("```", 1)[0]
    assert parse_config(block, "README.md").limits == parse_config("{}\n", "c.yaml").limits
