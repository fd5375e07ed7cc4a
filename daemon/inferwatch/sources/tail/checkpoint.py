"""The tailer's checkpoint: a JSON-able record of what the consumer has acknowledged.

The tailer never writes it anywhere. The caller asks for it after acknowledging the lines it has
turned into state, and stores both in one transaction; that is what makes a kill -9 at any instant
neither lose nor double-count a line. A record per file holds its identity (``dev``, ``ino``,
prefix), the offset just after the last acknowledged complete line, the line number there, and the
anchor (hash of the bytes before that offset) that proves at restore that those bytes are still
there. ``seen`` lists rotated siblings already dealt with (read to the end, or history that was
never to be read), so a restart neither re-reads them nor mistakes them for new rotations.

A malformed checkpoint raises :class:`CheckpointError`: the caller moves its store aside and
reports it; silently restarting from offset 0 would re-deliver whole files.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from inferwatch.sources.tail.identity import Prefix

CHECKPOINT_VERSION = 1


class CheckpointError(ValueError):
    """The checkpoint given to a tailer is not one it wrote."""


@dataclass(frozen=True, slots=True)
class FileEntry:
    """Resume point of one file identity."""

    path: str
    name: str | None
    dev: int
    ino: int
    prefix: Prefix
    offset: int
    line_no: int
    anchor: str | None

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "name": self.name,
            "dev": self.dev,
            "ino": self.ino,
            "prefix_len": self.prefix.length,
            "prefix": self.prefix.digest,
            "offset": self.offset,
            "line_no": self.line_no,
            "anchor": self.anchor,
        }

    @classmethod
    def from_json(cls, data: object) -> FileEntry:
        record = _mapping(data, "files[]")
        return cls(
            path=_str(record, "path"),
            name=_opt_str(record, "name"),
            dev=_int(record, "dev"),
            ino=_int(record, "ino"),
            prefix=Prefix(_int(record, "prefix_len"), _str(record, "prefix")),
            offset=_int(record, "offset"),
            line_no=_int(record, "line_no"),
            anchor=_opt_str(record, "anchor"),
        )


@dataclass(frozen=True, slots=True)
class SeenEntry:
    """A rotated sibling of ``slot`` that must not be read (again).

    ``read`` tells a file we read to its end (``size``, ``line_no``: where we stopped; if it
    grows, a late writer is still at it and we read on) from history or a copy we decided never
    to read (``size`` as last seen, line 0). ``mtime_ns`` lets a scan recognise an unchanged file
    without opening it.
    """

    slot: str
    dev: int
    ino: int
    prefix: Prefix
    size: int
    mtime_ns: int
    line_no: int
    read: bool

    def to_json(self) -> dict[str, Any]:
        return {
            "slot": self.slot,
            "dev": self.dev,
            "ino": self.ino,
            "prefix_len": self.prefix.length,
            "prefix": self.prefix.digest,
            "size": self.size,
            "mtime_ns": self.mtime_ns,
            "line_no": self.line_no,
            "read": self.read,
        }

    @classmethod
    def from_json(cls, data: object) -> SeenEntry:
        record = _mapping(data, "seen[]")
        return cls(
            slot=_str(record, "slot"),
            dev=_int(record, "dev"),
            ino=_int(record, "ino"),
            prefix=Prefix(_int(record, "prefix_len"), _str(record, "prefix")),
            size=_int(record, "size"),
            mtime_ns=_int(record, "mtime_ns"),
            line_no=_int(record, "line_no"),
            read=_bool(record, "read"),
        )


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """Everything a tailer needs to resume."""

    files: tuple[FileEntry, ...] = ()
    seen: tuple[SeenEntry, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "version": CHECKPOINT_VERSION,
            "files": [entry.to_json() for entry in self.files],
            "seen": [entry.to_json() for entry in self.seen],
        }

    @classmethod
    def from_json(cls, data: object) -> Checkpoint:
        record = _mapping(data, "checkpoint")
        if record.get("version") != CHECKPOINT_VERSION:
            raise CheckpointError(f"unsupported checkpoint version {record.get('version')!r}")
        return cls(
            files=tuple(FileEntry.from_json(item) for item in _list(record, "files")),
            seen=tuple(SeenEntry.from_json(item) for item in _list(record, "seen")),
        )


def _mapping(data: object, where: str) -> Mapping[str, object]:
    if not isinstance(data, Mapping):
        raise CheckpointError(f"{where}: expected an object, got {type(data).__name__}")
    return data


def _list(record: Mapping[str, object], key: str) -> list[object]:
    value = record.get(key)
    if not isinstance(value, list):
        raise CheckpointError(f"{key}: expected a list")
    return value


def _int(record: Mapping[str, object], key: str) -> int:
    value = record.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise CheckpointError(f"{key}: expected a non-negative integer, got {value!r}")
    return value


def _bool(record: Mapping[str, object], key: str) -> bool:
    value = record.get(key)
    if not isinstance(value, bool):
        raise CheckpointError(f"{key}: expected true or false, got {value!r}")
    return value


def _str(record: Mapping[str, object], key: str) -> str:
    value = record.get(key)
    if not isinstance(value, str):
        raise CheckpointError(f"{key}: expected a string, got {value!r}")
    return value


def _opt_str(record: Mapping[str, object], key: str) -> str | None:
    if record.get(key) is None:
        return None
    return _str(record, key)
