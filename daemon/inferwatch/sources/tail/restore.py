"""Finding each checkpointed file again at start-up, wherever rotation has put it meanwhile.

A record is resumed on a file only when the file still starts with the recorded prefix, is at
least as long as the recorded offset, and holds the recorded anchor just before that offset: then
the bytes we acknowledged are provably still there and reading continues after them. Candidates
are tried in this order:

1. the file with the recorded ``(dev, ino)``, wherever it is now (the live path, or ``.1`` after
   a rename rotation while we were stopped);
2. the other files at the recorded path and its rotated siblings (the copy that copytruncate
   made, or the same file after ``st_dev`` changed, as it can on LVM).

A record whose file is there but fails these checks is expired rather than seeked blindly: a
reused inode or a shorter file must never make us skip the head of a new file. A record whose
``(dev, ino)`` is nowhere to be seen is *missing*, not expired: a rotation may be renaming it in
the instant of our directory listing (``.3`` → ``.4`` while ``.4`` is momentarily absent, or to
a name the listing does not hold yet). The caller lists again and, failing that, keeps it pending
until a sibling scan finds the file (see :class:`~inferwatch.sources.tail.siblings.SiblingTracker`);
reading it from 0 as an unknown rotation instead would deliver its lines a second time.
"""

# Paths are plain strings and I/O goes through os.* on purpose: the tailer works on descriptors
# (fstat, pread) and stats every followed path each poll, where pathlib objects only add cost.
# ruff: noqa: PTH116

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from inferwatch.sources.tail.checkpoint import FileEntry
from inferwatch.sources.tail.identity import (
    ANCHOR_BYTES,
    DirListing,
    FileKey,
    SiblingRule,
    bytes_before,
    close_quietly,
    digest,
    file_key,
    open_file,
)


@dataclass(frozen=True, slots=True)
class Resumed:
    """A checkpoint record found again: the file is open on ``fd``."""

    entry: FileEntry
    path: str
    fd: int
    st: os.stat_result


@dataclass(frozen=True, slots=True)
class Resumption:
    """What :func:`resume_all` made of the records: resumed, missing, and the rest expired."""

    resumed: list[Resumed]
    missing: list[FileEntry]


#: Directory listings tried at start-up for records whose file is not found.
RESUME_LISTINGS = 3


def resume_relisting(
    entries: Sequence[FileEntry],
    matched: Mapping[str, os.stat_result],
    rule: SiblingRule,
    listing: DirListing,
) -> tuple[Resumption, DirListing]:
    """:func:`resume_all`, then again with a fresh listing for the records still missing (a
    rotation may have been renaming files as we listed), at most :data:`RESUME_LISTINGS`
    listings in all. Returns the last listing too.

    A file that is really gone costs only the extra listings; the directory's mtime is not
    asked, as it may not change visibly within one timestamp tick on older kernels."""
    claimed: set[FileKey] = set()
    resumed: list[Resumed] = []
    missing = list(entries)
    for attempt in range(RESUME_LISTINGS):
        if attempt:
            listing = DirListing()
        found = resume_all(missing, matched, rule, listing, claimed)
        resumed += found.resumed
        missing = found.missing
        if not missing:
            break
    return Resumption(resumed, missing), listing


def resume_all(
    entries: Sequence[FileEntry],
    matched: Mapping[str, os.stat_result],
    rule: SiblingRule,
    listing: DirListing,
    claimed: set[FileKey],
) -> Resumption:
    """Open the file of every record that can be resumed (at most one record per file).

    ``claimed`` holds the files already resumed (by an earlier call with another listing); the
    files resumed here are added to it.
    """
    found: dict[int, Resumed] = {}
    refuted: set[FileKey] = set()  # identities opened that hold other content than recorded
    by_key = _index(entries, matched, rule, listing)
    for index, entry in enumerate(entries):
        for path in by_key.get((entry.dev, entry.ino), ()):
            resumed = _try(entry, path, claimed, refuted)
            if resumed is not None:
                found[index] = resumed
                break
    for index, entry in enumerate(entries):
        if index in found or _weak(entry):
            continue  # without a fingerprint, any file would "match"
        for path in _nearby(entry, rule, listing):
            resumed = _try(entry, path, claimed, refuted)
            if resumed is not None:
                found[index] = resumed
                break
    missing = [
        entry
        for index, entry in enumerate(entries)
        if index not in found and (entry.dev, entry.ino) not in refuted and not _weak(entry)
    ]
    return Resumption([found[index] for index in sorted(found)], missing)


def verify(entry: FileEntry, fd: int, size: int) -> bool:
    """Whether the open file holds the record's prefix and, before its offset, its anchor."""
    if size < entry.offset or not entry.prefix.matches(fd, size):
        return False
    return entry.anchor is None or digest(bytes_before(fd, entry.offset)) == entry.anchor


def _weak(entry: FileEntry) -> bool:
    """No content to recognise the file by: empty or all-NUL prefix and anchor."""
    if entry.prefix.evidence:
        return False
    return entry.anchor is None or entry.anchor == digest(bytes(min(ANCHOR_BYTES, entry.offset)))


def _index(
    entries: Sequence[FileEntry],
    matched: Mapping[str, os.stat_result],
    rule: SiblingRule,
    listing: DirListing,
) -> dict[FileKey, list[str]]:
    by_key: dict[FileKey, list[str]] = {}
    for path, st in matched.items():
        by_key.setdefault(file_key(st), []).append(path)
    for entry in entries:
        for path in _nearby(entry, rule, listing):
            if path in matched:
                continue
            try:
                st = os.stat(path)
            except OSError:
                continue
            paths = by_key.setdefault(file_key(st), [])
            if path not in paths:
                paths.append(path)
    return by_key


def _nearby(entry: FileEntry, rule: SiblingRule, listing: DirListing) -> list[str]:
    names = [entry.path] if entry.name in (None, entry.path) else [entry.name, entry.path]
    paths: list[str] = []
    for name in names:
        for path in [name, *reversed(rule.siblings(name, listing))]:
            if path not in paths:
                paths.append(path)
    return paths


def _try(
    entry: FileEntry, path: str, claimed: set[FileKey], refuted: set[FileKey]
) -> Resumed | None:
    """Open ``path`` and resume ``entry`` on it if it verifies. The file there may have been
    renamed since it was listed: only a file with the recorded identity that fails (or that
    another record took) proves the record wrong, which ``refuted`` collects."""
    try:
        fd, st = open_file(path)
    except OSError:
        return None
    key = file_key(st)
    try:
        if key not in claimed and verify(entry, fd, st.st_size):
            claimed.add(key)
            resumed = Resumed(entry, path, fd, st)
            fd = -1
            return resumed
        if key == (entry.dev, entry.ino):
            refuted.add(key)
    except OSError:
        pass
    finally:
        close_quietly(fd)
    return None
