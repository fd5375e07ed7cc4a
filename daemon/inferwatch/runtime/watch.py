"""Bridge from watchdog's observer thread to the asyncio loop: "something changed here, look".

One :class:`FileWatcher` owns one watchdog ``Observer`` (a thread) for the whole daemon. Async
code subscribes to a directory or file with a callback; watchdog events are handed to the loop
with ``call_soon_threadsafe`` and the callback runs in the loop thread (typically it sets an
``asyncio.Event``).

This is only a wake-up hint, never the source of truth: inotify drops events when its queue
overflows, does not follow a file moved into place, and cannot be had at all past the
``max_user_watches`` / ``max_user_instances`` limits. Consumers therefore also poll on a timer,
and this module degrades instead of failing:

- a path that does not exist yet is served by watching its nearest existing ancestor, and the
  watch moves down as directories appear (:meth:`Subscription.refresh`);
- if the observer cannot start, or a directory cannot be watched (``ENOSPC``, ``EMFILE``), the
  watcher reports ``mode == "polling"`` / :attr:`FileWatcher.unwatched` and wakes nobody:
  the consumers' stat interval carries on alone;
- watchdog reports a kernel queue overflow only through its logger, so a logging hook turns that
  warning into :meth:`FileWatcher.notify_overflow`, which wakes every subscriber at once for a
  full rescan (tests call it directly).

Events are coalesced per directory: a burst of writes costs one loop callback, not one each.
"""

# watchdog hands paths over as strings and we compare them as strings: os.path, not pathlib.
# ruff: noqa: PTH100, PTH112, PTH116, PTH119, PTH120

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Literal, Protocol

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer

Mode = Literal["stopped", "inotify", "polling"]

#: The logger through which watchdog's inotify reader announces ``IN_Q_OVERFLOW``.
OVERFLOW_LOGGER = "watchdog.observers.inotify_c"


class ObserverLike(Protocol):
    """The part of watchdog's observer API used here (so tests can inject a failing one)."""

    def start(self) -> None: ...

    def stop(self) -> None: ...

    def join(self, timeout: float | None = None) -> None: ...

    def schedule(self, event_handler: Any, path: str, *, recursive: bool = False) -> Any: ...

    def unschedule(self, watch: Any) -> None: ...


class Subscription:
    """Interest of one consumer in one path; ``callback`` runs in the loop thread."""

    def __init__(self, watcher: FileWatcher, path: str, callback: Callable[[], None]) -> None:
        self.path = path
        self.callback = callback
        self.watched: str | None = None
        self._watcher = watcher

    def refresh(self) -> None:
        """Re-aim the watch at the nearest existing directory (the target may have appeared)."""
        self._watcher.bind(self, nearest_directory(self.path))

    def close(self) -> None:
        self._watcher.unbind(self)

    def wants(self, names: set[str]) -> bool:
        """Whether events on these names (in the watched directory) concern this target."""
        if self.watched != os.path.dirname(self.path):
            return True  # the target is the directory itself, or an ancestor stands in for it
        base = os.path.basename(self.path)
        return any(not name or name.startswith(base) for name in names)


@dataclass(slots=True)
class _DirWatch:
    path: str
    ino: int
    subs: set[Subscription] = field(default_factory=set)
    watch: Any = None
    pending: set[str] = field(default_factory=set)
    queued: bool = False


class _Bridge(FileSystemEventHandler):
    """Runs in the observer thread: note the event and queue one wake-up for the loop."""

    def __init__(self, watcher: FileWatcher, directory: str) -> None:
        super().__init__()
        self._watcher = watcher
        self._directory = directory

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type in _NOT_A_CHANGE:
            return  # someone read the file (the daemon itself, reloading): nothing changed
        if event.event_type == "modified" and os.fsdecode(event.src_path) == self._directory:
            return  # "the directory changed" accompanies every create/delete: no information
        names = {_name_in(self._directory, event.src_path)}
        if event.dest_path:
            names.add(_name_in(self._directory, event.dest_path))
        self._watcher.from_thread(self._directory, names)


_NOT_A_CHANGE = frozenset({"opened", "closed_no_write"})
"""watchdog >= 5 also reports opens and read-only closes; reacting to them turns every read of a
watched file (a rule reload reads its files) into another "change", for ever."""


class _OverflowHook(logging.Handler):
    def __init__(self, watcher: FileWatcher) -> None:
        super().__init__(logging.WARNING)
        self._watcher = watcher

    def emit(self, record: logging.LogRecord) -> None:
        if "overflow" in record.getMessage().lower():
            self._watcher.notify_overflow()


class FileWatcher:
    """Owns the observer thread; maps directories to subscribers; never raises on watch limits."""

    def __init__(self, *, observer_factory: Callable[[], ObserverLike] | None = None) -> None:
        self._factory: Callable[[], ObserverLike] = observer_factory or Observer
        self._observer: ObserverLike | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()
        self._dirs: dict[str, _DirWatch] = {}
        self._hook = _OverflowHook(self)
        self.mode: Mode = "stopped"
        self.error: str | None = None
        self.unwatched: set[str] = set()
        self.wakeups = 0
        self.overflows = 0

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        """Start the observer thread; call from the event loop's thread."""
        self._loop = asyncio.get_running_loop()
        try:
            observer = self._factory()
            observer.start()
        except OSError as exc:
            self.mode = "polling"
            self.error = f"{type(exc).__name__}: {exc}"
            self.unwatched.update(self._dirs)
            return
        self._observer = observer
        self.mode = "inotify"
        logging.getLogger(OVERFLOW_LOGGER).addHandler(self._hook)
        for watch in self._dirs.values():
            self._schedule(watch)

    def stop(self, timeout: float = 5.0) -> None:
        """Stop and join the observer thread; subscriptions stay but are no longer woken."""
        logging.getLogger(OVERFLOW_LOGGER).removeHandler(self._hook)
        observer, self._observer = self._observer, None
        if observer is not None:
            observer.stop()
            with contextlib.suppress(RuntimeError):
                observer.join(timeout)
        for watch in self._dirs.values():
            watch.watch = None
        self.mode = "stopped"

    async def __aenter__(self) -> FileWatcher:
        self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await asyncio.to_thread(self.stop)

    # -- subscriptions -----------------------------------------------------------------------

    def subscribe(self, path: str, callback: Callable[[], None]) -> Subscription:
        """Call ``callback`` (in the loop thread) when ``path`` or something in it changes."""
        sub = Subscription(self, os.path.abspath(path), callback)
        sub.refresh()
        return sub

    def refresh(self) -> None:
        """Re-aim every subscription (cheap ``stat`` calls; consumers do this on their timer)."""
        for watch in list(self._dirs.values()):
            for sub in list(watch.subs):
                sub.refresh()

    def bind(self, sub: Subscription, directory: str) -> None:
        current = self._dirs.get(sub.watched) if sub.watched else None
        ino = _inode(directory)
        if current is not None and current.path == directory and current.ino == ino:
            return
        self.unbind(sub)
        watch = self._dirs.get(directory)
        if watch is not None and watch.ino != ino:  # the directory was replaced: watch anew
            self._drop(watch)
            watch = None
        if watch is None:
            watch = _DirWatch(directory, ino)
            self._dirs[directory] = watch
            self._schedule(watch)
        watch.subs.add(sub)
        sub.watched = directory

    def unbind(self, sub: Subscription) -> None:
        watch = self._dirs.get(sub.watched) if sub.watched else None
        sub.watched = None
        if watch is not None:
            watch.subs.discard(sub)
            if not watch.subs:
                self._drop(watch)

    # -- events ------------------------------------------------------------------------------

    def from_thread(self, directory: str, names: set[str]) -> None:
        """Observer thread: remember names; queue at most one loop callback per directory."""
        loop = self._loop
        watch = self._dirs.get(directory)
        if loop is None or watch is None:
            return
        with self._lock:
            watch.pending |= names
            if watch.queued:
                return
            watch.queued = True
        with contextlib.suppress(RuntimeError):  # the loop is closing: nobody to wake
            loop.call_soon_threadsafe(self._dispatch, watch)

    def notify_overflow(self) -> None:
        """Events were lost (inotify queue overflow): wake everybody for a full rescan."""
        loop = self._loop
        if loop is not None:
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(self._overflowed)

    def _dispatch(self, watch: _DirWatch) -> None:
        with self._lock:
            names, watch.pending = watch.pending, set()
            watch.queued = False
        for sub in list(watch.subs):
            if sub.wants(names):
                self.wakeups += 1
                sub.refresh()
                sub.callback()

    def _overflowed(self) -> None:
        self.overflows += 1
        self.refresh()
        for watch in list(self._dirs.values()):
            for sub in list(watch.subs):
                self.wakeups += 1
                sub.callback()

    # -- observer plumbing -------------------------------------------------------------------

    def _schedule(self, watch: _DirWatch) -> None:
        if self._observer is None:
            if self.mode == "polling":
                self.unwatched.add(watch.path)
            return
        try:
            watch.watch = self._observer.schedule(_Bridge(self, watch.path), watch.path)
        except OSError as exc:  # ENOSPC (max_user_watches), EMFILE, EACCES, vanished meanwhile
            self.error = f"{type(exc).__name__}: {exc}"
            self.unwatched.add(watch.path)
        else:
            self.unwatched.discard(watch.path)

    def _drop(self, watch: _DirWatch) -> None:
        self._dirs.pop(watch.path, None)
        self.unwatched.discard(watch.path)
        if self._observer is not None and watch.watch is not None:
            with contextlib.suppress(KeyError, OSError):
                self._observer.unschedule(watch.watch)
        watch.watch = None


def nearest_directory(path: str) -> str:
    """``path`` if it is a directory, else the closest existing directory above it."""
    current = path or "."
    while not os.path.isdir(current):
        parent = os.path.dirname(current) or "."
        if parent == current:
            break
        current = parent
    return current


def _inode(path: str) -> int:
    try:
        return os.stat(path).st_ino
    except OSError:
        return -1


def _name_in(directory: str, path: bytes | str) -> str:
    text = os.fsdecode(path)
    if text == directory:
        return ""
    return os.path.basename(text)
