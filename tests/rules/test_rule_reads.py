"""Which metrics a rule set can read (``rules.reads``): what a replay keeps samples of."""

from __future__ import annotations

from pathlib import Path

from inferwatch.rules.loader import load_rule_files, load_rule_text
from inferwatch.rules.reads import MetricReads, metric_reads
from inferwatch.rules.ruleset import RuleSet

REPO = Path(__file__).resolve().parents[2]


def reads(text: str) -> MetricReads | None:
    groups, problems = load_rule_text(text, "r.yaml")
    assert problems == []
    return metric_reads(RuleSet(tuple(groups)))


def one_alert(expr: str, summary: str = "") -> MetricReads | None:
    """What a rule set of one alerting rule reads (its summary a single-quoted YAML string)."""
    notes = f"\n        annotations:\n          summary: '{summary}'" if summary else ""
    return reads(
        f"groups:\n  - name: g\n    rules:\n      - alert: A\n        expr: '{expr}'{notes}\n"
    )


def test_expressions_and_template_queries_are_read() -> None:
    found = reads(
        """
groups:
  - name: g
    rules:
      - record: r:sum
        expr: sum(rate(a_total[5m])) + b offset 1h
      - alert: A
        expr: c > on() group_left() d
        annotations:
          summary: >-
            {{ with printf "e{job=%q}" $labels.job | query }}{{ . | first | value }}{{ end }}
            {{ with query "f or g" }}{{ end }}{{ with query "not [ promql" }}{{ end }}
"""
    )
    assert found is not None
    for name in ("a_total", "b", "c", "d", "e", "f", "g"):
        assert found(name), name
    for name in ("r:sum", "h", "a", "e_total", "promql"):  # written, or named nowhere
        assert not found(name), name


def test_name_matchers_read_what_they_match() -> None:
    found = one_alert('{__name__=~"inferwatch_gpu_.*", pci_bus_id!=""} > 0')
    assert found is not None
    assert found("inferwatch_gpu_temperature_celsius")
    assert not found("inferwatch_engine_requests_waiting")


def test_a_selector_without_a_name_reads_everything() -> None:
    found = one_alert("x", '{{ with query "{job=\\"a\\"}" }}{{ end }}')
    assert found is not None and found("anything_at_all")


def test_one_unknown_query_makes_everything_readable() -> None:
    found = one_alert("x", '{{ with printf "%s" $labels.metric | query }}{{ end }}')
    assert found is None


def test_no_rules_read_nothing() -> None:
    found = metric_reads(RuleSet())
    assert found is not None and not found("inferwatch_engine_decode_tokens_per_second")


def test_shipped_rules_leave_unread_engine_gauges() -> None:
    """What the replay of an engine log may drop with the shipped rules: gauges no rule reads
    (per-position acceptance, queue and cache gauges), never what they judge."""
    rule_set, problems = load_rule_files(sorted((REPO / "rules").glob("*.yaml")))
    assert problems == []
    found = metric_reads(rule_set)
    assert found is not None
    for name in (
        "inferwatch_engine_decode_tokens_per_second",
        "inferwatch_engine_spec_acceptance_length",
        "inferwatch_engine_steps_per_second",
        "inferwatch_engine_crashes_total",
        "inferwatch_gpu_fault_incidents_total",  # EngineCrashed's diagnosis asks
        "inferwatch_gpu_pcie_link_width",  # GpuPcieLinkDegraded's summary asks, via $gpu
        "inferwatch_engine:steps_per_second:single_stream",
    ):
        assert found(name), name
    for name in (
        "inferwatch_engine_spec_position_acceptance_ratio",
        "inferwatch_engine_requests_waiting",
        "inferwatch_engine_kv_cache_usage_ratio",
    ):
        assert not found(name), name
