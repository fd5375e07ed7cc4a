"""From configured paths and globs to files: what matches now, which directories to watch.

Globs are expanded on every poll (explicit directories only: a ``**`` would walk a tree each
time). Only regular files are followed; a configured path that is missing is "no data", one that
is a directory or a device is an error shown in its status.
"""

from __future__ import annotations

import glob
import os
import stat
from collections.abc import Iterable

from inferwatch.sources.tail.identity import read_at
from inferwatch.sources.tail.status import StatusBoard

# Plain string paths and os.* on purpose: this runs for every path on every poll, and the
# tailer hands these strings to os.open/os.stat; pathlib objects would only add cost.
# ruff: noqa: PTH100, PTH116, PTH120, PTH207


def expand(patterns: Iterable[str], board: StatusBoard) -> dict[str, os.stat_result]:
    """Configured paths and current glob matches that are regular files, with their ``stat``."""
    patterns = tuple(patterns)
    matched: dict[str, os.stat_result] = {}
    for pattern in patterns:
        magic = glob.has_magic(pattern)
        names = sorted(glob.glob(pattern)) if magic else [pattern]
        if magic:
            if names:
                board.forget(pattern)
            else:
                board.set(pattern, "missing")
        for name in names:
            if name not in matched:
                _stat_into(name, matched, board, explicit=not magic)
    board.keep_only(lambda path: path in matched or path in patterns)
    return matched


def _stat_into(
    name: str, matched: dict[str, os.stat_result], board: StatusBoard, *, explicit: bool
) -> None:
    try:
        st = os.stat(name)
    except FileNotFoundError:
        if explicit:
            board.set(name, "missing")
        return
    except OSError as exc:
        board.error(name, exc)
        return
    if stat.S_ISREG(st.st_mode):
        matched[name] = st
    elif explicit:
        board.error(name, IsADirectoryError(f"not a regular file ({_kind(st)}): {name}"))


def _kind(st: os.stat_result) -> str:
    for test, kind in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device")):  # fmt: skip
        if test(st.st_mode):
            return kind
    return "not a file"


def watch_dirs(patterns: Iterable[str], followed: Iterable[str]) -> frozenset[str]:
    """Directories whose events concern us: where the paths (and symlink targets) live, and the
    fixed part of each glob (where new matches appear)."""
    dirs: set[str] = set()
    for pattern in patterns:
        dirs.add(_watch_root(pattern))
        if not glob.has_magic(pattern):
            dirs.add(os.path.dirname(os.path.realpath(pattern)))
    for path in followed:
        dirs.add(os.path.dirname(os.path.abspath(path)))
        dirs.add(os.path.dirname(os.path.realpath(path)))
    return frozenset(dirs)


def _watch_root(pattern: str) -> str:
    head = os.path.dirname(os.path.abspath(pattern))
    while glob.has_magic(head):
        head = os.path.dirname(head)
    return head


def last_line_start(fd: int, size: int, limit: int) -> int:
    """Offset just after the last newline (where a tailer started "at the end" begins)."""
    pos = size
    while pos > 0 and size - pos <= limit:
        count = min(1 << 16, pos)
        pos -= count
        newline = read_at(fd, count, pos).rfind(b"\n")
        if newline >= 0:
            return pos + newline + 1
    return 0 if pos == 0 else size
