"""``alert_rule_test`` checks and promtool's way of printing a mismatch.

promtool compares the **firing** alerts of every alerting rule with the test's ``alertname``
(pending ones do not count) with the expected ones, each given ``alertname``: label sets and
annotations must match exactly, both lists sorted by labels. An expected label or annotation
with an empty value is kept as such (so it can never match an alert label). The failure text
reproduces promtool 2.42's layout line for line.
"""

from __future__ import annotations

from collections.abc import Iterable

from inferwatch.alerts.model import ALERTNAME, Alert
from inferwatch.golang.strings import go_quote
from inferwatch.promtool.testfile import AlertRuleTest, format_duration_ms

Pairs = tuple[tuple[str, str], ...]
LabelsAndAnnotations = tuple[Pairs, Pairs]


def _pairs(text: Pairs) -> str:
    return "{" + ", ".join(f"{k}={go_quote(v)}" for k, v in text) + "}"


def _indent(lines: str, indent: str) -> str:
    parts = lines.split("\n")
    return "\n".join(p if i == 0 else indent + p for i, p in enumerate(parts))


def _one(item: LabelsAndAnnotations) -> str:
    return "Labels:" + _pairs(item[0]) + "\nAnnotations:" + _pairs(item[1])


def render(items: list[LabelsAndAnnotations]) -> str:
    """promtool's ``labelsAndAnnotations.String()``."""
    if not items:
        return "[]"
    text = "[\n0:" + _indent("\n" + _one(items[0]), "  ")
    for i, item in enumerate(items[1:], start=1):
        text += ",\n" + str(i) + ":" + _indent("\n" + _one(item), "  ")
    return text + "\n]"


def expected(test: AlertRuleTest) -> list[LabelsAndAnnotations]:
    out = []
    for exp in test.exp_alerts:
        labels = {**exp.labels, ALERTNAME: test.alertname}
        out.append((tuple(sorted(labels.items())), tuple(sorted(exp.annotations.items()))))
    return sorted(out, key=lambda item: item[0])


def got(firing: Iterable[Alert]) -> list[LabelsAndAnnotations]:
    return sorted(((a.labels, tuple(a.annotations)) for a in firing), key=lambda item: item[0])


def check(test: AlertRuleTest, firing: Iterable[Alert], group_name: str) -> str | None:
    """None when the firing alerts are the expected ones, else promtool's failure text."""
    exp, have = expected(test), got(firing)
    if exp == have:
        return None
    name = f"    name: {group_name},\n" if group_name else ""
    return (
        f"{name}    alertname: {test.alertname}, time: {format_duration_ms(test.eval_time_ms)}, "
        f"\n        exp:{_indent(render(exp), '            ')}, "
        f"\n        got:{_indent(render(have), '            ')}"
    )


def go_duration(ms: int) -> str:
    """Go's ``time.Duration.String()`` for whole milliseconds: ``0s``, ``500ms``, ``1m30s``,
    ``1h0m0s`` (promtool prints rule errors' times this way)."""
    if ms == 0:
        return "0s"
    sign = "-" if ms < 0 else ""
    ms = abs(ms)
    if ms < 1000:
        return f"{sign}{ms}ms"
    hours, rest = divmod(ms, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    seconds = f"{rest // 1000}" + (f".{rest % 1000:03d}".rstrip("0") if rest % 1000 else "")
    if hours:
        return f"{sign}{hours}h{minutes}m{seconds}s"
    if minutes:
        return f"{sign}{minutes}m{seconds}s"
    return f"{sign}{seconds}s"
