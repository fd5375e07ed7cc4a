"""Rule label and annotation templates: Go text/template as Prometheus 2.42 runs it.

    t = compile_template("{{ $labels.engine }} decode {{ $value | humanize }} t/s", "__alert_X")
    text = expand_for_rule(t, TemplateData(labels, external_labels, external_url, value), env)

Prometheus puts a 112-character prelude in front of the user's text, defining ``$labels``,
``$externalLabels``, ``$externalURL`` and ``$value``; we do the same, so error positions read
as promtool's (``__alert_U:1:115``, reference/promql.md §7.4). A template that does not parse is
a load error (:class:`TemplateParseError`); one that fails while running does not fail the rule:
its text becomes ``<error expanding template: …>``. The parser and interpreter are our own
(``template_*`` modules); nothing in a template reaches Python beyond the function table.

Notification templates (a receiver's ``title``/``message``, Alertmanager's names) use the same
engine through :func:`compile_notification_template` and :func:`expand_notification`: no
prelude (dot is Alertmanager's notification data as plain mappings, ``.Alerts`` an
:class:`~inferwatch.gotemplate.eval.AlertList`), no ``query``, the same bounds.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from inferwatch.gotemplate import ast
from inferwatch.gotemplate.exec import ExecError, Limits, execute
from inferwatch.gotemplate.lex import TemplateSyntaxError
from inferwatch.gotemplate.parse import Parser, Prefix
from inferwatch.gotemplate.reads import may_read_value
from inferwatch.gotemplate.regex_literals import bad_regex
from inferwatch.gotemplate.table import FUNCTIONS, UNSUPPORTED, Env
from inferwatch.gotemplate.values import QueryResult, QuerySample, TemplateData

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
    "compile_notification_template",
    "compile_template",
    "expand",
    "expand_for_rule",
    "expand_notification",
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
    prelude: str = field(default=PRELUDE, repr=False)
    """What runs in front of ``source``: the rule prelude, or nothing for a notification."""
    reads_value: bool = field(default=True, repr=False, compare=False)
    """Whether the expansion may depend on the alert's value (``reads.may_read_value``)."""

    def query_literals(self) -> tuple[str, ...]:
        """The literal strings passed to ``query`` (what a rule's annotations will read)."""
        return tuple(m.group(1) for m in _QUERY_LITERAL.finditer(self.source))


def _check_function(name: str) -> str | None:
    if name in UNSUPPORTED:
        return f'function "{name}" is not supported by inferwatch'
    return None if name in FUNCTIONS else f'function "{name}" not defined'


def compile_template(text: str, name: str) -> Template:
    """Parse ``text`` (without the prelude); raises :class:`TemplateParseError`."""
    return _compile(text, name, PRELUDE)


def compile_notification_template(text: str, name: str) -> Template:
    """Parse a receiver's ``title``/``message`` as written: no prelude, so ``$labels`` and
    ``$value`` are undefined (a parse error) and positions are the user's own; raises
    :class:`TemplateParseError`."""
    return _compile(text, name, "")


@functools.cache
def _prefix_of(prelude: str) -> Prefix | None:
    """The prelude lexed and parsed once, for every template that starts with it."""
    return Prefix.of(prelude, _check_function) if prelude else None


def _compile(text: str, name: str, prelude: str) -> Template:
    if "{{" not in text:
        return Template(name, text, (), {}, static=text, prelude=prelude, reads_value=False)
    full = prelude + text
    try:
        parser = Parser(full, _check_function, _prefix_of(prelude))
        root = parser.parse()
    except TemplateSyntaxError as exc:
        line = full[: exc.pos].count("\n") + 1
        raise TemplateParseError(f"template: {name}:{line}: {exc.message}") from None
    except RecursionError:
        raise TemplateParseError(f"template: {name}: nested too deeply") from None
    found = bad_regex([*root, *(n for body in parser.defines.values() for n in body)])
    if found is not None:
        line = full[: found[0]].count("\n") + 1
        raise TemplateParseError(f"template: {name}:{line}: {found[1]}")
    own = [node for node in root if node.pos >= len(prelude)]
    reads = may_read_value(own)
    return Template(name, text, root, parser.defines, prelude=prelude, reads_value=reads)


def expand(
    template: Template,
    data: TemplateData,
    query: Callable[[str], QueryResult] | None = None,
    limits: Limits = DEFAULT_LIMITS,
) -> str:
    """Expand with ``data`` as dot; raises :class:`TemplateExecError`."""
    return _run(template, data, Env(query, data.external_url), limits)


def expand_notification(
    template: Template, data: Mapping[str, Any], limits: Limits = DEFAULT_LIMITS
) -> str:
    """Expand a notification template with Alertmanager's data (``.Receiver``, ``.Status``,
    ``.Alerts``...) as dot; ``query`` is not available. Raises :class:`TemplateExecError`."""
    return _run(template, data, Env(None, str(data.get("ExternalURL", ""))), limits)


def _run(
    template: Template, dot: TemplateData | Mapping[str, Any], env: Env, limits: Limits
) -> str:
    if template.static is not None:
        return template.static
    # The executor treats its data as an opaque dot; only its annotation names the rule type.
    data = cast(TemplateData, dot)
    try:
        return execute(template.prelude + template.source, template.name, template.root,
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
