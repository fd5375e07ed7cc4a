"""Hardening item 2: alias bombs, huge files and slow files are refused at their place, in
bounded time and memory, and a reload parses off the event loop."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import httpx
import pytest

from inferwatch.config.yamlguard import MAX_ALIAS_NODES, MAX_BYTES, MAX_NODES
from inferwatch.configfile import load_config, parse_config
from inferwatch.errors import ConfigError
from integration.daemon_proc import start_daemon
from reliability.attack_table import AttackRow
from reliability.confcheck import check


def alias_bomb(levels: int = 9, width: int = 9) -> str:
    """A few hundred bytes standing for ``width ** levels`` strings once expanded."""
    lines = ["external_labels: {}", 'l0: &l0 ["lol"]']
    for i in range(1, levels):
        refs = ",".join([f"*l{i - 1}"] * width)
        lines.append(f"l{i}: &l{i} [{refs}]")
    return "\n".join(lines) + "\n"


def problems(text: str) -> list[str]:
    with pytest.raises(ConfigError) as info:
        parse_config(text, "c.yaml")
    return [str(p) for p in info.value.problems]


def test_an_alias_bomb_is_refused_quickly_by_check(tmp_path: Path, attack: AttackRow) -> None:
    attack.describe(
        "`check` on a <500-byte YAML alias bomb (9 levels x 9 aliases)",
        "exit 2 in seconds, one PATH:LINE:COL error at the alias",
    )
    path = tmp_path / "bomb.yaml"
    text = alias_bomb()
    assert len(text) < 500
    path.write_text(text)
    t0 = time.monotonic()
    result = check(path)
    attack.saw(f"exit {result.code} after {time.monotonic() - t0:.1f} s: {result.out[:90]!r}")
    assert result.code == 2, result.out  # today: killed at the timeout (or out of memory)
    assert time.monotonic() - t0 < 20
    [line] = result.out.strip().splitlines()
    assert line.startswith(f"{path}:6:18: l4[2]: "), line
    assert f"aliases expand to more than {MAX_ALIAS_NODES} values" in line


def test_a_bomb_under_a_single_key_is_refused_at_the_alias(attack: AttackRow) -> None:
    attack.describe("alias bomb whose expansion lands under one key", "refused at that key")
    text = "a: &a [x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a]\n"
    text += "c: &c [*b, *b, *b, *b, *b, *b, *b, *b]\nd: [*c, *c, *c, *c, *c, *c, *c, *c]\n"
    [line] = problems(text)
    attack.saw(line[:100])
    assert line.startswith("c.yaml:4:"), line
    assert line.split(": ")[1].startswith("d["), line


def test_a_few_aliases_still_work(attack: AttackRow) -> None:
    attack.describe("an ordinary anchor and alias (no bomb)", "resolved and judged as written out")
    text = (
        "x-common: &common {send_resolved: false}\n"
        "receivers:\n  - name: a\n    webhook_configs: [{url: 'http://127.0.0.1:1/', x: *common}]\n"
    )
    # the alias resolves; the keys it lands on are judged as if written out
    attack.saw("; ".join(problems(text))[:100])
    assert any("x-common" in p for p in problems(text))


def test_an_alias_inside_its_own_anchor_is_refused(attack: AttackRow) -> None:
    attack.describe("an alias inside its own anchor (a cycle)", "refused at the alias")
    [line] = problems("external_labels:\n  a: &a [1, *a]\n")
    attack.saw(line)
    assert line == "c.yaml:2:13: external_labels.a[1]: alias *a refers to itself"


def test_a_file_over_the_size_limit_is_not_parsed(tmp_path: Path, attack: AttackRow) -> None:
    attack.describe(f"a config file just over {MAX_BYTES} bytes", "refused unparsed at 1:1")
    path = tmp_path / "big.yaml"
    path.write_text("# padding\n" * (MAX_BYTES // 10 + 1) + "language: en\n")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    [problem] = info.value.problems
    attack.saw(str(problem).replace(str(path), "big.yaml")[:100])
    assert str(problem).startswith(f"{path}:1:1: <root>: the file is ")
    assert f"limited to {MAX_BYTES}" in str(problem)


def test_too_many_values_are_refused_at_the_first_one_over(attack: AttackRow) -> None:
    attack.describe(f"a list of {MAX_NODES + 10} values", "refused at the first value over")
    text = "rule_files: [" + ",".join(["x"] * (MAX_NODES + 10)) + "]\n"
    [line] = problems(text)
    attack.saw(line[:100])
    assert f"more than {MAX_NODES} keys and values" in line
    assert line.startswith("c.yaml:1:") and ": rule_files[" in line


@pytest.mark.integration
def test_reload_parses_off_the_event_loop(tmp_path: Path, attack: AttackRow) -> None:
    """A slow file (about 2 s to parse) is read in a worker thread: /healthz keeps answering."""
    attack.describe(
        "SIGHUP with a slow-to-parse bad config", "reload refused, /healthz answers in < 1 s"
    )
    config = tmp_path / "c.yaml"
    config.write_text("gpus:\n  backend: 'off'\n")
    d = start_daemon(tmp_path, "--config", str(config))
    try:
        d.wait_ready()
        config.write_text("bogus: [" + ",".join(["x"] * (MAX_NODES - 100)) + "]\n")
        d.proc.send_signal(signal.SIGHUP)
        slowest = 0.0
        answered = 0
        deadline = time.monotonic() + 60
        while "config reload failed" not in d.log():
            assert d.proc.poll() is None, d.log()
            assert time.monotonic() < deadline, "the reload did not finish in 60 s"
            t0 = time.monotonic()
            try:
                assert d.get("/healthz").status_code == 200
            except httpx.TimeoutException:
                pytest.fail("/healthz timed out during the reload")
            slowest = max(slowest, time.monotonic() - t0)
            answered += 1
        attack.saw(f"{answered} /healthz answers during the reload, slowest {slowest:.2f} s")
        assert "bogus: unknown key" in d.log()
        assert answered >= 3, answered  # the parse took long enough to be measured
        assert slowest < 1.0, slowest  # today: one request waits for the whole parse
    finally:
        code, _ = d.terminate()
    assert code == 0
