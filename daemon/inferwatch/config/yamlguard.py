"""A YAML composer with limits, so a hostile or broken config file cannot exhaust the daemon.

PyYAML composes nodes recursively (10,000 nested brackets exhaust Python's stack) and shares
an anchored node between all its aliases, so a few hundred bytes of nested aliases stand for
billions of values once built into Python data. :class:`GuardedLoader` refuses, while it
composes and before anything is expanded:

- more than :data:`MAX_NODES` keys and values in all (a long flat list parses slowly too);
- nesting deeper than :data:`MAX_DEPTH` collections, counting what an alias brings in;
- aliases that together stand for more than :data:`MAX_ALIAS_NODES` nodes (an alias of a
  scalar costs one node; an alias of a collection costs every node under it, nested aliases
  included);
- an alias inside the collection it names (a recursive structure).

Each refusal is a :class:`LimitError` carrying the mark and the key path where it happened.
The file size limit (:data:`MAX_BYTES`) is checked by the caller before parsing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

import yaml
from yaml.events import AliasEvent, MappingStartEvent, SequenceStartEvent

MAX_BYTES = 1024 * 1024
"""The largest config file read (1 MiB); real ones are a few kilobytes."""
MAX_DEPTH = 64
"""The deepest nesting of mappings and lists accepted."""
MAX_NODES = 100_000
"""How many keys, values and list items a file may hold (a real config has a few hundred)."""
MAX_ALIAS_NODES = 5000
"""How many nodes all aliases of a file may stand for together."""

Loc = tuple[str | int, ...]


class LimitError(yaml.MarkedYAMLError):
    """A limit was exceeded at ``problem_mark``, at key path :attr:`loc`."""

    def __init__(self, message: str, mark: yaml.Mark | None, loc: Loc) -> None:
        super().__init__(problem=message, problem_mark=mark)
        self.loc = loc


class _Guard(yaml.composer.Composer):
    """PyYAML's composer, enforcing the depth and alias limits; the events come from the
    parser it is mixed with."""

    if TYPE_CHECKING:  # the parser's side, as both parsers have it

        def check_event(self, *choices: Any) -> bool: ...
        def peek_event(self) -> Any: ...
        def get_event(self) -> Any: ...

    def _guard_init(self) -> None:
        self._loc: list[str | int] = []
        self._depth = 0
        self._sizes: dict[int, tuple[int, int]] = {}  # id(node) -> (nodes, height)
        self._expanded = 0
        self._nodes = 0

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node:
        part = _part(parent, index)
        if part is not None:
            self._loc.append(part)
        try:
            if self.check_event(AliasEvent):
                return self._alias(parent, index)
            self._nodes += 1
            if self._nodes > MAX_NODES:
                raise self._error(
                    f"more than {MAX_NODES} keys and values in the file",
                    self._peek().start_mark,
                )
            if self.check_event(MappingStartEvent, SequenceStartEvent):
                return self._collection(parent, index)
            return self._compose(parent, index)
        finally:
            if part is not None:
                self._loc.pop()

    def _compose(self, parent: yaml.Node | None, index: Any) -> yaml.Node:
        """PyYAML's own composition of the next node (never None: an event is pending)."""
        return cast(yaml.Node, super().compose_node(parent, index))

    def _peek(self) -> Any:
        return self.peek_event()

    def _collection(self, parent: yaml.Node | None, index: Any) -> yaml.Node:
        if self._depth >= MAX_DEPTH:
            raise self._error(f"nested deeper than {MAX_DEPTH} levels", self._peek().start_mark)
        self._depth += 1
        try:
            return self._compose(parent, index)
        finally:
            self._depth -= 1

    def _alias(self, parent: yaml.Node | None, index: Any) -> yaml.Node:
        event = self._peek()
        target = self.anchors.get(event.anchor)
        if target is None:  # undefined: PyYAML's own error
            return self._compose(parent, index)
        if isinstance(target, yaml.CollectionNode) and target.end_mark is None:
            raise self._error(f"alias *{event.anchor} refers to itself", event.start_mark)
        nodes, height = self._size(target)
        if self._depth + height > MAX_DEPTH:
            raise self._error(
                f"alias *{event.anchor} nests deeper than {MAX_DEPTH} levels", event.start_mark
            )
        self._expanded += nodes
        if self._expanded > MAX_ALIAS_NODES:
            raise self._error(
                f"aliases expand to more than {MAX_ALIAS_NODES} values; write them out or "
                "use fewer aliases",
                event.start_mark,
            )
        self.get_event()
        return target

    def _size(self, node: yaml.Node) -> tuple[int, int]:
        """(nodes, collection height) of ``node``, shared nodes counted at every use."""
        known = self._sizes.get(id(node))
        if known is not None:
            return known
        if isinstance(node, yaml.MappingNode):
            children = [child for pair in node.value for child in pair]
        elif isinstance(node, yaml.SequenceNode):
            children = list(node.value)
        else:
            self._sizes[id(node)] = (1, 0)
            return 1, 0
        nodes, height = 1, 0
        for child in children:
            n, h = self._size(child)
            nodes, height = nodes + n, max(height, h)
        self._sizes[id(node)] = (nodes, height + 1)
        return nodes, height + 1

    def _error(self, message: str, mark: yaml.Mark | None) -> LimitError:
        return LimitError(message, mark, tuple(self._loc))


class GuardedLoader(_Guard, yaml.SafeLoader):
    """``yaml.SafeLoader`` whose composer enforces the depth and alias limits."""

    def __init__(self, stream: str) -> None:
        yaml.SafeLoader.__init__(self, stream)
        self._guard_init()


FastGuardedLoader: type[yaml.CSafeLoader] | None = None
"""libyaml's parser (C: a rules file's events in a fraction of the pure-Python parser's time)
under the same guarded composer and ``SafeLoader``'s constructor; None without libyaml. Its
error messages are libyaml's: for a file it rejects, parse again with :class:`GuardedLoader`
for PyYAML's words and marks."""

if yaml.__with_libyaml__:

    class _FastGuardedLoader(_Guard, yaml.CSafeLoader):
        def __init__(self, stream: str) -> None:
            yaml.CSafeLoader.__init__(self, stream)
            yaml.composer.Composer.__init__(self)  # its composition, not libyaml's
            self._guard_init()

    FastGuardedLoader = _FastGuardedLoader


def compose(text: str) -> yaml.Node | None:
    """The document's node tree: through libyaml when it is there, and for a text libyaml
    rejects through PyYAML's parser, whose errors callers report (a limit the composer finds is
    the same under either parser: raised at once, a hostile file is not parsed twice)."""
    if FastGuardedLoader is not None:
        try:
            return yaml.compose(text, Loader=FastGuardedLoader)
        except LimitError:
            raise
        except yaml.YAMLError:
            pass
    return yaml.compose(text, Loader=GuardedLoader)


def _part(parent: yaml.Node | None, index: Any) -> str | int | None:
    """The key-path step of a child: its list index, or its mapping key when that is a scalar
    (None for a mapping key itself and for the root)."""
    if isinstance(index, int) and isinstance(parent, yaml.SequenceNode):
        return index
    if isinstance(index, yaml.ScalarNode):
        return str(index.value)
    return None
