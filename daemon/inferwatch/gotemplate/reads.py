"""Whether a rule template can read the alert's value: what its expansion depends on.

A rule template's dot is the alert's data (``.Labels``, ``.ExternalLabels``, ``.ExternalURL``,
``.Value``), and the prelude binds ``$value`` to ``.Value``. A template whose text never reaches
the value gives the same text for every value of the same labels (and the same answers to its
queries): the rule evaluator keeps such an expansion while only the value moves.

The test is from the syntax tree and errs towards "reads": ``$value`` or ``$`` anywhere, ``.Value``
or a bare dot where the dot is the alert's data (the template's top level, an ``if`` body, and the
``else`` of a ``with`` or ``range``; their bodies rebind the dot), and any ``template`` call (the
called body gets whatever it is passed) all count as reading it.
"""

from __future__ import annotations

from collections.abc import Iterable

from inferwatch.gotemplate.ast import (
    Action,
    Arg,
    Branch,
    Chain,
    Dot,
    Field,
    Node,
    Pipe,
    TemplateCall,
    Variable,
)

_NOT_THE_VALUE = frozenset({"Labels", "ExternalLabels", "ExternalURL"})
_ROOT_VARIABLES = frozenset({"$value", "$"})


def may_read_value(nodes: Iterable[Node]) -> bool:
    """Whether executing ``nodes`` (a rule template after its prelude, with the alert's data
    as dot) may read the alert's value."""
    return _nodes(nodes, at_root=True)


def _nodes(nodes: Iterable[Node], *, at_root: bool) -> bool:
    for node in nodes:
        if isinstance(node, TemplateCall):
            return True
        if isinstance(node, Action) and _pipe(node.pipe, at_root):
            return True
        if isinstance(node, Branch):
            if _pipe(node.pipe, at_root):
                return True
            if _nodes(node.body, at_root=at_root and node.kind == "if"):
                return True
            if node.else_body is not None and _nodes(node.else_body, at_root=at_root):
                return True
    return False


def _pipe(pipe: Pipe, at_root: bool) -> bool:
    return any(_arg(arg, at_root) for cmd in pipe.cmds for arg in cmd.args)


def _arg(arg: Arg, at_root: bool) -> bool:
    if isinstance(arg, Variable):
        return arg.name in _ROOT_VARIABLES
    if isinstance(arg, Field):
        return at_root and arg.names[0] not in _NOT_THE_VALUE
    if isinstance(arg, Dot):
        return at_root
    if isinstance(arg, Chain):
        return _pipe(arg.node, at_root)
    if isinstance(arg, Pipe):
        return _pipe(arg, at_root)
    return False
