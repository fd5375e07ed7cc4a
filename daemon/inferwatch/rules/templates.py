"""Rule label and annotation templates: Go text/template as Prometheus 2.42 runs it.

    t = compile_template("{{ $labels.engine }} decode {{ $value | humanize }} t/s", "__alert_X")
    text = expand_for_rule(t, TemplateData(labels, external_labels, external_url, value), env)

Prometheus puts a 112-character prelude in front of the user's text, defining ``$labels``,
``$externalLabels``, ``$externalURL`` and ``$value``; we do the same, so error positions read
as promtool's (``__alert_U:1:115``, reference/promql.md §7.4). A template that does not parse is
a load error (:class:`TemplateParseError`); one that fails while running does not fail the rule:
its text becomes ``<error expanding template: …>``. The parser and interpreter are our own
(``template_*`` modules); nothing in a template reaches Python beyond the function table.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from inferwatch.rules import template_ast as ast
from inferwatch.rules.template_exec import ExecError, Limits, execute
from inferwatch.rules.template_lex import TemplateSyntaxError
from inferwatch.rules.template_parse import Parser
from inferwatch.rules.template_table import FUNCTIONS, UNSUPPORTED, Env
from inferwatch.rules.template_values import QueryResult, QuerySample, TemplateData

__all__ = [
    "PRELUDE",
    "Env",
    "Limits",
    "QueryResult",
    "QuerySample",
    "Template",
    "TemplateData",
    "TemplateError",
    "TemplateExecError",
    "TemplateParseError",
    "compile_template",
    "expand",
    "expand_for_rule",
]

PRELUDE = (
    "{{$labels := .Labels}}{{$externalLabels := .ExternalLabels}}"
    "{{$externalURL := .ExternalURL}}{{$value := .Value}}"
)
DEFAULT_LIMITS = Limits()
_QUERY_LITERAL = re.compile(r'\bquery\s+"((?:[^"\\\n]|\\.)*)"')


class TemplateError(Exception):
    """Any template failure; the message is Go's."""


class TemplateParseError(TemplateError):
    """The template does not parse (a load-time error for the rule)."""


class TemplateExecError(TemplateError):
    """The template failed while expanding."""


@dataclass(frozen=True, slots=True)
class Template:
    """A parsed template; ``static`` is set when the text has no actions at all."""

    name: str
    source: str
    root: tuple[ast.Node, ...] = field(repr=False)
    defines: dict[str, tuple[ast.Node, ...]] = field(repr=False, compare=False)
    static: str | None = None

    def query_literals(self) -> tuple[str, ...]:
        """The literal strings passed to ``query`` (what a rule's annotations will read)."""
        return tuple(m.group(1) for m in _QUERY_LITERAL.finditer(self.source))


def _check_function(name: str) -> str | None:
    if name in UNSUPPORTED:
        return f'function "{name}" is not supported by inferwatch'
    return None if name in FUNCTIONS else f'function "{name}" not defined'


def compile_template(text: str, name: str) -> Template:
    """Parse ``text`` (without the prelude); raises :class:`TemplateParseError`."""
    if "{{" not in text:
        return Template(name, text, (), {}, static=text)
    full = PRELUDE + text
    try:
        parser = Parser(full, _check_function)
        root = parser.parse()
    except TemplateSyntaxError as exc:
        line = full[: exc.pos].count("\n") + 1
        raise TemplateParseError(f"template: {name}:{line}: {exc.message}") from None
    except RecursionError:
        raise TemplateParseError(f"template: {name}: nested too deeply") from None
    return Template(name, text, root, parser.defines)


def expand(
    template: Template,
    data: TemplateData,
    query: Callable[[str], QueryResult] | None = None,
    limits: Limits = DEFAULT_LIMITS,
) -> str:
    """Expand with ``data`` as dot; raises :class:`TemplateExecError`."""
    if template.static is not None:
        return template.static
    env = Env(query, data.external_url)
    try:
        return execute(PRELUDE + template.source, template.name, template.root,
                       template.defines, data, env, limits)  # fmt: skip
    except ExecError as exc:
        raise TemplateExecError(str(exc)) from None
    except RecursionError:
        raise TemplateExecError(f"template: {template.name}: nested too deeply") from None


def expand_for_rule(
    template: Template,
    data: TemplateData,
    query: Callable[[str], QueryResult] | None = None,
    limits: Limits = DEFAULT_LIMITS,
) -> str:
    """What a rule shows: the expansion, or Prometheus's ``<error expanding template: …>``."""
    try:
        return expand(template, data, query, limits)
    except TemplateExecError as exc:
        return f"<error expanding template: error executing template {template.name}: {exc}>"
