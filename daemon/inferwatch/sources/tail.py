"""Rotation-safe file tailing shared by every file source: the synchronous core.

:class:`Tailer` follows paths and globs and hands out every line exactly once across rename and
copy-truncate rotation, truncation (also when the file regrew past our offset before we looked),
delete and recreate, symlink switches and restarts. Each :meth:`Tailer.poll` is one explicit step
(reconcile names with ``stat``, then read what is there, without blocking), so tests drive it with
a fake clock and the daemon drives it from :func:`inferwatch.sources.tail_follow.follow`.

Delivery is at-least-once by construction and exactly-once for a careful consumer: each line
carries a position; the consumer acknowledges what it has turned into state (:meth:`Tailer.ack`,
cumulative) and stores :meth:`Tailer.checkpoint`, which covers only acknowledged lines, in the
same transaction as that state. A kill -9 then re-delivers only lines that were never committed.

Identity is ``(dev, ino)`` while a file is open plus a prefix fingerprint and an anchor across
restarts (see :mod:`~inferwatch.sources.tail_identity`). Per-file errors are data
(:meth:`Tailer.statuses`); a missing file is "no data".
"""

# Paths are plain strings and I/O goes through os.* on purpose: the tailer works on descriptors
# (fstat, pread) and stats every followed path each poll, where pathlib objects only add cost.
# ruff: noqa: PTH100, PTH116, PTH120, PTH207

from __future__ import annotations

import glob
import os
import stat
from collections import deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from inferwatch.clock import SYSTEM_CLOCK, Clock
from inferwatch.sources.tail_checkpoint import Checkpoint, CheckpointError
from inferwatch.sources.tail_follower import Follower
from inferwatch.sources.tail_identity import (
    DirListing,
    FileKey,
    Prefix,
    SiblingRule,
    close_quietly,
    file_key,
    open_file,
    read_at,
)
from inferwatch.sources.tail_model import (
    FileState,
    FileStatus,
    Position,
    TailConfig,
    TailLine,
    TailStats,
)
from inferwatch.sources.tail_restore import resume_all
from inferwatch.sources.tail_siblings import SiblingTracker

__all__ = [
    "CheckpointError",
    "FileStatus",
    "Position",
    "TailConfig",
    "TailLine",
    "TailStats",
    "Tailer",
]


@dataclass(slots=True)
class _Block:
    """Lines of one follower delivered together: what acknowledging them commits."""

    follower: Follower
    first_seq: int
    last_seq: int
    first_line_no: int
    end_offset: int
    end_line_no: int
    anchor: bytes


class Tailer:
    """Follows files; :meth:`poll` returns new lines, :meth:`ack` + :meth:`checkpoint` persist.

    ``checkpoint`` is what :meth:`checkpoint` returned in an earlier run (``None`` on the very
    first start: then rotated siblings that already exist are history, and ``start_at`` applies).
    A malformed checkpoint raises :class:`CheckpointError`.
    """

    def __init__(
        self,
        config: TailConfig,
        *,
        clock: Clock = SYSTEM_CLOCK,
        checkpoint: Mapping[str, Any] | None = None,
    ) -> None:
        self.config = config
        self.stats = TailStats()
        self.more = False
        self._clock = clock
        self._restore = Checkpoint.from_json(checkpoint) if checkpoint is not None else None
        self._fresh = checkpoint is None
        rule = SiblingRule(config.rotated_globs, config.ignored_suffixes)
        self._siblings = SiblingTracker(rule, self.stats, config.max_line_bytes)
        self._attached: dict[str, Follower] = {}
        self._detached: list[Follower] = []
        self._pending: deque[_Block] = deque()
        self._status: dict[str, FileStatus] = {}
        self._failing: dict[int, Follower] = {}
        self._seq = 0
        self._acked = 0
        self._started = False
        self._reconciled = False
        self._turn = 0
        self._watch_dirs: frozenset[str] | None = None
        self._frozen: dict[str, Any] | None = None

    # -- public API ------------------------------------------------------------------------

    def poll(self) -> list[TailLine]:
        """Reconcile names, then read what is available (at most ``poll_budget_bytes``).

        ``more`` is set when the budget ran out, i.e. calling again at once will find data.
        """
        listing = DirListing()
        now = self._clock.monotonic()
        if not self._started:
            self._start(listing, now)
        self._reconcile(listing, now)
        out: list[TailLine] = []
        budget = self.config.poll_budget_bytes
        for follower in self._read_order():
            if budget <= 0:
                break
            budget -= self._service(follower, out, budget, now)
        self.more = budget <= 0
        self._retire(now)
        return out

    def ack(self, position: Position) -> None:
        """Acknowledge the line at ``position`` and every line delivered before it."""
        seq, offset = position
        if seq > self._seq:
            raise ValueError(f"position {position!r} was never delivered")
        if seq <= self._acked:
            return
        self._acked = seq
        pending = self._pending
        while pending:
            block = pending[0]
            follower = block.follower
            if block.last_seq <= seq:
                pending.popleft()
                follower.commit(block.end_offset, block.end_line_no, block.anchor, block.last_seq)
                continue
            if block.first_seq <= seq:
                line_no = block.first_line_no + (seq - block.first_seq)
                follower.commit(offset, line_no, follower.anchor_at(offset), seq)
                block.first_seq = seq + 1
                block.first_line_no = line_no + 1
            break

    def checkpoint(self) -> dict[str, Any]:
        """JSON-able resume state covering exactly the acknowledged lines.

        Before the first poll it is the checkpoint the tailer was given; after :meth:`close`, the
        state at closing: persisting it at any moment never forgets a file.
        """
        if self._frozen is not None:
            return self._frozen
        if not self._started and self._restore is not None:
            return self._restore.to_json()
        names = {id(f): path for path, f in self._attached.items()}
        files = tuple(f.entry(names.get(id(f))) for f in self._followers() if not f.lost)
        return Checkpoint(files, tuple(self._siblings.seen.values())).to_json()

    def statuses(self) -> tuple[FileStatus, ...]:
        return tuple(self._status[path] for path in sorted(self._status))

    def watch_dirs(self) -> frozenset[str]:
        """Directories whose events should wake this tailer (parents of paths and targets)."""
        if self._watch_dirs is None:
            dirs: set[str] = set()
            for pattern in self.config.paths:
                dirs.add(_watch_root(pattern))
                if not glob.has_magic(pattern):
                    dirs.add(os.path.dirname(os.path.realpath(pattern)))
            for path in self._attached:
                dirs.add(os.path.dirname(os.path.abspath(path)))
                dirs.add(os.path.dirname(os.path.realpath(path)))
            self._watch_dirs = frozenset(dirs)
        return self._watch_dirs

    def close(self) -> None:
        """Close every descriptor. Partial lines are not flushed: a restart re-reads them."""
        if self._frozen is None:
            self._frozen = self.checkpoint()
        for follower in self._followers():
            follower.close()
        self._attached.clear()
        self._detached.clear()

    def __enter__(self) -> Tailer:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- start-up --------------------------------------------------------------------------

    def _start(self, listing: DirListing, now: float) -> None:
        self._started = True
        if self._restore is None:
            return
        self._siblings.seen = {(e.dev, e.ino): e for e in self._restore.seen}
        matched = self._expand()
        resumed = resume_all(self._restore.files, matched, self._siblings.rule, listing)
        self.stats.checkpoint_entries_expired += len(self._restore.files) - len(resumed)
        detached: list[tuple[int, Follower]] = []
        for item in resumed:
            entry = item.entry
            follower = self._new_follower(
                entry.path,
                item.fd,
                item.st,
                now,
                offset=entry.offset,
                line_no=entry.line_no,
                prefix=entry.prefix,
            )
            if item.path in matched and item.path not in self._attached:
                self._attached[item.path] = follower
                self._set_status(item.path, "ok")
            else:
                follower.detached_at = now
                detached.append((item.st.st_mtime_ns, follower))
        self._detached.extend(f for _, f in sorted(detached, key=lambda pair: pair[0]))

    # -- reconcile: names → followers --------------------------------------------------------

    def _reconcile(self, listing: DirListing, now: float) -> None:
        self.stats.reconciles += 1
        matched = self._expand()
        for path, follower in list(self._attached.items()):
            st = matched.get(path)
            if st is None or file_key(st) != follower.key:
                del self._attached[path]
                follower.detached_at = now
                self._detached.append(follower)
                self.stats.rotations += 1
                self._watch_dirs = None
        keys = {f.key for f in self._attached.values()}
        for path, st in matched.items():
            if path not in self._attached:
                self._attach(path, st, keys, listing, now)
        for follower in list(self._followers()):
            if follower.fd >= 0:
                self._check_rewrite(follower, listing, now)
        # Rotations we never saw (several between two polls, or while stopped) and copies made
        # before we had read anything: unknown siblings. On the very first start they are history.
        read_unknown = not (self._fresh and not self._reconciled)
        for path in list(self._attached):
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
            self._set_status(path, "ok")  # the same file under a second name: read it once
            return
        back = next((f for f in self._detached if f.key == key and f.fd >= 0), None)
        if back is not None:
            self._detached.remove(back)
            back.detached_at = None
            self._attached[path] = back
            keys.add(key)
            return
        first_start = self._fresh and not self._reconciled
        follower = self._open(path, now, at_end=first_start and self.config.start_at == "end")
        if follower is None:
            return
        self._attached[path] = follower
        keys.add(follower.key)
        self._watch_dirs = None

    def _open(self, path: str, now: float, *, at_end: bool) -> Follower | None:
        try:
            fd, st = open_file(path)
        except FileNotFoundError:
            self._set_status(path, "missing")
            return None
        except OSError as exc:
            self._set_error(path, exc)
            return None
        try:
            closed = self._siblings.closed_match(fd, st)
            if closed is not None:
                self._siblings.seen.pop(file_key(st), None)
                follower = self._new_follower(
                    path,
                    fd,
                    st,
                    now,
                    offset=closed.size,
                    line_no=closed.line_no,
                    prefix=closed.prefix,
                )
            elif at_end:
                offset = _last_line_start(fd, st.st_size, self.config.max_line_bytes)
                prefix = Prefix.of(fd, offset)
                follower = self._new_follower(path, fd, st, now, offset=offset, prefix=prefix)
            else:
                follower = self._new_follower(path, fd, st, now)
        except OSError as exc:
            close_quietly(fd)
            self._set_error(path, exc)
            return None
        self._set_status(path, "ok")
        return follower

    def _check_rewrite(self, follower: Follower, listing: DirListing, now: float) -> None:
        """Truncated or rewritten under us: old bytes from the copy if any, new ones from 0."""
        known_size = follower.size
        try:
            follower.refresh()
            if not follower.rewritten():
                return
            fresh = os.fstat(follower.fd)
        except OSError as exc:
            self._report(follower, exc)
            return
        self.stats.truncations += 1
        path = next((p for p, f in self._attached.items() if f is follower), None)
        slot = path if path is not None else follower.label
        generation = self._new_follower(follower.label, follower.fd, fresh, now)
        copy = self._siblings.find_copy(follower, slot, listing, self._followers())
        if copy is not None:
            follower.move_to(*copy)
        else:
            # Bytes we knew were there but had not read yet are gone with the old content.
            self.stats.bytes_unread_dropped += max(0, known_size - follower.read_pos)
            follower.mark_lost()
        if path is not None:
            self._attached[path] = generation
            follower.detached_at = now
            self._detached.append(follower)
        else:
            generation.detached_at = now
            self._detached.insert(self._detached.index(follower) + 1, generation)

    def _adopt_siblings(
        self, slot: str, listing: DirListing, *, read_unknown: bool, now: float
    ) -> None:
        adopted = self._siblings.scan(
            slot,
            listing,
            self._followers(),
            live=self._attached.get(slot),
            read_unknown=read_unknown,
            now=now,
        )
        self._detached.extend(adopted)

    def _expand(self) -> dict[str, os.stat_result]:
        """Configured paths and current glob matches that are regular files, with their stat."""
        matched: dict[str, os.stat_result] = {}
        for pattern in self.config.paths:
            magic = glob.has_magic(pattern)
            names = sorted(glob.glob(pattern)) if magic else [pattern]
            if magic:
                if names:
                    self._status.pop(pattern, None)
                else:
                    self._set_status(pattern, "missing")
            for name in names:
                if name not in matched:
                    self._stat_into(name, matched, explicit=not magic)
        for path in [p for p in self._status if p not in matched and p not in self.config.paths]:
            del self._status[path]
        return matched

    def _stat_into(self, name: str, matched: dict[str, os.stat_result], *, explicit: bool) -> None:
        try:
            st = os.stat(name)
        except FileNotFoundError:
            if explicit:
                self._set_status(name, "missing")
            return
        except OSError as exc:
            self._set_error(name, exc)
            return
        if stat.S_ISREG(st.st_mode):
            matched[name] = st
        elif explicit:
            self._set_error(name, IsADirectoryError(f"not a regular file: {name}"))

    # -- reading ---------------------------------------------------------------------------

    def _read_order(self) -> list[Follower]:
        """Rotated-away files first (their lines are older), then live files round-robin."""
        live = list(self._attached.values())
        if live:
            turn = self._turn % len(live)
            live = live[turn:] + live[:turn]
            self._turn += 1
        return [*self._detached, *live]

    def _service(self, follower: Follower, out: list[TailLine], budget: int, now: float) -> int:
        if follower.fd < 0:
            self._flush(follower, out)
            return 0
        if follower.detached_at is None and self._held_back(follower):
            return 0
        start = follower.read_pos
        cfg = self.config
        try:
            lines = follower.read(self._seq, budget, cfg.read_chunk_bytes, now)
            self._deliver(follower, lines, out)
            if follower.detached_at is not None and follower.framer.pending:
                follower.refresh()
                if follower.at_eof and follower.quiet(now, cfg.rotate_grace):
                    self._flush(follower, out)
            follower.grow_prefix()
        except OSError as exc:
            self._report(follower, exc)
        else:
            if self._failing.pop(id(follower), None) is not None:
                self._set_status(self._name_of(follower), "ok")
        return follower.read_pos - start

    def _held_back(self, follower: Follower) -> bool:
        """Strict order: a live file waits while an older file of its path is still open."""
        if not self.config.strict_rotation_order:
            return False
        return any(f.label == follower.label and f.fd >= 0 for f in self._detached)

    def _flush(self, follower: Follower, out: list[TailLine]) -> None:
        line = follower.flush_partial(self._seq)
        if line is not None:
            self._deliver(follower, [line], out)

    def _deliver(self, follower: Follower, lines: list[TailLine], out: list[TailLine]) -> None:
        if not lines:
            return
        first, last = lines[0], lines[-1]
        self._seq = last.position[0]
        follower.delivered_seq = self._seq
        anchor = follower.tail if follower.fd < 0 else follower.anchor_at_line_end()
        self._pending.append(
            _Block(
                follower,
                first.position[0],
                last.position[0],
                first.line_no,
                last.position[1],
                last.line_no,
                anchor,
            )
        )
        out.extend(lines)

    def _retire(self, now: float) -> None:
        """Close rotated-away files once drained, quiet and fully acknowledged."""
        keep: list[Follower] = []
        for follower in self._detached:
            done = follower.fully_acked and not follower.framer.pending
            if follower.fd < 0:
                if not done:
                    keep.append(follower)
                continue
            if done and follower.quiet(now, self.config.rotate_grace) and self._drained(follower):
                if follower.nlink > 0:
                    self._siblings.remember(follower.label, follower)
                follower.close()
                self.stats.files_closed += 1
                continue
            keep.append(follower)
        self._detached = keep

    def _drained(self, follower: Follower) -> bool:
        try:
            follower.refresh()
        except OSError as exc:
            self._report(follower, exc)
            return False
        return follower.at_eof

    # -- bookkeeping -----------------------------------------------------------------------

    def _new_follower(
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

    def _followers(self) -> Iterator[Follower]:
        yield from self._attached.values()
        yield from self._detached

    def _name_of(self, follower: Follower) -> str:
        return next((p for p, f in self._attached.items() if f is follower), follower.label)

    def _report(self, follower: Follower, exc: OSError) -> None:
        self._failing[id(follower)] = follower
        self._set_error(self._name_of(follower), exc)

    def _set_error(self, path: str, exc: OSError) -> None:
        self.stats.count_error(exc)
        self._set_status(path, "error", f"{type(exc).__name__}: {exc}")

    def _set_status(self, path: str, state: FileState, error: str | None = None) -> None:
        old = self._status.get(path)
        if old is None or old.state != state or old.error != error:
            self._status[path] = FileStatus(path, state, error, self._clock.time())


def _watch_root(pattern: str) -> str:
    head = os.path.dirname(os.path.abspath(pattern))
    while glob.has_magic(head):
        head = os.path.dirname(head)
    return head


def _last_line_start(fd: int, size: int, limit: int) -> int:
    """Offset just after the last newline (where a tailer started "at the end" begins)."""
    pos = size
    while pos > 0 and size - pos <= limit:
        count = min(1 << 16, pos)
        pos -= count
        newline = read_at(fd, count, pos).rfind(b"\n")
        if newline >= 0:
            return pos + newline + 1
    return 0 if pos == 0 else size
