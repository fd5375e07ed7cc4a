"""Which files a tailer follows, under which names, in which state: the names → followers step.

Every poll starts here. Paths and globs are expanded and ``stat``-ed; a path that now names
another inode detaches its follower (rename rotation, delete and recreate, symlink switch) and
gets a new one; a follower whose bytes changed under it (truncation, copytruncate, in-place
rewrite) is split into the old generation (continued from the rotated copy, if one holds our
bytes) and a new one read from 0; unknown rotated siblings are adopted (rotations we never saw).
Detached followers are kept, and read, until drained, quiet for ``rotate_grace`` and fully
acknowledged; only then are they closed and remembered as done.

Live followers are keyed by path; detached ones are kept in order, oldest content first, which is
the order in which :class:`~inferwatch.sources.tail.tailer.Tailer` reads them.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

from inferwatch.sources.tail.checkpoint import Checkpoint
from inferwatch.sources.tail.follower import Follower
from inferwatch.sources.tail.identity import (
    DirListing,
    FileKey,
    Prefix,
    close_quietly,
    file_key,
    open_file,
)
from inferwatch.sources.tail.model import TailConfig, TailStats
from inferwatch.sources.tail.paths import expand, last_line_start
from inferwatch.sources.tail.restore import resume_relisting
from inferwatch.sources.tail.siblings import SiblingTracker
from inferwatch.sources.tail.status import StatusBoard


class FileSet:
    """The followers of one tailer: live ones by path, detached ones in reading order."""

    def __init__(
        self,
        config: TailConfig,
        stats: TailStats,
        board: StatusBoard,
        siblings: SiblingTracker,
        *,
        fresh: bool,
    ) -> None:
        self.config = config
        self.stats = stats
        self.board = board
        self.siblings = siblings
        self.attached: dict[str, Follower] = {}
        self.detached: list[Follower] = []
        #: Set when the followed names changed (the watched directories may have to change).
        self.changed = True
        self._fresh = fresh
        self._reconciled = False
        self._failing: dict[int, Follower] = {}

    def restore(self, checkpoint: Checkpoint, listing: DirListing, now: float) -> DirListing:
        """Reopen every checkpointed file found again; rotated-away ones continue detached.

        A record whose file is nowhere in the listing is looked for again in fresh listings (a
        rotation may have been renaming files as we listed), then left pending for the sibling
        scans. Returns the listing to reconcile with.
        """
        self.siblings.seen = {(e.dev, e.ino): e for e in checkpoint.seen}
        matched = expand(self.config.paths, self.board)
        found, listing = resume_relisting(checkpoint.files, matched, self.siblings.rule, listing)
        resumed, missing = found.resumed, found.missing
        expired = len(checkpoint.files) - len(resumed) - len(missing)
        self.stats.checkpoint_entries_expired += expired
        self.siblings.pending = {(e.dev, e.ino): e for e in missing}
        detached: list[tuple[int, Follower]] = []
        for item in resumed:
            entry = item.entry
            follower = self.new_follower(
                entry.path,
                item.fd,
                item.st,
                now,
                offset=entry.offset,
                line_no=entry.line_no,
                prefix=entry.prefix,
            )
            if item.path in matched and item.path not in self.attached:
                self.attached[item.path] = follower
                self.board.set(item.path, "ok")
            else:
                follower.detached_at = now
                detached.append((item.st.st_mtime_ns, follower))
        self.detached.extend(f for _, f in sorted(detached, key=lambda pair: pair[0]))
        return listing

    def reconcile(self, listing: DirListing, now: float) -> None:
        """Bring the followers in line with what the names point to now (one ``stat`` each)."""
        self.stats.reconciles += 1
        matched = expand(self.config.paths, self.board)
        for path, follower in list(self.attached.items()):
            st = matched.get(path)
            if st is None or file_key(st) != follower.key:
                del self.attached[path]
                follower.detached_at = now
                self.detached.append(follower)
                self.stats.rotations += 1
                self.changed = True
        keys = {f.key for f in self.attached.values()}
        for path, st in matched.items():
            if path not in self.attached:
                self._attach(path, st, keys, listing, now)
        for follower in list(self.followers()):
            if follower.fd >= 0:
                self._check_rewrite(follower, listing, now)
        # Rotations we never saw (several between two polls, or while stopped) and copies made
        # before we had read anything: unknown siblings. On the very first start they are history.
        read_unknown = not (self._fresh and not self._reconciled)
        for path in list(self.attached):
            self._adopt_siblings(path, listing, read_unknown=read_unknown, now=now)
        self._reconciled = True

    def _attach(
        self,
        path: str,
        st: os.stat_result,
        keys: set[FileKey],
        listing: DirListing,
        now: float,
    ) -> None:
        key = file_key(st)
        if key in keys:
            self.board.set(path, "ok")  # the same file under a second name: read it once
            return
        back = next((f for f in self.detached if f.key == key and f.fd >= 0), None)
        if back is not None:
            self.detached.remove(back)
            back.detached_at = None
            self.attached[path] = back
            keys.add(key)
            self.changed = True
            return
        first_start = self._fresh and not self._reconciled
        follower = self._open(path, now, at_end=first_start and self.config.start_at == "end")
        if follower is None:
            return
        self.attached[path] = follower
        keys.add(follower.key)
        self.changed = True

    def _open(self, path: str, now: float, *, at_end: bool) -> Follower | None:
        try:
            fd, st = open_file(path)
        except FileNotFoundError:
            self.board.set(path, "missing")
            return None
        except OSError as exc:
            self.board.error(path, exc)
            return None
        try:
            known = self._known_start(fd, st)
            if known is not None:
                offset, line_no, prefix = known
                follower = self.new_follower(
                    path, fd, st, now, offset=offset, line_no=line_no, prefix=prefix
                )
            elif at_end:
                offset = last_line_start(fd, st.st_size, self.config.max_line_bytes)
                prefix = Prefix.of(fd, offset)
                follower = self.new_follower(path, fd, st, now, offset=offset, prefix=prefix)
            else:
                follower = self.new_follower(path, fd, st, now)
        except OSError as exc:
            close_quietly(fd)
            self.board.error(path, exc)
            return None
        self.board.set(path, "ok")
        return follower

    def _known_start(self, fd: int, st: os.stat_result) -> tuple[int, int, Prefix] | None:
        """Where to read an opened file from, if we know it: a checkpoint record not found at
        start-up, or a rotated file we had finished (offset, line number, prefix)."""
        resumed = self.siblings.claim_pending(fd, st)
        if resumed is not None:
            return resumed.offset, resumed.line_no, resumed.prefix
        closed = self.siblings.closed_match(fd, st)
        if closed is None:
            return None
        self.siblings.seen.pop(file_key(st), None)
        return closed.size, closed.line_no, closed.prefix

    def _check_rewrite(self, follower: Follower, listing: DirListing, now: float) -> None:
        """Truncated or rewritten under us: old bytes from the copy if any, new ones from 0."""
        known_size = follower.size
        try:
            follower.refresh()
            if not follower.rewritten():
                return
            fresh = os.fstat(follower.fd)
        except OSError as exc:
            self.report(follower, exc)
            return
        self.stats.truncations += 1
        path = next((p for p, f in self.attached.items() if f is follower), None)
        slot = path if path is not None else follower.label
        generation = self.new_follower(follower.label, follower.fd, fresh, now)
        copy = self.siblings.find_copy(follower, slot, listing, self.followers())
        if copy is not None:
            follower.move_to(*copy)
        else:
            # Bytes we knew were there but had not read yet are gone with the old content.
            self.stats.bytes_unread_dropped += max(0, known_size - follower.read_pos)
            follower.mark_lost()
        if path is not None:
            self.attached[path] = generation
            follower.detached_at = now
            self.detached.append(follower)
        else:
            generation.detached_at = now
            self.detached.insert(self.detached.index(follower) + 1, generation)

    def _adopt_siblings(
        self, slot: str, listing: DirListing, *, read_unknown: bool, now: float
    ) -> None:
        adopted = self.siblings.scan(
            slot,
            listing,
            self.followers(),
            read_unknown=read_unknown,
            now=now,
        )
        self.detached.extend(adopted)

    def retire(self, now: float) -> None:
        """Close rotated-away files once drained, quiet and fully acknowledged."""
        keep: list[Follower] = []
        for follower in self.detached:
            done = follower.fully_acked and not follower.framer.pending
            if follower.fd < 0:
                if not done:
                    keep.append(follower)
                continue
            if done and follower.quiet(now, self.config.rotate_grace) and self._drained(follower):
                if follower.nlink > 0:
                    self.siblings.remember(follower.label, follower)
                follower.close()
                self.stats.files_closed += 1
                continue
            keep.append(follower)
        self.detached = keep

    def _drained(self, follower: Follower) -> bool:
        try:
            follower.refresh()
        except OSError as exc:
            self.report(follower, exc)
            return False
        return follower.at_eof

    def new_follower(
        self,
        label: str,
        fd: int,
        st: os.stat_result,
        now: float,
        *,
        offset: int = 0,
        line_no: int = 0,
        prefix: Prefix | None = None,
    ) -> Follower:
        kwargs: dict[str, Any] = {} if prefix is None else {"prefix": prefix}
        return Follower(
            label,
            fd,
            st,
            max_line=self.config.max_line_bytes,
            now=now,
            stats=self.stats,
            offset=offset,
            line_no=line_no,
            **kwargs,
        )

    def followers(self) -> Iterator[Follower]:
        yield from self.attached.values()
        yield from self.detached

    def name_of(self, follower: Follower) -> str:
        return next((p for p, f in self.attached.items() if f is follower), follower.label)

    def report(self, follower: Follower, exc: OSError) -> None:
        self._failing[id(follower)] = follower
        self.board.error(self.name_of(follower), exc)

    def recovered(self, follower: Follower) -> None:
        """A follower that had failed read fine again: its status goes back to ok."""
        if self._failing.pop(id(follower), None) is not None:
            self.board.set(self.name_of(follower), "ok")

    def close(self) -> None:
        for follower in self.followers():
            follower.close()
        self.attached.clear()
        self.detached.clear()
