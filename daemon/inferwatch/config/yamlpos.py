"""YAML loading that remembers where every value came from.

PyYAML's composer gives nodes with start marks; we build plain Python data from them ourselves
(safe types only) and keep, for every path of keys and list indices, the line and column of the
key (for mappings) or the item, so a validation error can point at ``PATH:LINE:COL``.
Composition goes through :func:`~.yamlguard.compose`: too deep a nesting or too many
aliased values become located problems too, never a crash or a runaway expansion.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml

from inferwatch.config.yamlguard import MAX_BYTES, LimitError, compose
from inferwatch.errors import Problem

Loc = tuple[str | int, ...]


@dataclass(slots=True)
class Located:
    data: Any
    marks: dict[Loc, tuple[int, int]] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)

    def position(self, loc: Loc) -> tuple[int, int]:
        """The nearest recorded position for ``loc`` (walking up to its parents)."""
        probe = tuple(loc)
        while probe:
            if probe in self.marks:
                return self.marks[probe]
            probe = probe[:-1]
        return self.marks.get((), (1, 1))


def format_loc(loc: Loc) -> str:
    """``('engines', 1, 'kind')`` → ``engines[1].kind``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def load_located(text: str, path: str) -> Located:
    """Parse one YAML document; syntax errors and exceeded limits become problems, never
    exceptions."""
    result = Located(data=None)
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_BYTES:
        result.problems.append(too_large(path, size))
        return result
    try:
        node = compose(text)
    except LimitError as exc:
        line, col = _mark(exc.problem_mark)
        result.problems.append(Problem(path, line, col, format_loc(exc.loc), str(exc.problem)))
        return result
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        result.problems.append(Problem(path, line, col, "", f"YAML syntax: {exc.problem}"))
        return result
    except yaml.YAMLError as exc:
        result.problems.append(Problem(path, 1, 1, "", f"YAML syntax: {exc}"))
        return result
    if node is None:
        result.data = {}
        return result
    result.data = _build(node, (), result, path)
    return result


def too_large(path: str, size: int) -> Problem:
    """The problem of a file over :data:`~.yamlguard.MAX_BYTES` (not parsed at all)."""
    return Problem(
        path, 1, 1, "", f"the file is {size} bytes; config files are limited to {MAX_BYTES}"
    )


def _mark(mark: yaml.Mark | None) -> tuple[int, int]:
    return (mark.line + 1, mark.column + 1) if mark else (1, 1)


def _pos(node: yaml.Node) -> tuple[int, int]:
    return node.start_mark.line + 1, node.start_mark.column + 1


def _build(node: yaml.Node, loc: Loc, out: Located, path: str) -> Any:
    out.marks.setdefault(loc, _pos(node))
    if isinstance(node, yaml.MappingNode):
        mapping: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            found = len(out.problems)
            key = (
                _scalar(key_node, loc, out, path) if isinstance(key_node, yaml.ScalarNode) else None
            )
            if len(out.problems) > found:  # the key itself was refused
                continue
            if not isinstance(key, str | int | float | bool) or key is None:
                line, col = _pos(key_node)
                out.problems.append(
                    Problem(path, line, col, format_loc(loc), "keys must be scalars")
                )
                continue
            child = (*loc, str(key))
            if key in mapping:
                line, col = _pos(key_node)
                out.problems.append(
                    Problem(path, line, col, format_loc(child), f"duplicate key {key!r}")
                )
            out.marks[child] = _pos(key_node)
            mapping[key] = _build(value_node, child, out, path)
        return mapping
    if isinstance(node, yaml.SequenceNode):
        return [_build(item, (*loc, i), out, path) for i, item in enumerate(node.value)]
    return _scalar(node, loc, out, path)


def _scalar(node: yaml.Node, loc: Loc, out: Located, path: str) -> Any:
    """The Python value of a scalar; one the safe constructor refuses (a ``<<`` merge key, a
    bad ``!!int``) is a problem at its place and builds as None."""
    # SafeLoader's constructor alone (a whole loader, with its reader and parser, costs ten
    # times as much to make), fresh for each scalar: a refused one leaves no state behind
    constructor = yaml.constructor.SafeConstructor()
    try:
        return constructor.construct_object(node, deep=True)
    except Exception as exc:  # PyYAML's constructors raise ValueError, IndexError, ...
        line, col = _pos(node)
        problem = getattr(exc, "problem", None) or f"{node.tag}: {exc}"
        out.problems.append(Problem(path, line, col, format_loc(loc), f"YAML: {problem}"))
        return None
