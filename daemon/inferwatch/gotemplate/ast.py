"""The syntax tree of a Go text/template, as far as Prometheus rule templates use it.

Every node keeps ``pos``, its character offset in the full template text (the 112-character
prelude included), because Go reports execution errors as ``NAME:LINE:COL`` of the node that
failed, and ``str(node)`` gives the node back in Go's own spelling (``humanize "abc"``,
``$labels.job``), which is what Go prints between ``at <…>`` (reference/promql.md §7.4).
Nodes are named tuples (made at import and in parsing at a fraction of a frozen dataclass's
cost); the parser tells them from its plain ``(keyword, offset)`` tuples by exact type.
"""

from __future__ import annotations

from typing import NamedTuple


class Text(NamedTuple):
    pos: int
    text: str


class Field(NamedTuple):
    """``.A.B`` on dot."""

    pos: int
    names: tuple[str, ...]

    def __str__(self) -> str:
        return "".join("." + n for n in self.names)


class Variable(NamedTuple):
    """``$x`` or ``$x.A.B``."""

    pos: int
    name: str
    names: tuple[str, ...] = ()

    def __str__(self) -> str:
        return self.name + "".join("." + n for n in self.names)


class Dot(NamedTuple):
    pos: int

    def __str__(self) -> str:
        return "."


class Nil(NamedTuple):
    pos: int

    def __str__(self) -> str:
        return "nil"


class Bool(NamedTuple):
    pos: int
    value: bool

    def __str__(self) -> str:
        return "true" if self.value else "false"


class Number(NamedTuple):
    """A numeric constant: ``value`` is an int when Go would make it one (no ``.eEpP``)."""

    pos: int
    text: str
    value: int | float

    def __str__(self) -> str:
        return self.text


class String(NamedTuple):
    pos: int
    quoted: str
    value: str

    def __str__(self) -> str:
        return self.quoted


class Identifier(NamedTuple):
    """A function name."""

    pos: int
    name: str

    def __str__(self) -> str:
        return self.name


class Chain(NamedTuple):
    """``(pipeline).A.B``."""

    pos: int
    node: Pipe
    names: tuple[str, ...]

    def __str__(self) -> str:
        return f"({self.node})" + "".join("." + n for n in self.names)


class Command(NamedTuple):
    pos: int
    args: tuple[Arg, ...]

    def __str__(self) -> str:
        return " ".join(f"({a})" if isinstance(a, Pipe) else str(a) for a in self.args)


class Pipe(NamedTuple):
    pos: int
    decl: tuple[str, ...]
    is_assign: bool
    cmds: tuple[Command, ...]

    def __str__(self) -> str:
        head = ""
        if self.decl:
            head = ", ".join(self.decl) + (" = " if self.is_assign else " := ")
        return head + " | ".join(str(c) for c in self.cmds)


class Action(NamedTuple):
    pos: int
    pipe: Pipe

    def __str__(self) -> str:
        return "{{" + str(self.pipe) + "}}"


class Branch(NamedTuple):
    """``if``, ``with`` or ``range``: a pipeline, a body and an optional ``else`` body."""

    pos: int
    kind: str
    pipe: Pipe
    body: tuple[Node, ...]
    else_body: tuple[Node, ...] | None

    def __str__(self) -> str:
        return "{{" + self.kind + " " + str(self.pipe) + "}}"


class TemplateCall(NamedTuple):
    pos: int
    name: str
    pipe: Pipe | None

    def __str__(self) -> str:
        quoted = '"' + self.name + '"'
        if self.pipe is None:
            return "{{template " + quoted + "}}"
        return "{{template " + quoted + " " + str(self.pipe) + "}}"


class LoopControl(NamedTuple):
    """``break`` or ``continue`` inside a ``range``."""

    pos: int
    kind: str

    def __str__(self) -> str:
        return "{{" + self.kind + "}}"


Arg = Field | Variable | Dot | Nil | Bool | Number | String | Identifier | Chain | Pipe
Node = Text | Action | Branch | TemplateCall | LoopControl
