"""The PromQL a rule template can send to ``query``, when its text says so before it runs.

A call's query is known in two shapes: a literal (``query "up"``), or ``printf`` with a literal
format piped straight in (``printf "x{job=%q}" $labels.job | query``). Go's ``%q`` writes a
quoted string, which PromQL reads as one string token whatever it holds, so each ``%q`` filled
with a label value (``$labels.x``, ``$externalLabels.x``) or a literal is a string of unknown
text; a ``%s`` (or ``%v``) filled with a variable that is declared once, from such a ``printf``
(``$gpu := printf "pci_bus_id=%q" $labels.pci_bus_id``), is that variable's own shape, written
in. :func:`sent_queries` gives each query's shape with ``"q"`` for every unknown string:
whatever the values, the query reads only metrics that shape reads (or fails to parse, and
reads nothing).

Anything else makes the template's queries unknown (None): ``query`` called in another way or
named as an argument, another verb, a flag, width or precision (``%05q`` pads with zeros outside
the quotes), an explicit argument index, other arguments, or ``$labels`` and ``$externalLabels``
bound to anything but the prelude's ``.Labels`` and ``.ExternalLabels``. Defined templates
(``{{define}}``) count wherever they are, called or not.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence

from inferwatch.gotemplate.ast import (
    Action,
    Arg,
    Branch,
    Chain,
    Command,
    Field,
    Identifier,
    Node,
    Pipe,
    String,
    TemplateCall,
    Variable,
)
from inferwatch.gotemplate.templates import Template

PLACEHOLDER = '"q"'
"""What stands for each ``%q`` verb in a query's shape."""

_VERB = re.compile(r"%(?:(%)|([A-Za-z]))")
_BOUND = {"$labels": ("Labels",), "$externalLabels": ("ExternalLabels",)}


class _Unknown(Exception):
    """A query this analysis cannot know."""


def sent_queries(template: Template) -> tuple[str, ...] | None:
    """Every query the template can send, as literal text or a format's shape; None when a
    call's query cannot be known from the text."""
    if "query" not in template.source:
        return ()
    bodies = [template.root, *template.defines.values()]
    pipes = [pipe for body in bodies for pipe in _pipes(body)]
    try:
        fragments = _fragments(pipes)
        found = [text for pipe in pipes for text in _queries(pipe, fragments)]
    except _Unknown:
        return None
    return tuple(dict.fromkeys(found))


def format_shape(fmt: str, args: Sequence[Arg], fragments: dict[str, str]) -> str:
    """``fmt`` filled with ``args`` as Go's printf fills it, each string of unknown text as
    :data:`PLACEHOLDER` and each known variable as its shape; raises :class:`_Unknown`."""
    out: list[str] = []
    pos, used = 0, 0
    while (at := fmt.find("%", pos)) >= 0:
        m = _VERB.match(fmt, at)
        if m is None:
            raise _Unknown
        out.append(fmt[pos:at])
        pos = m.end()
        if m.group(1):
            out.append("%")
            continue
        if used >= len(args):
            raise _Unknown
        out.append(_filled(m.group(2), args[used], fragments))
        used += 1
    if used != len(args):
        raise _Unknown
    out.append(fmt[pos:])
    return "".join(out)


def _filled(verb: str, arg: Arg, fragments: dict[str, str]) -> str:
    if verb == "q" and _label_value(arg):
        return PLACEHOLDER
    if verb in "sv" and isinstance(arg, Variable) and not arg.names and arg.name in fragments:
        return fragments[arg.name]
    raise _Unknown


def _label_value(arg: Arg) -> bool:
    """A string for sure: a literal, or one label of ``$labels`` or ``$externalLabels``."""
    if isinstance(arg, String):
        return True
    return isinstance(arg, Variable) and arg.name in _BOUND and len(arg.names) == 1


def _pipes(nodes: Iterable[Node]) -> Iterator[Pipe]:
    """Every pipeline in ``nodes``, nested ones (parenthesized, chained) included."""
    for node in nodes:
        pipe = node.pipe if isinstance(node, Action | Branch | TemplateCall) else None
        if pipe is not None:
            yield from _within(pipe)
        if isinstance(node, Branch):
            yield from _pipes(node.body)
            if node.else_body is not None:
                yield from _pipes(node.else_body)


def _within(pipe: Pipe) -> Iterator[Pipe]:
    yield pipe
    for cmd in pipe.cmds:
        for arg in cmd.args:
            if isinstance(arg, Chain):
                yield from _within(arg.node)
            elif isinstance(arg, Pipe):
                yield from _within(arg)


def _fragments(pipes: list[Pipe]) -> dict[str, str]:
    """The variables declared once, never assigned, from a printf whose shape is known (in
    declaration order, so one may write in an earlier one)."""
    declared = Counter(name for pipe in pipes for name in pipe.decl)
    out: dict[str, str] = {}
    for pipe in pipes:
        if not pipe.decl:
            continue
        for name in pipe.decl:
            if name in _BOUND and not _binds_prelude(pipe, _BOUND[name]):
                raise _Unknown  # a label value could be anything from here on
        if len(pipe.decl) != 1 or pipe.is_assign or declared[pipe.decl[0]] != 1:
            continue
        shape = _printf(pipe.cmds[0], out) if len(pipe.cmds) == 1 else None
        if shape is not None:
            out[pipe.decl[0]] = shape
    return out


def _binds_prelude(pipe: Pipe, names: tuple[str, ...]) -> bool:
    """``$labels := .Labels`` (or ``$externalLabels := .ExternalLabels``), as the prelude."""
    if len(pipe.decl) != 1 or pipe.is_assign or len(pipe.cmds) != 1:
        return False
    args = pipe.cmds[0].args
    return len(args) == 1 and isinstance(args[0], Field) and args[0].names == names


def _printf(cmd: Command, fragments: dict[str, str]) -> str | None:
    """The shape of ``printf <literal format> args…``; None for any other command or a
    format this analysis cannot fill."""
    if len(cmd.args) < 2:
        return None
    head, fmt, *args = cmd.args
    if not (isinstance(head, Identifier) and head.name == "printf" and isinstance(fmt, String)):
        return None
    try:
        return format_shape(fmt.value, args, fragments)
    except _Unknown:
        return None


def _queries(pipe: Pipe, fragments: dict[str, str]) -> Iterator[str]:
    """The query each ``query`` command of the pipeline sends."""
    for i, cmd in enumerate(pipe.cmds):
        head = cmd.args[0] if cmd.args else None
        if isinstance(head, Identifier) and head.name == "query":
            yield _sent(cmd, pipe.cmds[i - 1] if i else None, fragments)
        if any(isinstance(a, Identifier) and a.name == "query" for a in cmd.args[1:]):
            raise _Unknown  # passed along as a value, or called with nothing: not a known shape


def _sent(cmd: Command, before: Command | None, fragments: dict[str, str]) -> str:
    """A ``query`` command's query: its literal argument, or the printf piped into it."""
    if before is None:
        if len(cmd.args) == 2 and isinstance(cmd.args[1], String):
            return cmd.args[1].value
        raise _Unknown
    shape = _printf(before, fragments) if len(cmd.args) == 1 else None
    if shape is None:
        raise _Unknown
    return shape
