"""Prometheus text exposition from an engine's /metrics (reference/engine.md 4, 7.3, 8).

`parse_exposition(text)` returns one typed `MetricSample` per sample line (vLLM `vllm:`, SGLang
`sglang:` or renamed `sglang_`, llama.cpp `llamacpp:`, anything else alike), with the sample
name as exposed and the declared type of its family. Parsing is done by
`prometheus_client.parser.text_string_to_metric_families`; this module only undoes its one
renaming (a counter declared without `_total`, such as llama.cpp's
`llamacpp:n_busy_slots_per_decode`, keeps its exposed name here) and turns any failure into
`ExpositionError`, a ValueError naming the first offending line. An empty body is no samples
(vLLM can answer 200 with nothing, #8612). Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from prometheus_client.parser import text_string_to_metric_families

__all__ = [
    "ENGINE_PREFIXES",
    "ExpositionError",
    "MetricSample",
    "canonical_name",
    "engine_of",
    "parse_exposition",
]

ENGINE_PREFIXES = {"vllm": "vllm", "sglang": "sglang", "llamacpp": "llamacpp"}
"""Metric-name namespace (before `:` or a renamed `_`) -> engine kind."""


class ExpositionError(ValueError):
    """Text that is not valid Prometheus exposition; `line_no` is 1-based, None if unknown."""

    def __init__(self, reason: str, line_no: int | None = None, line: str | None = None) -> None:
        where = f"line {line_no}: {line!r}: " if line_no is not None else ""
        self.reason = reason  # without the line: what kind of garbage it is
        super().__init__(f"invalid exposition: {where}{reason}")
        self.reason = reason
        self.line_no = line_no
        self.line = line


@dataclass(frozen=True, slots=True)
class MetricSample:
    """One sample: `name` as exposed (`vllm:prompt_tokens_total`, `…_bucket`), its `labels`,
    `value`, `kind` (the family's declared type: counter, gauge, histogram, summary, info,
    stateset, gaugehistogram or untyped), `family` (the name in its TYPE line, without a
    counter's `_total`) and the optional exposition `timestamp` in seconds."""

    name: str
    labels: Mapping[str, str] = field(hash=False)
    value: float
    kind: str
    family: str
    timestamp: float | None = None


def canonical_name(name: str) -> str:
    """`sglang_num_running_reqs` -> `sglang:num_running_reqs` (pipelines that rename `:`)."""
    for prefix in ENGINE_PREFIXES:
        if name.startswith(prefix + "_"):
            return f"{prefix}:{name[len(prefix) + 1 :]}"
    return name


def engine_of(name: str) -> str | None:
    """The engine kind a metric name belongs to, or None."""
    head, sep, _ = canonical_name(name).partition(":")
    return ENGINE_PREFIXES.get(head) if sep else None


def _declared_counters(text: str) -> set[str]:
    names: set[str] = set()
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            parts = line.split()
            if len(parts) >= 4 and parts[3] == "counter":
                names.add(parts[2])
    return names


def _locate(text: str, error: Exception) -> ExpositionError:
    """Find the first line that fails on its own; it names the error."""
    reason = str(error) or type(error).__name__
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            list(text_string_to_metric_families(line + "\n"))
        except Exception as exc:  # any parser failure marks a bad line
            return ExpositionError(str(exc) or reason, number, line)
    return ExpositionError(reason)


def parse_exposition(text: str) -> list[MetricSample]:
    """Every sample in `text`; raises ExpositionError (a ValueError) on malformed input."""
    if "\x00" in text:
        for number, line in enumerate(text.splitlines(), start=1):
            if "\x00" in line:
                raise ExpositionError("NUL byte", number, line)
    try:
        families = list(text_string_to_metric_families(text))
    except Exception as exc:  # the parser raises bare ValueErrors and others
        raise _locate(text, exc) from exc
    counters = _declared_counters(text) if any(f.type == "counter" for f in families) else set()
    out: list[MetricSample] = []
    for family in families:
        kind = "untyped" if family.type == "unknown" else family.type
        # prometheus_client appends `_total` to the samples of a counter whose TYPE line has
        # none, and strips it from the family name when it has one; restore the exposed names.
        renamed = kind == "counter" and family.name in counters
        for sample in family.samples:
            name = sample.name
            if renamed and name == family.name + "_total":
                name = family.name
            out.append(
                MetricSample(
                    name=name,
                    labels=dict(sample.labels),
                    value=float(sample.value),
                    kind=kind,
                    family=family.name,
                    timestamp=None if sample.timestamp is None else float(sample.timestamp),
                )
            )
    return out
