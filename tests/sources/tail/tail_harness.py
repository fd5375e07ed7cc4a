"""Test harness for the tailer: a fake-clock driver with a sink, and writers of unique lines.

The sink records every delivered line and acknowledges it (unless blocked), then saves the
checkpoint, exactly as a consumer that commits state and checkpoint together would; ``crash()``
restarts from the last saved checkpoint and keeps only what had been committed, ``restart()``
is the graceful variant.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from inferwatch.clock import FakeClock
from inferwatch.sources.tail.tailer import TailConfig, Tailer, TailLine


def numbered(prefix: str, count: int, start: int = 0, width: int = 40) -> list[str]:
    """Unique, fixed-width lines: ``<prefix>-000001 xxxx``."""
    return [f"{prefix}-{i:06d} ".ljust(width, "x") for i in range(start, start + count)]


def encode(lines: Iterable[str]) -> bytes:
    return "".join(f"{line}\n" for line in lines).encode()


class Harness:
    """Drives a :class:`Tailer` with a :class:`FakeClock`; ``tick()`` is one poll."""

    def __init__(
        self,
        directory: Path,
        *,
        paths: tuple[str, ...] | None = None,
        clock: FakeClock | None = None,
        checkpoint: dict[str, Any] | None = None,
        committed: list[TailLine] | None = None,
        **options: Any,
    ) -> None:
        self.dir = directory
        self.path = str(directory / "app.log")
        self.clock = clock or FakeClock()
        options.setdefault("rotate_grace", 5.0)
        self.options = options
        self.config = TailConfig(paths=paths or (self.path,), **options)
        self.tailer = Tailer(self.config, clock=self.clock, checkpoint=checkpoint)
        self.delivered: list[TailLine] = []
        self.committed: list[TailLine] = list(committed or [])
        self.saved: dict[str, Any] | None = checkpoint
        self.acks = True
        self.stopped = False

    # -- driving -------------------------------------------------------------------------

    def tick(self, advance: float = 0.0) -> list[TailLine]:
        """Advance the fake clock, poll once (draining a budget-limited backlog), acknowledge."""
        if advance:
            self.clock.advance(advance)
        got = self.tailer.poll()
        self.delivered.extend(got)
        if self.acks:
            self.ack_all()
        return got

    def ack_all(self) -> None:
        pending = self.delivered[len(self.committed) :]
        if pending:
            self.tailer.ack(pending[-1].position)
            self.committed.extend(pending)
        self.saved = self.tailer.checkpoint()

    def settle(self, rounds: int = 4) -> None:
        """Let every rotated file pass its grace period and be drained and closed."""
        grace = self.config.rotate_grace
        for _ in range(rounds):
            self.tick(advance=grace + 1)
            while self.tailer.more:
                self.tick()

    def drain(self) -> None:
        self.tick()
        while self.tailer.more:
            self.tick()

    def stop(self) -> None:
        """Graceful stop: acknowledge and save everything delivered, close the files."""
        if not self.stopped:
            self.ack_all()
            self.tailer.close()
            self.stopped = True

    def restart(self, **changes: Any) -> Harness:
        """Graceful stop (unless already stopped) and start from the checkpoint."""
        self.stop()
        return self._successor(self.saved, **changes)

    def crash(self) -> Harness:
        """kill -9: whatever was delivered but not committed is forgotten."""
        self.tailer.close()
        self.stopped = True
        return self._successor(self.saved)

    def _successor(self, checkpoint: dict[str, Any] | None, **changes: Any) -> Harness:
        options = {**self.options, **changes}
        nxt = Harness(
            self.dir,
            paths=self.config.paths,
            clock=self.clock,
            checkpoint=checkpoint,
            committed=self.committed,
            **options,
        )
        nxt.delivered = list(self.committed)
        return nxt

    # -- views ---------------------------------------------------------------------------

    def texts(self) -> list[str]:
        return [line.text for line in self.delivered]

    def texts_of(self, prefix: str) -> list[str]:
        return [text for text in self.texts() if text.startswith(prefix)]

    def assert_exactly(self, expected: Iterable[str]) -> None:
        """Each expected line delivered exactly once and nothing else (multiset equality)."""
        want = list(expected)
        got = Counter(self.texts())
        dup = {text: n for text, n in got.items() if n > 1}
        assert not dup, f"duplicated: {list(dup)[:5]}"
        missing = [text for text in want if text not in got]
        assert not missing, f"lost {len(missing)}: {missing[:5]}"
        extra = set(got) - set(want)
        assert not extra, f"unexpected: {sorted(extra)[:5]}"


class AppendWriter:
    """A writer with O_APPEND (what ``open(p, "ab")`` and logging handlers do)."""

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        self.file = open(self.path, "ab", buffering=0)  # noqa: SIM115

    def write(self, data: bytes | str) -> None:
        self.file.write(data.encode() if isinstance(data, str) else data)

    def lines(self, lines: Iterable[str]) -> None:
        self.write(encode(lines))

    def close(self) -> None:
        self.file.close()


class PwriteWriter:
    """A writer without O_APPEND: it writes at its own remembered offset, as after copytruncate."""

    def __init__(self, path: str | Path) -> None:
        self.fd = os.open(str(path), os.O_WRONLY | os.O_CREAT, 0o644)
        self.offset = 0

    def lines(self, lines: Iterable[str]) -> None:
        data = encode(lines)
        os.pwrite(self.fd, data, self.offset)
        self.offset += len(data)

    def close(self) -> None:
        os.close(self.fd)
