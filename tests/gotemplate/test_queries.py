"""The queries a rule template can send, known from its text (``gotemplate.queries``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from inferwatch.gotemplate.queries import sent_queries
from inferwatch.gotemplate.templates import compile_template
from inferwatch.rules.loader import load_rule_files
from inferwatch.rules.ruleset import AlertingRule

REPO = Path(__file__).resolve().parents[2]


def sent(text: str) -> tuple[str, ...] | None:
    return sent_queries(compile_template(text, "t"))


@pytest.mark.parametrize(
    ("text", "queries"),
    [
        ("no action", ()),
        ("{{ $labels.job }} and {{ $value }}", ()),
        ('{{ with query "up" }}{{ . | first | value }}{{ end }}', ("up",)),
        ('{{ query "up" | first | value }}', ("up",)),
        ('{{ (query "a") | len }}{{ range query "b" }}{{ end }}', ("a", "b")),
        (
            '{{ with printf "up{job=%q,instance=%q}" $labels.job $externalLabels.host | query }}'
            "{{ end }}",
            ('up{job="q",instance="q"}',),
        ),
        ('{{ printf "x{a=%q} %% 2" "lit" | query }}', ('x{a="q"} % 2',)),
        # a variable declared once from a known printf, written in with %s
        (
            '{{ $g := printf "bus=%q" $labels.bus }}{{ printf "w{%s} or m{%s}" $g $g | query }}',
            ('w{bus="q"} or m{bus="q"}',),
        ),
        (
            '{{ $a := printf "a=%q" $labels.a }}{{ $b := printf "%s,b=%q" $a $labels.b }}'
            '{{ printf "x{%s}" $b | query }}',
            ('x{a="q",b="q"}',),
        ),
        # the same query twice is one shape
        ('{{ query "up" }}{{ query "up" }}', ("up",)),
        # in a defined template, called or not
        ('{{ define "d" }}{{ query "in_define" }}{{ end }}x', ("in_define",)),
        # inside a chain and a parenthesized argument
        ('{{ (query "c").X }}{{ len (query "p") }}', ("c", "p")),
        # "query" only in the text: no call
        ("this text says query", ()),
    ],
)
def test_known_queries(text: str, queries: tuple[str, ...]) -> None:
    assert sent(text) == queries


@pytest.mark.parametrize(
    "text",
    [
        '{{ $q := "up" }}{{ query $q }}',  # a variable: any text
        '{{ printf "%s" $labels.metric | query }}',  # a label value as text, not quoted
        '{{ printf "%v{}" $labels.metric | query }}',
        '{{ printf "x > %d" $value | query }}',  # another verb
        '{{ printf "x{a=%05q}" $labels.a | query }}',  # zeros padded outside the quotes
        '{{ printf "x{a=%-9q}" $labels.a | query }}',
        '{{ printf "x{a=%q}" .Labels.a | query }}',  # the dot may be anything here
        '{{ printf "x{a=%q}" $value | query }}',  # a number: %!q(float64=…)
        '{{ printf "x{a=%q}" $labels | query }}',  # a map
        '{{ printf "x{a=%q}" (query "y") | query }}',
        '{{ printf "x{a=%q}" | query }}',  # missing argument
        '{{ printf "x" $labels.a | query }}',  # extra argument
        '{{ printf "x{a=%[1]q}" $labels.a | query }}',  # an explicit argument index
        '{{ printf "x{a=%q}" $labels.a | toLower | query }}',  # not piped straight in
        '{{ toLower "up" | query }}',
        '{{ query "a" "b" }}',
        '{{ "up" | query "x" }}',
        "{{ query }}",
        '{{ printf "%v" query }}',  # named as an argument
        # $labels bound to something else: a "label value" could hold anything
        '{{ $labels := .Value }}{{ printf "x{a=%q}" $labels.a | query }}',
        '{{ $labels = .ExternalLabels }}{{ printf "x{a=%q}" $labels.a | query }}',
        # a variable declared twice, or assigned, or not from a known printf
        '{{ $g := printf "a=%q" $labels.a }}{{ $g = "a=1" }}{{ printf "x{%s}" $g | query }}',
        '{{ $g := printf "a=%q" $labels.a }}{{ if 1 }}{{ $g := "oops" }}{{ end }}'
        '{{ printf "x{%s}" $g | query }}',
        '{{ $g := $labels.a }}{{ printf "x{%s}" $g | query }}',
        '{{ $g := printf "%s" $labels.a }}{{ printf "x{%s}" $g | query }}',
    ],
)
def test_unknown_queries(text: str) -> None:
    assert sent(text) is None


def test_every_shipped_template_query_is_known() -> None:
    """The shipped rules' templates (``printf … %q … | query``, a ``$gpu`` fragment in
    GpuPcieLinkDegraded) all have known queries: a replay with them keeps only what they read."""
    rule_set, problems = load_rule_files(sorted((REPO / "rules").glob("*.yaml")))
    assert problems == []
    seen = 0
    for _, rule in rule_set.rules():
        if isinstance(rule, AlertingRule):
            for _, template in (*rule.labels, *rule.annotations):
                queries = sent_queries(template)
                assert queries is not None, (rule.name, template.name)
                seen += len(queries)
    assert seen > 20
