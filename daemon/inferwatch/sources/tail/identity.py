"""How the tailer tells files apart: ``(st_dev, st_ino)``, a prefix fingerprint and an anchor.

- While a file is open, ``(dev, ino)`` is exact: the kernel cannot reuse an inode we hold open.
- Across restarts, inode numbers are reused at once (ext4 hands a deleted file's inode to the next
  file created), so an inode is only a hint: the **prefix** (a hash of the first
  ``min(size, 1024)`` bytes, grown as the file grows) says whether a file still starts with the
  bytes we saw, and the **anchor** (the bytes just before an offset, at most 64) says whether the
  bytes we already consumed are still there. A truncated, replaced or regrown file fails the
  anchor even when its size looks fine.
- Rotated siblings (``app.log.1``, ``app.log-20240101``) are found by name next to the file, from
  a sorted directory listing taken again only when the directory changed.
"""

# Paths are plain strings and I/O goes through os.* on purpose: the tailer works on descriptors
# (fstat, pread) and stats every followed path each poll, where pathlib objects only add cost.
# ruff: noqa: PTH116, PTH118, PTH208

from __future__ import annotations

import bisect
import contextlib
import glob
import hashlib
import os
import time
from dataclasses import dataclass
from fnmatch import fnmatchcase

ANCHOR_BYTES = 64
PREFIX_BYTES = 1024

FileKey = tuple[int, int]


def digest(data: bytes) -> str:
    """Short content hash used for prefixes and anchors (stored in checkpoints as hex)."""
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def read_at(fd: int, size: int, offset: int) -> bytes:
    """Up to ``size`` bytes at ``offset`` (fewer only at end of file)."""
    data = os.pread(fd, size, offset)
    if len(data) == size or not data:
        return data
    parts = [data]
    got = len(data)
    while got < size:
        more = os.pread(fd, size - got, offset + got)
        if not more:
            break
        parts.append(more)
        got += len(more)
    return b"".join(parts)


def bytes_before(fd: int, offset: int) -> bytes:
    """The anchor bytes: at most :data:`ANCHOR_BYTES` ending at ``offset``."""
    count = min(ANCHOR_BYTES, offset)
    return read_at(fd, count, offset - count) if count else b""


@dataclass(frozen=True, slots=True)
class Prefix:
    """Hash of a file's first ``length`` bytes."""

    length: int
    digest: str

    @classmethod
    def of(cls, fd: int, size: int) -> Prefix:
        data = read_at(fd, min(size, PREFIX_BYTES), 0)
        return cls(len(data), digest(data))

    @property
    def evidence(self) -> bool:
        """Whether it can tell files apart: not empty, and not all NUL bytes (the hole that a
        non-O_APPEND writer leaves after a truncation looks the same in every such file)."""
        return self.length > 0 and self.digest != digest(bytes(self.length))

    def matches(self, fd: int, size: int) -> bool:
        """Whether the open file starts with the bytes this prefix was taken from."""
        if size < self.length:
            return False
        return digest(read_at(fd, self.length, 0)) == self.digest


EMPTY_PREFIX = Prefix(0, digest(b""))


def file_key(st: os.stat_result) -> FileKey:
    return (st.st_dev, st.st_ino)


def open_file(path: str) -> tuple[int, os.stat_result]:
    """Open a regular file for reading; ``O_NONBLOCK`` so a FIFO put in its place cannot hang us."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    try:
        st = os.fstat(fd)
    except OSError:
        os.close(fd)
        raise
    if not _is_regular(st):
        os.close(fd)
        raise IsADirectoryError(f"not a regular file: {path}")
    return fd, st


def close_quietly(fd: int) -> None:
    if fd >= 0:
        with contextlib.suppress(OSError):
            os.close(fd)


def _is_regular(st: os.stat_result) -> bool:
    return (st.st_mode & 0o170000) == 0o100000


class DirListing:
    """Sorted directory listings, kept while the directory's mtime says no entry changed.

    Listing a busy log directory on every poll cost more than reading the log itself, so a
    listing is reused as long as the directory's mtime is the one it was taken at. Timestamps
    are coarse (a clock tick), so like git's "racy" index entries a listing taken within
    :data:`RACY_NS` of that mtime is not trusted: a rename in the same tick would not show.
    """

    RACY_NS = 2_000_000_000

    def __init__(self) -> None:
        self._names: dict[str, list[str]] = {}
        self._mtimes: dict[str, int] = {}
        self._listed_at: dict[str, int] = {}

    def names(self, directory: str) -> list[str]:
        try:
            mtime = os.stat(directory or ".").st_mtime_ns
        except OSError:
            self._forget(directory)
            return []
        found = self._names.get(directory)
        if (
            found is not None
            and self._mtimes.get(directory) == mtime
            and self._listed_at[directory] - mtime > self.RACY_NS
        ):
            return found
        listed_at = time.time_ns()
        try:
            found = sorted(os.listdir(directory or "."))
        except OSError:
            self._forget(directory)
            return []
        self._names[directory] = found
        self._mtimes[directory] = mtime
        self._listed_at[directory] = listed_at
        return found

    def unchanged(self, directory: str) -> bool:
        """Whether no entry of ``directory`` was created, renamed or removed since its listing."""
        try:
            return os.stat(directory or ".").st_mtime_ns == self._mtimes.get(directory)
        except OSError:
            return False

    def _forget(self, directory: str) -> None:
        self._names.pop(directory, None)
        self._mtimes.pop(directory, None)
        self._listed_at.pop(directory, None)


@dataclass(frozen=True, slots=True)
class SiblingRule:
    """Which names next to a file are its rotated copies."""

    globs: tuple[str, ...]
    ignored_suffixes: tuple[str, ...]

    def siblings(self, path: str, listing: DirListing) -> list[str]:
        """Paths of the rotated siblings of ``path`` that exist now, in name order."""
        directory, name = os.path.split(path)
        if not name:
            return []
        names = listing.names(directory)
        patterns = [g.replace("{name}", glob.escape(name)) for g in self.globs]
        if all(g.startswith("{name}") for g in self.globs):
            start = bisect.bisect_right(names, name)
            candidates: list[str] = []
            for candidate in names[start:]:
                if not candidate.startswith(name):
                    break
                candidates.append(candidate)
        else:
            candidates = names
        return [
            os.path.join(directory, candidate)
            for candidate in candidates
            if candidate != name
            and not candidate.endswith(self.ignored_suffixes)
            and any(fnmatchcase(candidate, pattern) for pattern in patterns)
        ]
