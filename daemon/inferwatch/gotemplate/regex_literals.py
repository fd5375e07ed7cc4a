"""Regex literals in a template, checked when it is parsed.

``match "…"`` and ``reReplaceAll "…"`` compile their pattern only when the template runs, in Go
as here; a pattern RE2 can never compile (a backreference, a lookaround) would then fail every
expansion of the alert. A literal one is checked at load instead, so ``check`` names its place.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from inferwatch import regexp
from inferwatch.gotemplate import ast

REGEX_FUNCTIONS = frozenset({"match", "reReplaceAll"})


def _pipes(nodes: Iterable[ast.Node]) -> Iterator[ast.Pipe]:
    for node in nodes:
        if isinstance(node, ast.Action):
            yield node.pipe
        elif isinstance(node, ast.Branch):
            yield node.pipe
            yield from _pipes(node.body)
            yield from _pipes(node.else_body or ())
        elif isinstance(node, ast.TemplateCall) and node.pipe is not None:
            yield node.pipe


def _commands(pipe: ast.Pipe) -> Iterator[ast.Command]:
    for cmd in pipe.cmds:
        yield cmd
        for arg in cmd.args:
            if isinstance(arg, ast.Pipe):
                yield from _commands(arg)
            elif isinstance(arg, ast.Chain):
                yield from _commands(arg.node)


def bad_regex(nodes: Iterable[ast.Node]) -> tuple[int, str] | None:
    """The first literal pattern RE2 refuses: its position in the text and the reason."""
    for pipe in _pipes(nodes):
        for cmd in _commands(pipe):
            head = cmd.args[0] if cmd.args else None
            if not isinstance(head, ast.Identifier) or head.name not in REGEX_FUNCTIONS:
                continue
            pattern = cmd.args[1] if len(cmd.args) > 1 else None
            if isinstance(pattern, ast.String):
                try:
                    regexp.compile(pattern.value)
                except regexp.RegexError as exc:
                    return pattern.pos, f"error parsing regexp: {exc}: `{pattern.value}`"
    return None
