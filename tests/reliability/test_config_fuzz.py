"""The config loader on arbitrary YAML-ish text: a Config or a ConfigError, nothing else."""

from __future__ import annotations

from collections import Counter

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inferwatch.config.models import Config
from inferwatch.configfile import parse_config
from inferwatch.errors import ConfigError
from reliability.attack_table import AttackRow

TOKENS = ["[", "]", "{", "}", ":", ", ", "- ", "\n", "  ", "&a ", "*a", "&b ", "*b", "x",
          "language", "en", "receivers", "name: r", "webhook_configs", "url", "'", '"', "#",
          "!!str ", "!!int ", "!!float ", "!!timestamp ", "!!binary ", "? ", "<<: ", "external_labels", "route", "receiver"]  # fmt: skip


def nested(depth: int, alias: bool) -> str:
    inner = "*a" if alias else "1"
    return "x: &a [1, 2]\nexternal_labels: {k: " + "[" * depth + inner + "]" * depth + "}\n"


def test_token_soup_never_crashes(attack: AttackRow) -> None:
    attack.describe(
        "hypothesis: 300 token soups of YAML syntax, tags, anchors and config keys",
        "a Config or located ConfigErrors, never another exception",
    )
    seen: Counter[str] = Counter()

    @settings(max_examples=300, deadline=2000, suppress_health_check=[HealthCheck.too_slow])
    @given(st.lists(st.sampled_from(TOKENS), max_size=60))
    def soup(tokens: list[str]) -> None:
        try:
            assert isinstance(parse_config("".join(tokens), "c.yaml"), Config)
            seen["loaded"] += 1
        except ConfigError as exc:
            seen["located errors"] += 1
            assert all(str(p).startswith("c.yaml:") for p in exc.problems)

    soup()
    attack.saw(", ".join(f"{n} {what}" for what, n in sorted(seen.items())) + ", no crash")


def test_any_depth_is_a_config_error_not_a_crash(attack: AttackRow) -> None:
    attack.describe(
        "hypothesis: nesting 0-300 deep, with and without an alias", "a ConfigError, no crash"
    )
    deepest: list[int] = [0]

    @settings(max_examples=60, deadline=2000)
    @given(st.integers(min_value=0, max_value=300), st.booleans())
    def depths(depth: int, alias: bool) -> None:
        deepest[0] = max(deepest[0], depth)
        try:
            parse_config(nested(depth, alias), "c.yaml")
        except ConfigError as exc:
            assert exc.problems

    depths()
    attack.saw(f"depths up to {deepest[0]}: only ConfigErrors")


def test_scalars_the_constructor_refuses_are_located(attack: AttackRow) -> None:
    attack.describe("scalars YAML cannot construct (<<: 1, !!int abc)", "PATH:LINE:COL errors")
    for text, expected in [
        ("<<: 1\n", "c.yaml:1:1: <root>: YAML: could not determine a constructor"),
        ("gpus: {expected: !!int abc}\n", "c.yaml:1:18: gpus.expected: YAML: "),
    ]:
        try:
            parse_config(text, "c.yaml")
        except ConfigError as exc:
            attack.saw(str(exc.problems[0])[:60])
            assert [str(p)[: len(expected)] for p in exc.problems] == [expected]
        else:
            raise AssertionError(f"{text!r} loaded")
