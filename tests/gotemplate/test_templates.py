"""Templates: Go text/template as Prometheus 2.42 runs it (reference/promql.md §7.4, §8).

Expected strings are the outputs promtool printed (§8's tables and the probes behind
alert_parity/templates.test.yaml); the alert parity suite checks the same against promtool.
"""

from __future__ import annotations

import math

import pytest

from inferwatch.gotemplate.templates import (
    Limits,
    QueryResult,
    QuerySample,
    TemplateData,
    TemplateExecError,
    TemplateParseError,
    compile_template,
    expand,
    expand_for_rule,
)

DATA = TemplateData(
    {"__name__": "m", "inst": "1", "job": "api"}, {"host": "h1"}, "http://ex/p", 1234.0
)
Q = QueryResult(
    [
        QuerySample({"__name__": "q", "a": "12345"}, 12345.0),
        QuerySample({"__name__": "q", "a": "7"}, 7.0),
    ]
)


def query(text: str) -> QueryResult:
    return Q if text == "q" else QueryResult()


def run(text: str, value: float = 1234.0) -> str:
    data = TemplateData(DATA.labels, DATA.external_labels, DATA.external_url, value)
    return expand_for_rule(compile_template(text, "__alert_P"), data, query)


TABLE = [  # value, humanize, humanize1024, humanizeDuration, humanizePercentage, $value
    (1234, "1.234k", "1.205ki", "20m 34s", "1.234e+05%", "1234"),
    (0.000123, "123u", "0.000123", "123us", "0.0123%", "0.000123"),
    (1000000, "1M", "976.6ki", "11d 13h 46m 40s", "1e+08%", "1e+06"),
    (0, "0", "0", "0s", "0%", "0"),
    (300, "300", "300", "5m 0s", "3e+04%", "300"),
    (90061, "90.06k", "87.95ki", "1d 1h 1m 1s", "9.006e+06%", "90061"),
    (0.25, "250m", "0.25", "250ms", "25%", "0.25"),
    (-1536, "-1.536k", "-1.5ki", "-25m 36s", "-1.536e+05%", "-1536"),
    (1.5, "1.5", "1.5", "1.5s", "150%", "1.5"),
    (3600, "3.6k", "3.516ki", "1h 0m 0s", "3.6e+05%", "3600"),
    (1048576, "1.049M", "1Mi", "12d 3h 16m 16s", "1.049e+08%", "1.048576e+06"),
    (math.inf, "+Inf", "+Inf", "+Inf", "+Inf%", "+Inf"),
    (math.nan, "NaN", "NaN", "NaN", "NaN%", "NaN"),
]


@pytest.mark.parametrize(("v", "h", "h1024", "dur", "pct", "plain"), TABLE)
def test_humanize_table(v: float, h: str, h1024: str, dur: str, pct: str, plain: str) -> None:
    text = "{{ humanize $value }}|{{ humanize1024 $value }}|{{ humanizeDuration $value }}"
    text += "|{{ humanizePercentage $value }}|{{ $value }}"
    assert run(text, float(v)) == f"{h}|{h1024}|{dur}|{pct}|{plain}"


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("{{ humanize 999999 }}|{{ humanize 1000 }}|{{ humanize 999.99 }}", "1000k|1k|1000"),
        ("{{ humanize -0.5 }}|{{ humanize 1e-12 }}|{{ humanize 1e27 }}", "-500m|1p|1000Y"),
        ("{{ humanizeDuration 59.9999 }}|{{ humanizeDuration 119.5 }}", "60s|1m 59s"),
        ("{{ humanizeDuration 86400 }}|{{ humanizeDuration 0.001 }}", "1d 0h 0m 0s|1ms"),
        ("{{ humanizeDuration -0.5 }}|{{ humanizePercentage 0.123456 }}", "-500ms|12.35%"),
        ("{{ humanize1024 1024 }}|{{ humanize1024 1023.9 }}", "1ki|1024"),
        ('{{ humanize "1234" }}|{{ humanizeDuration "90" }}', "1.234k|1m 30s"),
        ("{{ humanizeTimestamp 1.5 }}", "1970-01-01 00:00:01.5 +0000 UTC"),
        ("{{ humanizeTimestamp 1700000000.1234 }}", "2023-11-14 22:13:20.123 +0000 UTC"),
        ("{{ humanizeTimestamp -1.5 }}", "1969-12-31 23:59:58.5 +0000 UTC"),
        ('{{ title "gpu0abc it\'s x_y a.b" }}', "Gpu0abc It'S X_y A.B"),
        ('{{ title "gpu0 is DOWN" }}|{{ toUpper "straße" }}', "Gpu0 Is DOWN|STRAßE"),
        ('{{ reReplaceAll "(\\\\d+)" "$1x" "gpu12" }}', "gpu"),
        ('{{ reReplaceAll "(\\\\d+)" "${1}x" "gpu12" }}', "gpu12x"),
        ('{{ reReplaceAll "^gpu" "" "gpu12gpu" }}|{{ reReplaceAll "z*" "-" "ab" }}', "12gpu|-a-b-"),
        ('{{ reReplaceAll "a*" "-" "baaac" }}', "-b-c-"),
        (
            '{{ match "a.c" "xabcx" }}|{{ safeHtml "<b>" }}|{{ parseDuration "1h" }}',
            "true|<b>|3600",
        ),
        ('{{ printf "%.1f" 0.25 }}|{{ printf "%.0f" 2.5 }}|{{ printf "%.0f" 3.5 }}', "0.2|2|4"),
        ('{{ printf "%.2f%%" 12.345 }}|{{ printf "%5.1f|" 3.14159 }}', "12.35%|  3.1|"),
        (
            '{{ printf "%q" "x" }}|{{ printf "%x" 255 }}|{{ printf "%d" 1.5 }}',
            '"x"|ff|%!d(float64=1.5)',
        ),
        (
            '{{ printf "%s" 1.5 }}|{{ printf "%d %d" 1 }}|{{ printf "%d" 1 2 }}',
            "%!s(float64=1.5)|1 %!d(MISSING)|1%!(EXTRA int=2)",
        ),
        ('{{ $value | printf "%.2f" }}', "1234.00"),
        (
            "{{ $labels }}|[{{ $labels.nope }}]|{{ .Labels.job }}|{{ .Value }}",
            "map[__name__:m inst:1 job:api]|[]|api|1234",
        ),
        (
            "{{ $externalLabels.host }} {{ $externalURL }} {{ .ExternalURL }}",
            "h1 http://ex/p http://ex/p",
        ),
        ('{{ with query "q" }}{{ . | first | value }}{{ end }}', "12345"),
        ('{{ with query "nothing" }}A{{ else }}B{{ end }}', "B"),
        (
            '{{ range query "q" | sortByLabel "a" }}{{ .Labels.a }}={{ .Value }};{{ end }}',
            "12345=12345;7=7;",
        ),
        ('{{ range $i, $s := query "q" }}{{ $i }}:{{ label "a" $s }};{{ end }}', "0:12345;1:7;"),
        ("{{ range $k, $v := $labels }}{{ $k }}={{ $v }};{{ end }}", "__name__=m;inst=1;job=api;"),
        (
            '{{ if eq $labels.job "x" }}x{{ else if eq $labels.job "api" }}api{{ else }}no{{ end }}',
            "api",
        ),
        ('{{ and 1 0 }}|{{ or 0 "x" }}|{{ not 0 }}|{{ and 1 2 }}|{{ or 0 "" }}', "0|x|true|2|"),
        (
            '{{ eq "a" "b" "a" }}|{{ lt 1 2 }}|{{ gt $value 1.0 }}|{{ ne 1 2 }}',
            "true|true|true|true",
        ),
        (
            '{{ index $labels "job" }}|{{ len $labels }}|{{ len "abc" }}|{{ len (query "q") }}',
            "api|3|3|2",
        ),
        ('{{ print 1 2 "a" "b" 3 }}|{{ println 1 }}', "1 2ab3|1\n"),
        (
            'a {{- " x " -}} b|{{/* a comment */}}|{{ 1.5 }}|{{ 0x1F }}|{{ true }}',
            "a x b||1.5|31|true",
        ),
        ("{{ $x := 1 }}{{ $x = 2 }}{{ $x }}", "2"),
        ('{{ define "t" }}[{{ . }}]{{ end }}{{ template "t" "in" }}', "[in]"),
        ('{{ range $labels }}{{ if eq . "1" }}{{ break }}{{ end }}{{ . }}{{ end }}', "m"),
        ('{{ range $labels }}{{ if eq . "1" }}{{ continue }}{{ end }}{{ . }}{{ end }}', "mapi"),
        (
            "{{ range $labels }}x{{ else }}none{{ end }}|{{ with $labels.nope }}x{{ else }}y{{ end }}",
            "xxx|y",
        ),
        ('{{ first (query "q") }}', "{map[__name__:q a:12345] 12345}"),
        ("{{ . }}", "{map[__name__:m inst:1 job:api] map[host:h1] http://ex/p 1234}"),
        (
            '{{ graphLink "up == 0" }}|{{ urlquery "a b&c" }}|{{ html "<a \'b\'>" }}',
            "/graph?g0.expr=up+%3D%3D+0&g0.tab=0|a+b%26c|&lt;a &#39;b&#39;&gt;",
        ),
        ("no actions at all", "no actions at all"),
    ],
)
def test_outputs(text: str, want: str) -> None:
    assert run(text) == want


def _error(text: str) -> str:
    out = run(text)
    prefix = "<error expanding template: error executing template __alert_P: "
    assert out.startswith(prefix) and out.endswith(">"), out
    return out[len(prefix) : -1]


@pytest.mark.parametrize(
    ("text", "want"),
    [
        (
            '{{ humanize "abc" }}',
            'template: __alert_P:1:115: executing "__alert_P" at <humanize "abc">: error calling humanize: strconv.ParseFloat: parsing "abc": invalid syntax',
        ),
        (
            "{{ gt $value 1 }}",
            'template: __alert_P:1:115: executing "__alert_P" at <gt $value 1>: error calling gt: incompatible types for comparison',
        ),
        (
            "{{ humanize true }}",
            'template: __alert_P:1:115: executing "__alert_P" at <humanize true>: error calling humanize: can\'t convert bool to float',
        ),
        (
            '{{ value (first (query "nothing")) }}',
            'template: __alert_P:1:122: executing "__alert_P" at <first (query "nothing")>: error calling first: first() called on vector with no elements',
        ),
        (
            "{{ $value.foo }}",
            'template: __alert_P:1:121: executing "__alert_P" at <$value.foo>: can\'t evaluate field foo in type float64',
        ),
        (
            "{{ title 1 }}",
            'template: __alert_P:1:121: executing "__alert_P" at <1>: expected string; found 1',
        ),
        (
            "{{ $value 1 }}",
            'template: __alert_P:1:115: executing "__alert_P" at <$value>: can\'t give argument to non-function $value',
        ),
        (
            "{{ value 1 }}",
            'template: __alert_P:1:121: executing "__alert_P" at <1>: can\'t handle 1 for arg of type *template.sample',
        ),
        (
            "{{ len 1 }}",
            'template: __alert_P:1:115: executing "__alert_P" at <len 1>: error calling len: len of type int',
        ),
        (
            "{{ index $labels 1 }}",
            'template: __alert_P:1:115: executing "__alert_P" at <index $labels 1>: error calling index: value has type int; should be string',
        ),
        (
            "{{ printf }}",
            'template: __alert_P:1:115: executing "__alert_P" at <printf>: wrong number of args for printf: want at least 1 got 0',
        ),
        (
            "{{ nil }}",
            'template: __alert_P:1:115: executing "__alert_P" at <nil>: nil is not a command',
        ),
        (
            "{{ range 5 }}x{{ end }}",
            'template: __alert_P:1:121: executing "__alert_P" at <5>: range can\'t iterate over 5',
        ),
        (
            '{{ template "y" }}',
            'template: __alert_P:1:124: executing "__alert_P" at <{{template "y"}}>: template "y" not defined',
        ),
        (
            "{{ lt true false }}",
            'template: __alert_P:1:115: executing "__alert_P" at <lt true false>: error calling lt: invalid type for comparison',
        ),
        (
            'x\n{{ humanize "abc" }}',
            'template: __alert_P:2:3: executing "__alert_P" at <humanize "abc">: error calling humanize: strconv.ParseFloat: parsing "abc": invalid syntax',
        ),
    ],
)
def test_execution_errors_read_like_go(text: str, want: str) -> None:
    assert _error(text) == want


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("{{ $foo }}", 'undefined variable "$foo"'),
        ("{{ default 1 }}", 'function "default" not defined'),
        ("{{ slice $labels 1 }}", 'function "slice" is not supported by inferwatch'),
        ("{{ if }}", "missing value for if"),
        ("{{ end }}", "unexpected {{end}}"),
        ("{{ if 1 }}", "unexpected EOF"),
        ('{{ "x }}', "unterminated quoted string"),
        ("{{ else }}", "unexpected {{else}}"),
        ("{{ break }}", "{{break}} outside {{range}}"),
        ("{{ ( }}", "unclosed left paren"),
        ("{{ with $x := 1 }}{{ $x }}{{ end }}{{ $x }}", 'undefined variable "$x"'),
        ("{{}}", "missing value for command"),
        ("{{ | 1 }}", 'unexpected "|" in command'),
        ("{{ 1 | 2 }}", "non executable command in pipeline stage 2"),
        ("{{ x", "unclosed action"),
    ],
)
def test_parse_errors(text: str, want: str) -> None:
    with pytest.raises(TemplateParseError) as exc:
        compile_template(text, "__alert_P")
    assert str(exc.value) == f"template: __alert_P:1: {want}"


def test_parse_error_line() -> None:
    with pytest.raises(TemplateParseError, match=r"__alert_P:2: function \"nope\" not defined"):
        compile_template("a\nb {{ nope }}", "__alert_P")


def test_output_and_loops_are_bounded() -> None:
    tight = Limits(output_bytes=100, range_iterations=5, depth=3, queries=2)
    data = DATA
    big = compile_template('{{ printf "%500s" "x" }}', "__alert_P")
    with pytest.raises(TemplateExecError, match="output exceeds 100 bytes"):
        expand(big, data, query, tight)
    loops = compile_template('{{ range query "q" }}{{ range $labels }}.{{ end }}{{ end }}', "t")
    with pytest.raises(TemplateExecError, match="range exceeds 5 iterations"):
        expand(loops, data, query, tight)
    recursive = compile_template(
        '{{ define "r" }}{{ template "r" . }}{{ end }}{{ template "r" . }}', "t"
    )
    with pytest.raises(TemplateExecError, match="maximum template depth"):
        expand(recursive, data, query, tight)
    many = compile_template('{{ $a := query "q" }}{{ $b := query "q" }}{{ $c := query "q" }}', "t")
    with pytest.raises(TemplateExecError, match="more than 2 queries"):
        expand(many, data, query, tight)


def test_query_literals_are_found() -> None:
    t = compile_template('{{ with query "up{job=\\"a\\"}" }}{{ end }}{{ query "sum(x)" }}', "t")
    assert t.query_literals() == ('up{job=\\"a\\"}', "sum(x)")


def test_without_query_function() -> None:
    t = compile_template('{{ query "x" }}', "t")
    with pytest.raises(TemplateExecError, match="query is not available"):
        expand(t, DATA)
