"""Which rule templates may read the alert's value (``gotemplate.reads``)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from inferwatch.gotemplate.templates import (
    QueryResult,
    QuerySample,
    TemplateData,
    compile_template,
    expand_for_rule,
)
from inferwatch.rules.loader import load_rule_files
from inferwatch.rules.ruleset import AlertingRule

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("text", "reads"),
    [
        ("no action at all", False),
        ("{{ $labels.engine }} on {{ $externalLabels.host }} {{ $externalURL }}", False),
        ("{{ .Labels.job }} {{ .ExternalURL }}", False),
        ("{{ $value }}", True),
        ("{{ $value | humanize }}", True),
        ("{{ .Value }}", True),
        ("{{ $.Value }}", True),
        ("{{ $ }}", True),
        ("{{ . }}", True),  # the whole dot, value included
        ('{{ printf "%v" . }}', True),
        ("{{ if gt .Value 1.0 }}big{{ end }}", True),
        ("{{ if $labels.job }}{{ . }}{{ end }}", True),  # an if keeps the dot
        ("{{ $v := .Value }}{{ $labels.job }}", True),
        ("{{ (.).Value }}", True),
        ('{{ with query "up" }}{{ . | first | value }}{{ end }}', False),  # dot rebound
        ('{{ with query "up" }}x{{ else }}{{ .Value }}{{ end }}', True),  # else: the alert's dot
        ("{{ range $labels }}{{ . }}{{ end }}", False),
        ("{{ range $labels }}x{{ else }}{{ . }}{{ end }}", True),
        # nested: the inner else has the outer with's dot, not the alert's
        (
            '{{ with $labels.a }}{{ with query "x" }}{{ . }}{{ else }}{{ . }}{{ end }}{{ end }}',
            False,
        ),
        ('{{ define "t" }}{{ .Value }}{{ end }}{{ template "t" . }}', True),
        ('{{ define "t" }}x{{ end }}{{ template "t" }}', True),  # any call: not followed
    ],
)
def test_what_may_read_the_value(text: str, reads: bool) -> None:
    assert compile_template(text, "t").reads_value is reads


def _answer(text: str) -> QueryResult:
    return QueryResult([QuerySample({"__name__": "q", "xid": "79", "pci_bus_id": "0:1"}, 3.0)])


def test_a_shipped_template_that_cannot_read_the_value_expands_alike_for_every_value() -> None:
    """The test errs only towards "reads": every shipped label and annotation template judged
    not to read it gives the same text whatever the value (and most of them are so judged)."""
    rule_set, problems = load_rule_files(sorted((REPO / "rules").glob("*.yaml")))
    assert not problems
    judged = 0
    for group in rule_set.groups:
        for rule in group.rules:
            if not isinstance(rule, AlertingRule):
                continue
            for _, template in (*rule.labels, *rule.annotations):
                if template.reads_value:
                    continue
                judged += 1
                labels = {"engine": "e", "signature": "nccl", "job": "j", "instance": "i"}
                texts = {
                    expand_for_rule(template, TemplateData(labels, {}, "", value), _answer)
                    for value in (0.0, 1.0, 2.5, -7.25e9, math.nan, math.inf)
                }
                assert len(texts) == 1, (rule.name, template.name)
    assert judged > 100
