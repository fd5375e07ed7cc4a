"""What the tailer knows about the rotated siblings of the files it follows.

Three questions are answered here, each when something happened to a followed path:

- **A rename rotation** (the path now names another inode): were there rotations we never saw
  (``.1`` → ``.2`` → ``.3`` between two polls)? Any sibling that is neither followed, nor
  already dealt with (``seen``), nor a copy of something we know is an *intermediate* file: it
  is read from 0, oldest first, before the new file.
- **A truncation** (copytruncate): does a sibling hold our bytes *and more* (the copy logrotate
  made before truncating)? Then the old generation continues in it from our offset.
- **A path seen for the first time**: its existing siblings are history on the very first start
  (no checkpoint) and read otherwise (they appeared while we were away).

``seen`` remembers, per sibling identity, where reading stopped, so a restart neither re-reads a
finished file nor mistakes it for a new rotation; entries vanish with their files. ``pending``
holds the checkpoint records whose file could not be found at start-up (a rotation was renaming
it just then): when a scan meets that file, it is resumed at the recorded offset, after the same
checks as at start-up, instead of being read again from 0.
"""

# Paths are plain strings and I/O goes through os.* on purpose: the tailer works on descriptors
# (fstat, pread) and stats every followed path each poll, where pathlib objects only add cost.
# ruff: noqa: PTH116, PTH120

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import replace

from inferwatch.sources.tail.checkpoint import FileEntry, SeenEntry
from inferwatch.sources.tail.follower import Follower
from inferwatch.sources.tail.identity import (
    ANCHOR_BYTES,
    EMPTY_PREFIX,
    PREFIX_BYTES,
    DirListing,
    FileKey,
    Prefix,
    SiblingRule,
    close_quietly,
    digest,
    file_key,
    open_file,
    read_at,
)
from inferwatch.sources.tail.model import TailStats
from inferwatch.sources.tail.restore import verify

#: Prefixes shorter than this are too weak to call another file a copy of ours.
_MIN_COPY_PREFIX = ANCHOR_BYTES
#: Consecutive scans a remembered sibling must be missing from before it is forgotten.
_PRUNE_AFTER_MISSES = 3


class SiblingTracker:
    """Finds intermediate rotations and copies next to followed files; owns ``seen``."""

    def __init__(self, rule: SiblingRule, stats: TailStats, max_line: int) -> None:
        self.rule = rule
        self.stats = stats
        self.max_line = max_line
        self.seen: dict[FileKey, SeenEntry] = {}
        #: Checkpoint records not found at start-up, by the identity they recorded.
        self.pending: dict[FileKey, FileEntry] = {}
        self._misses: dict[FileKey, int] = {}

    def scan(
        self,
        slot: str,
        listing: DirListing,
        followers: Iterable[Follower],
        *,
        read_unknown: bool,
        now: float,
    ) -> list[Follower]:
        """Classify the siblings of ``slot``; return followers for intermediates, oldest first."""
        everyone = list(followers)
        tracked = {f.key for f in everyone if f.fd >= 0}
        known = _known_prefixes(everyone, self.seen.values())
        present: set[FileKey] = set()
        adopted: list[tuple[tuple[int, int, str], Follower]] = []
        for path in self.rule.siblings(slot, listing):
            try:
                st = os.stat(path)
            except OSError:
                continue
            key = file_key(st)
            present.add(key)
            if key in tracked or st.st_size == 0 or self._unchanged(key, st):
                continue  # an empty file has nothing to lose yet (maybe a copy just begun)
            follower = self._classify(
                slot, path, known, everyone, tracked, read_unknown=read_unknown, now=now
            )
            if follower is not None:
                # A rotation renaming files during this scan can show one file under two names.
                tracked.add(follower.key)
                adopted.append((_age_key(path, st), follower))
        if listing.unchanged(os.path.dirname(slot)):
            self._prune(slot, present)
        adopted.sort(key=lambda item: item[0])
        return [follower for _, follower in adopted]

    def find_copy(
        self, follower: Follower, slot: str, listing: DirListing, followers: Iterable[Follower]
    ) -> tuple[int, os.stat_result] | None:
        """An open sibling holding ``follower``'s bytes up to its read position, and more."""
        if not follower.tail:
            return None
        tracked = {f.key for f in followers if f.fd >= 0}
        candidates: list[tuple[int, str]] = []
        for path in self.rule.siblings(slot, listing):
            try:
                st = os.stat(path)
            except OSError:
                continue
            if file_key(st) not in tracked and st.st_size > 0:
                candidates.append((st.st_mtime_ns, path))
        for _, path in sorted(candidates, reverse=True):
            found = self._try_copy(follower, slot, path, tracked)
            if found is not None:
                return found
        return None

    def remember(self, slot: str, follower: Follower) -> None:
        """A sibling read to its end (or a rotated file we closed): never read it again."""
        try:
            st = os.fstat(follower.fd)
            prefix = Prefix.of(follower.fd, st.st_size)
        except OSError:
            return
        self.seen[follower.key] = SeenEntry(
            slot, *follower.key, prefix, follower.read_pos, st.st_mtime_ns, follower.line_no, True
        )

    def claim_pending(self, fd: int, st: os.stat_result) -> FileEntry | None:
        """The pending checkpoint record of this open file, if its checks pass (then it is no
        longer pending). A record whose identity now names other content is expired."""
        entry = self.pending.pop(file_key(st), None)
        if entry is None:
            return None
        self._misses.pop(file_key(st), None)
        if verify(entry, fd, st.st_size):
            return entry
        self.stats.checkpoint_entries_expired += 1
        return None

    def closed_match(self, fd: int, st: os.stat_result) -> SeenEntry | None:
        """The ``seen`` record of this open file, if it is the file that record describes."""
        entry = self.seen.get(file_key(st))
        if entry is None or st.st_size < entry.size:
            return None
        try:
            return entry if entry.prefix.matches(fd, st.st_size) else None
        except OSError:
            return None

    def _unchanged(self, key: FileKey, st: os.stat_result) -> bool:
        entry = self.seen.get(key)
        return entry is not None and entry.size == st.st_size and entry.mtime_ns == st.st_mtime_ns

    def _classify(
        self,
        slot: str,
        path: str,
        known: dict[int, set[str]],
        followers: list[Follower],
        tracked: set[FileKey],
        *,
        read_unknown: bool,
        now: float,
    ) -> Follower | None:
        try:
            fd, st = open_file(path)
        except FileNotFoundError:
            return None  # renamed away since the listing: the next scan sees it
        except OSError as exc:
            self.stats.count_error(exc)
            return None
        try:
            if file_key(st) in tracked:
                return None  # a rotation renamed a followed file to this name meanwhile
            resumed = self.claim_pending(fd, st)
            if resumed is not None:
                follower = Follower(
                    resumed.path,
                    fd,
                    st,
                    max_line=self.max_line,
                    now=now,
                    stats=self.stats,
                    offset=resumed.offset,
                    line_no=resumed.line_no,
                    prefix=resumed.prefix,
                )
                follower.detached_at = now
                fd = -1
                return follower
            entry = self.closed_match(fd, st)
            late_write = entry is not None and entry.read and st.st_size > entry.size
            if entry is not None and not (late_write and read_unknown):
                # Unchanged; or history / a copy we never read, grown (logrotate still copying).
                size = entry.size if entry.read else st.st_size
                self.seen[file_key(st)] = replace(
                    entry, slot=slot, size=size, mtime_ns=st.st_mtime_ns
                )
            elif entry is None and not read_unknown:
                self._remember_unread(slot, fd, st)  # history, on the very first start
            elif entry is None and (copy := _is_copy(fd, st, known, followers)) is not False:
                if copy:
                    self._remember_unread(slot, fd, st)
            else:
                # An intermediate rotation, or a file we had finished that a late writer grew.
                follower = Follower(
                    slot,
                    fd,
                    st,
                    max_line=self.max_line,
                    now=now,
                    stats=self.stats,
                    offset=entry.size if entry else 0,
                    line_no=entry.line_no if entry else 0,
                    prefix=entry.prefix if entry else EMPTY_PREFIX,
                )
                follower.detached_at = now
                self.seen.pop(file_key(st), None)
                self.stats.intermediates_read += 1
                fd = -1
                return follower
        except OSError as exc:
            self.stats.count_error(exc)
        finally:
            close_quietly(fd)
        return None

    def _try_copy(
        self, follower: Follower, slot: str, path: str, tracked: set[FileKey]
    ) -> tuple[int, os.stat_result] | None:
        try:
            fd, st = open_file(path)
        except OSError:
            return None
        try:
            if file_key(st) not in tracked and follower.same_content(fd, st.st_size):
                pos = follower.read_pos
                held = read_at(fd, len(follower.tail), pos - len(follower.tail))
                if st.st_size > pos and held == follower.tail:
                    self.stats.copies_read += 1
                    found = fd
                    fd = -1
                    return found, st
                self._remember_unread(slot, fd, st)
        except OSError as exc:
            self.stats.count_error(exc)
        finally:
            close_quietly(fd)
        return None

    def _remember_unread(self, slot: str, fd: int, st: os.stat_result) -> None:
        prefix = Prefix.of(fd, st.st_size)
        self.seen[file_key(st)] = SeenEntry(
            slot, *file_key(st), prefix, st.st_size, st.st_mtime_ns, 0, False
        )

    def _prune(self, slot: str, present: set[FileKey]) -> None:
        """Forget files gone for good. One scan is not proof: a rotation renaming every sibling
        (``.3`` → ``.4`` …) between our listing and our ``stat`` hides a file from that scan,
        and forgetting it would make it "unknown", then re-read, at the next scan. So only
        scans during which the directory did not change count, and it takes several. A pending
        checkpoint record forgotten that way counts as expired."""
        gone = {key for key, entry in self.seen.items() if entry.slot == slot}
        gone |= {key for key, record in self.pending.items() if record.path == slot}
        for key in gone:
            if key in present:
                self._misses.pop(key, None)
                continue
            self._misses[key] = self._misses.get(key, 0) + 1
            if self._misses[key] >= _PRUNE_AFTER_MISSES:
                del self._misses[key]
                self.seen.pop(key, None)
                if self.pending.pop(key, None) is not None:
                    self.stats.checkpoint_entries_expired += 1


def _known_prefixes(
    followers: Iterable[Follower], seen: Iterable[SeenEntry]
) -> dict[int, set[str]]:
    known: dict[int, set[str]] = {}
    prefixes = [f.prefix for f in followers] + [e.prefix for e in seen]
    for prefix in prefixes:
        if prefix.length >= _MIN_COPY_PREFIX and prefix.evidence:
            known.setdefault(prefix.length, set()).add(prefix.digest)
    return known


def _is_copy(
    fd: int, st: os.stat_result, known: dict[int, set[str]], followers: list[Follower]
) -> bool | None:
    """Whether the open sibling holds bytes we read or will read elsewhere: it starts as a
    generation we follow does (a copy logrotate made before truncating), or like a file we
    remember. ``None``: cannot tell yet, it holds nothing but NULs so far (logrotate is still
    copying the hole of a sparse file)."""
    if any(f.same_content(fd, st.st_size) for f in followers):
        return True
    head = read_at(fd, PREFIX_BYTES, 0)
    if any(
        len(head) >= length and digest(head[:length]) in digests
        for length, digests in known.items()
    ):
        return True
    count = min(ANCHOR_BYTES, st.st_size)
    if not head.strip(b"\x00") and not read_at(fd, count, st.st_size - count).strip(b"\x00"):
        return None
    return False


def _age_key(path: str, st: os.stat_result) -> tuple[int, int, str]:
    """Oldest first: by mtime, then (same clock tick) higher number first (``.3``, ``.2``)."""
    suffix = path.rsplit(".", 1)[-1]
    rank = -int(suffix) if suffix.isdigit() and len(suffix) <= 6 else 0
    return (st.st_mtime_ns, rank, path)
