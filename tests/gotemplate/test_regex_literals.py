"""A literal pattern RE2 refuses is a parse error of the template, at its line."""

from __future__ import annotations

import pytest

from inferwatch.gotemplate.templates import TemplateParseError, compile_template


@pytest.mark.parametrize(
    "text",
    [
        '{{ if match "(a)\\\\1" $labels.x }}y{{ end }}',
        'line one\n{{ $labels.x | reReplaceAll "a(?=b)" "c" }}',
        '{{ define "t" }}{{ reReplaceAll "(?<!a)" "" . }}{{ end }}{{ template "t" "s" }}',
        '{{ with $labels }}{{ (match "a*+" .x) }}{{ end }}',
    ],
)
def test_refused_literal(text: str) -> None:
    with pytest.raises(TemplateParseError) as info:
        compile_template(text, "t")
    assert "error parsing regexp: " in str(info.value)
    line = text.count("\n", 0, text.index('"')) + 1
    assert str(info.value).startswith(f"template: t:{line}: ")


def test_valid_or_computed_patterns_load() -> None:
    compile_template('{{ if match "^gpu[0-9]+$" $labels.x }}y{{ end }}', "t")
    compile_template("{{ match $labels.pattern $labels.x }}", "t")  # checked when it runs
