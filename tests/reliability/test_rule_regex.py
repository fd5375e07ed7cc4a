"""Hardening item 8: rule and template regexes are RE2's, so a catastrophic pattern costs one pass.

``(a+)+$`` against ``aaa…a!`` backtracks exponentially in Python's ``re``: one evaluation of a
rule using it held the event loop for seconds (here, 40 ``a``: for ever). Under RE2 (Go's regexp,
Prometheus's semantics) the daemon evaluates it every second and keeps answering. What RE2 cannot
compile (backreferences, lookarounds) is refused when the rule file is loaded, at its line.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import wait_until
from inferwatch.gotemplate.funcs import match, re_replace_all
from inferwatch.labels import Matcher
from inferwatch.promql.engine import load
from integration.daemon_proc import start_daemon

EVIL = "(a+)+$"
VICTIM = "a" * 40 + "!"  # 2**40 paths for a backtracking engine

RULES = f"""\
groups:
  - name: hostile
    interval: 1s
    rules:
      - record: victim
        expr: label_replace(vector(1), "s", "{VICTIM}", "", "")
      - record: evil
        expr: label_replace(victim, "d", "$1", "s", "{EVIL}")
      - record: evil_selector
        expr: victim{{s=~"{EVIL}"}} or victim{{s!~"{EVIL}"}}
      - record: hostile_evaluated_at
        expr: time()
      - alert: EvilTemplate
        expr: victim
        annotations:
          summary: '{{{{ $labels.s | reReplaceAll "{EVIL}" "x" }}}}{{{{ if match "{EVIL}" $labels.s }}}}!{{{{ end }}}}'
"""


@pytest.mark.integration
def test_the_daemon_evaluates_a_catastrophic_pattern_every_second(tmp_path: Path) -> None:
    rules = tmp_path / "hostile.yaml"
    rules.write_text(RULES)
    config = tmp_path / "c.yaml"
    config.write_text(
        f"gpus: {{backend: 'off'}}\nkernel: {{source: 'off'}}\nrule_files: [{rules}]\n"
    )
    d = start_daemon(tmp_path, "--config", str(config))
    try:
        d.wait_ready(timeout=60)  # today: the first evaluation never ends, /healthz never answers

        def evaluated_at() -> float | None:
            for line in d.metrics().splitlines():
                if line.startswith("hostile_evaluated_at "):
                    return float(line.split()[1])
            return None

        first = wait_until(evaluated_at, 30, "the hostile rules to be evaluated")
        # several evaluations more, each answered meanwhile: the loop is never held for long
        slowest = 0.0
        while (now := evaluated_at()) is None or now < first + 3:
            t0 = time.monotonic()
            assert d.get("/healthz").status_code == 200
            slowest = max(slowest, time.monotonic() - t0)
            assert time.monotonic() - d.started < 120, "evaluations stopped"
        assert slowest < 2.0, slowest  # generous: one backtracking evaluation takes hours
        metrics = d.metrics()
        assert f'evil{{s="{VICTIM}"}} 1.0' in metrics  # no match: no label "d" written
        assert f'evil_selector{{s="{VICTIM}"}} 1.0' in metrics
        alerts = d.get("/api/v1/alerts").json()["alerts"]
        [alert] = [a for a in alerts if a["labels"]["alertname"] == "EvilTemplate"]
        assert alert["annotations"]["summary"] == VICTIM  # no match either: nothing replaced
    finally:
        code, _ = d.terminate()
    assert code == 0, d.log()


def test_what_re2_refuses_is_refused_at_load_with_its_line(tmp_path: Path) -> None:
    rules = tmp_path / "bad.yaml"
    rules.write_text(
        "groups:\n  - name: g\n    rules:\n"
        '      - record: a\n        expr: x{l=~"(a)\\\\1"}\n'
        '      - record: b\n        expr: label_replace(x, "d", "$1", "s", "(?<=a)b")\n'
        "      - alert: C\n        expr: x\n        annotations:\n"
        "          summary: '{{ if match \"a(?!b)\" $labels.s }}y{{ end }}'\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "inferwatch", "check", "--rules", str(rules)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    lines = [line for line in done.stdout.splitlines() if line.startswith(str(rules))]
    assert [line.split(": ")[0] for line in lines] == [
        f"{rules}:5:9",
        f"{rules}:7:9",
        f"{rules}:11:11",
    ]
    assert "illegal regex" in lines[0]
    assert "(RE2: invalid perl operator: (?<" in lines[1]
    assert "error parsing regexp: invalid perl operator: (?!" in lines[2]
    assert "Traceback" not in done.stderr


def test_every_regex_entry_point_is_linear() -> None:
    """Selector matchers, label_replace, template functions and Alertmanager-style matchers
    (silences, routes) all go through RE2: a long hostile value is one pass for each."""
    long_victim = "a" * 100_000 + "!"
    assert not Matcher.of("s", "=~", EVIL).matches(long_victim)
    assert Matcher.of("s", "!~", EVIL).matches(long_victim)
    assert not match(EVIL, long_victim)
    assert re_replace_all(EVIL, "x", long_victim) == long_victim
    assert re_replace_all("(a+)+", "x", long_victim) == "x!"
    query = load(f'label_replace(x{{s=~"{EVIL}"}} or x, "d", "$1", "s", "{EVIL}")')
    assert query is not None
