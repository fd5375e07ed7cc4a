"""Fuzzed templates: parsing and expansion only ever fail with the template error types.

Templates come from rule files, and a rule must never take the evaluator down: whatever the text,
``compile_template`` either returns a template or raises :class:`TemplateParseError`, ``expand``
either returns text or raises :class:`TemplateExecError`, and what a rule shows
(``expand_for_rule``) never raises at all.
"""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from inferwatch.gotemplate.lex import TemplateSyntaxError
from inferwatch.gotemplate.parse import Parser, Prefix
from inferwatch.gotemplate.templates import (
    PRELUDE,
    Limits,
    QueryResult,
    QuerySample,
    TemplateData,
    TemplateError,
    TemplateExecError,
    TemplateParseError,
    _check_function,
    compile_template,
    expand,
    expand_for_rule,
)

FRAGMENTS = [
    "{{", "}}", "{{- ", " -}}", " ", "\n", "$labels", "$value", "$externalLabels", ".Labels",
    ".Value", ".", ".job", "|", "(", ")", '"', "'", "`", "\\", "/*", "*/", ":=", "=", ",",
    "$x", "$", "1", "1.5", "-2", "0x1F", "'a'", "1e3", "nil", "true", "false", "if", "else",
    "end", "range", "with", "define", "template", "block", "break", "continue", '"t"', '"q"',
    '"%d %s %v %q %x %5.1f %"', "humanize", "humanize1024", "humanizeDuration",
    "humanizePercentage", "humanizeTimestamp", "printf", "print", "println", "title",
    "toUpper", "toLower", "reReplaceAll", "match", '"(a*)"', '"$1x"', "query", "first", "value",
    "label", "strvalue", "sortByLabel", "len", "index", "eq", "ne", "lt", "le", "gt", "ge",
    "and", "or", "not", "safeHtml", "parseDuration", "graphLink", "urlquery", "html", "x",
    "%", "default", "slice",
]  # fmt: skip

DATA = TemplateData({"__name__": "m", "job": "api"}, {"host": "h"}, "http://x/", 2.5)
SAMPLES = QueryResult([QuerySample({"__name__": "q", "a": "1"}, 1.0)])
SMALL = Limits(output_bytes=4096, range_iterations=100, depth=5, queries=5)


def _query(text: str) -> QueryResult:
    return SAMPLES if "q" in text else QueryResult()


texts = st.one_of(
    st.lists(st.sampled_from(FRAGMENTS), max_size=30).map("".join),
    st.text(max_size=60),
    st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=3)), max_size=20).map("".join),
)


@settings(max_examples=400, deadline=None)
@given(texts)
def test_only_template_errors(text: str) -> None:
    try:
        template = compile_template(text, "__alert_F")
    except TemplateParseError:
        return
    try:
        out = expand(template, DATA, _query, SMALL)
    except TemplateExecError:
        out = None
    assert out is None or isinstance(out, str)
    shown = expand_for_rule(template, DATA, _query, SMALL)
    assert isinstance(shown, str)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=80).filter(lambda t: "{{" not in t))
def test_plain_text_is_itself(text: str) -> None:
    assert expand(compile_template(text, "t"), DATA) == text


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["{{ range $labels }}", "{{ end }}", "{{ . }}", "x"]), max_size=40))
def test_nesting_never_escapes(parts: list[str]) -> None:
    text = "".join(parts)
    try:
        out = expand(compile_template(text, "t"), DATA, _query, SMALL)
    except TemplateError:
        return
    assert len(out.encode()) <= SMALL.output_bytes


def _parsed(text: str, prefix: Prefix | None) -> object:
    """What parsing the rule prelude and ``text`` gives: the nodes and defines, or the error."""
    try:
        parser = Parser(PRELUDE + text, _check_function, prefix)
        return parser.parse(), parser.defines
    except TemplateSyntaxError as exc:
        return exc.message, exc.pos


@settings(max_examples=400, deadline=None)
@given(texts)
@example("{{ $labels.job }} {{ $value | humanize }}")
@example("{{ $undefined }}")
@example("{{- $externalURL }}")
def test_a_template_after_the_parsed_prelude_parses_as_one_text(text: str) -> None:
    """Rule templates go on from the prelude lexed and parsed once: the same nodes, variables
    and errors (at the same offsets) as the whole text parsed from its start."""
    prefix = Prefix.of(PRELUDE, _check_function)
    assert _parsed(text, prefix) == _parsed(text, None)


def test_a_prefix_must_end_where_another_text_can_go_on() -> None:
    with pytest.raises(ValueError, match="trims nothing"):
        Prefix.of("{{ $x := 1 -}}", _check_function)
    with pytest.raises(ValueError, match="trims nothing"):
        Prefix.of("{{ $x := 1 }} text}}", _check_function)  # text would join the next text
    with pytest.raises(ValueError, match="defines no template"):
        Prefix.of('{{ define "t" }}x{{ end }}', _check_function)
    prefix = Prefix.of(PRELUDE, _check_function)
    with pytest.raises(ValueError, match="does not start"):
        Parser("{{ 1 }}", _check_function, prefix)
