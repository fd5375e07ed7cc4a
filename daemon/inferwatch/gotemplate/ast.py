"""The syntax tree of a Go text/template, as far as Prometheus rule templates use it.

Every node keeps ``pos``, its character offset in the full template text (the 112-character
prelude included), because Go reports execution errors as ``NAME:LINE:COL`` of the node that
failed, and ``str(node)`` gives the node back in Go's own spelling (``humanize "abc"``,
``$labels.job``), which is what Go prints between ``at <…>`` (reference/promql.md §7.4).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Text:
    pos: int
    text: str


@dataclass(frozen=True, slots=True)
class Field:
    """``.A.B`` on dot."""

    pos: int
    names: tuple[str, ...]

    def __str__(self) -> str:
        return "".join("." + n for n in self.names)


@dataclass(frozen=True, slots=True)
class Variable:
    """``$x`` or ``$x.A.B``."""

    pos: int
    name: str
    names: tuple[str, ...] = ()

    def __str__(self) -> str:
        return self.name + "".join("." + n for n in self.names)


@dataclass(frozen=True, slots=True)
class Dot:
    pos: int

    def __str__(self) -> str:
        return "."


@dataclass(frozen=True, slots=True)
class Nil:
    pos: int

    def __str__(self) -> str:
        return "nil"


@dataclass(frozen=True, slots=True)
class Bool:
    pos: int
    value: bool

    def __str__(self) -> str:
        return "true" if self.value else "false"


@dataclass(frozen=True, slots=True)
class Number:
    """A numeric constant: ``value`` is an int when Go would make it one (no ``.eEpP``)."""

    pos: int
    text: str
    value: int | float

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True, slots=True)
class String:
    pos: int
    quoted: str
    value: str

    def __str__(self) -> str:
        return self.quoted


@dataclass(frozen=True, slots=True)
class Identifier:
    """A function name."""

    pos: int
    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True, slots=True)
class Chain:
    """``(pipeline).A.B``."""

    pos: int
    node: Pipe
    names: tuple[str, ...]

    def __str__(self) -> str:
        return f"({self.node})" + "".join("." + n for n in self.names)


@dataclass(frozen=True, slots=True)
class Command:
    pos: int
    args: tuple[Arg, ...]

    def __str__(self) -> str:
        return " ".join(f"({a})" if isinstance(a, Pipe) else str(a) for a in self.args)


@dataclass(frozen=True, slots=True)
class Pipe:
    pos: int
    decl: tuple[str, ...]
    is_assign: bool
    cmds: tuple[Command, ...]

    def __str__(self) -> str:
        head = ""
        if self.decl:
            head = ", ".join(self.decl) + (" = " if self.is_assign else " := ")
        return head + " | ".join(str(c) for c in self.cmds)


@dataclass(frozen=True, slots=True)
class Action:
    pos: int
    pipe: Pipe

    def __str__(self) -> str:
        return "{{" + str(self.pipe) + "}}"


@dataclass(frozen=True, slots=True)
class Branch:
    """``if``, ``with`` or ``range``: a pipeline, a body and an optional ``else`` body."""

    pos: int
    kind: str
    pipe: Pipe
    body: tuple[Node, ...]
    else_body: tuple[Node, ...] | None

    def __str__(self) -> str:
        return "{{" + self.kind + " " + str(self.pipe) + "}}"


@dataclass(frozen=True, slots=True)
class TemplateCall:
    pos: int
    name: str
    pipe: Pipe | None

    def __str__(self) -> str:
        quoted = '"' + self.name + '"'
        if self.pipe is None:
            return "{{template " + quoted + "}}"
        return "{{template " + quoted + " " + str(self.pipe) + "}}"


@dataclass(frozen=True, slots=True)
class LoopControl:
    """``break`` or ``continue`` inside a ``range``."""

    pos: int
    kind: str

    def __str__(self) -> str:
        return "{{" + self.kind + "}}"


Arg = Field | Variable | Dot | Nil | Bool | Number | String | Identifier | Chain | Pipe
Node = Text | Action | Branch | TemplateCall | LoopControl
