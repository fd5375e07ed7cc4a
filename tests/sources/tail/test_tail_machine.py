"""Row 32: random sequences of writes, rotations, truncations, deletions, symlink swaps, restarts
and crashes against the tailer core (fake clock, real files), checking the delivery invariants.

Invariants, over what the consumer committed (acknowledged lines, checkpointed with them):
- nothing is delivered twice, nothing unknown is delivered, no NUL byte reaches a line;
- every complete line is delivered exactly once, except lines that the model marks as losable:
  truncated without a copy before being committed, or in a file that left the namespace
  (deleted, or an old symlink target) before it was opened or across a restart;
- a line left unterminated in a rotated file is delivered once, marked partial.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, precondition, rule

from inferwatch.clock import FakeClock
from inferwatch.sources.tail.tailer import TailConfig, Tailer, TailLine
from sources.tail.tail_harness import AppendWriter, PwriteWriter

MAX_LINE = 200
GRACE = 5.0


@dataclass
class FileModel:
    name: str
    writer: AppendWriter | PwriteWriter
    lines: list[str] = field(default_factory=list)
    pending: tuple[str, int] | None = None  # (line, bytes written) of an unterminated line
    opened: bool = False  # the tailer has (had) it open
    in_namespace: bool = True  # reachable by the live path or a rotated-sibling name
    lossy: bool = False  # anything written from now on may be lost
    retired: bool = False  # its writer writes no more
    dangling: str | None = None  # id of the unterminated line it was left with
    quiet_since: float = 0.0  # fake time of its last write, or of leaving the namespace

    def write(self, data: bytes) -> None:
        if isinstance(self.writer, AppendWriter):
            self.writer.write(data)
        else:
            os.pwrite(self.writer.fd, data, self.writer.offset)
            self.writer.offset += len(data)


class TailMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="tail-machine-"))
        self.path = str(self.dir / "app.log")
        self.clock = FakeClock()
        self.config = TailConfig(
            paths=(self.path,),
            rotate_grace=GRACE,
            max_line_bytes=MAX_LINE,
            read_chunk_bytes=97,
            poll_budget_bytes=3000,
        )
        self.tailer = Tailer(self.config, clock=self.clock)
        self.saved: dict[str, Any] | None = None
        self.committed: list[TailLine] = []
        self.uncommitted: list[TailLine] = []
        self.counter = 0
        self.names = 0
        self.files: list[FileModel] = []
        self.required: dict[str, str] = {}  # id -> full line
        self.losable: set[str] = set()
        self.dangling: dict[str, str] = {}  # id -> fragment
        self.live = self._new_live(append=True)
        self._poll(ack=True)  # the daemon is up before anything happens: nothing is history

    # -- helpers ---------------------------------------------------------------------------

    def _new_live(self, *, append: bool, target: str | None = None) -> FileModel:
        name = target or self.path
        writer: AppendWriter | PwriteWriter = AppendWriter(name) if append else PwriteWriter(name)
        model = FileModel(name, writer)
        self.files.append(model)
        return model

    def _line(self, body: int) -> str:
        self.counter += 1
        return f"L{self.counter:05d}" + "." * body

    def _emit_line(self, model: FileModel, line: str, data: bytes) -> None:
        model.write(data)
        model.quiet_since = self.clock.monotonic()
        model.lines.append(line)
        if model.lossy:
            self.losable.add(line[:6])
        self.required[line[:6]] = line

    def _committed_ids(self) -> set[str]:
        return {line.text[:6] for line in self.committed}

    def _mark_uncommitted_losable(self, model: FileModel) -> None:
        done = self._committed_ids()
        self.losable.update(line[:6] for line in model.lines if line[:6] not in done)
        if model.pending is not None:
            self.losable.add(model.pending[0][:6])
        if model.dangling is not None and model.dangling not in done:
            self.losable.add(model.dangling)

    def _poll(self, *, ack: bool) -> None:
        now = self.clock.monotonic()
        for model in self.files:
            # A deleted file quiet for the grace period may be closed by this poll; whatever a
            # late writer puts into it afterwards is unreachable (documented).
            if not model.in_namespace and now - model.quiet_since >= GRACE:
                model.lossy = True
        got = self.tailer.poll()
        self.uncommitted.extend(got)
        if self.live.in_namespace:
            self.live.opened = True
        if ack:
            self._commit()

    def _commit(self) -> None:
        if self.uncommitted:
            self.tailer.ack(self.uncommitted[-1].position)
            self.committed.extend(self.uncommitted)
            self.uncommitted = []
        self.saved = self.tailer.checkpoint()

    def _leave_namespace(self, model: FileModel) -> None:
        model.in_namespace = False
        model.quiet_since = self.clock.monotonic()
        if not model.opened:
            self._mark_uncommitted_losable(model)
            model.lossy = True

    def _retire_live(self) -> None:
        """The live file stops being live: an unterminated line in it dangles for ever."""
        if self.live.pending is not None:
            line, written = self.live.pending
            self.dangling[line[:6]] = line[:written]
            self.required.pop(line[:6], None)
            if self.live.lossy:
                self.losable.add(line[:6])
            self.live.pending = None
            self.live.retired = True
            self.live.dangling = line[:6]

    # -- rules -----------------------------------------------------------------------------

    @rule(count=st.integers(1, 4), body=st.integers(0, 260))
    def write(self, count: int, body: int) -> None:
        model = self.live
        if model.pending is not None:
            line, written = model.pending
            model.pending = None
            self._emit_line(model, line, line.encode()[written:] + b"\n")
        for _ in range(count):
            line = self._line(body)
            self._emit_line(model, line, line.encode() + b"\n")

    @rule(index=st.integers(0, 50), body=st.integers(0, 50))
    def write_to_an_old_file(self, index: int, body: int) -> None:
        old = [f for f in self.files if f is not self.live and not f.retired]
        if old:
            model = old[index % len(old)]
            line = self._line(body)
            self._emit_line(model, line, line.encode() + b"\n")

    @precondition(lambda self: self.live.pending is None)
    @rule(body=st.integers(6, 260), cut=st.integers(6, 300))
    def write_partial(self, body: int, cut: int) -> None:
        line = self._line(body)
        written = min(cut, len(line) - 1)
        self.live.write(line.encode()[:written])
        self.live.pending = (line, written)

    @rule(advance=st.sampled_from([0.0, 0.5, 3.0, GRACE + 1]))
    def tick(self, advance: float) -> None:
        self.clock.advance(advance)
        self._poll(ack=True)

    @rule()
    def tick_without_ack(self) -> None:
        self._poll(ack=False)

    @rule(append=st.booleans())
    def rename_rotation(self, append: bool) -> None:
        self.names += 1
        os.rename(self.path, f"{self.path}.{self.names}")
        self._retire_live()
        self.live = self._new_live(append=append)

    @precondition(lambda self: self.live.pending is None)
    @rule(copy=st.booleans())
    def copytruncate(self, copy: bool) -> None:
        if copy:
            self.names += 1
            shutil.copyfile(self.path, f"{self.path}.{self.names}")
        else:
            self._mark_uncommitted_losable(self.live)
        os.truncate(self.path, 0)

    @rule(append=st.booleans())
    def delete_and_recreate(self, append: bool) -> None:
        os.unlink(self.path)
        self._leave_namespace(self.live)
        self._retire_live()
        self.live = self._new_live(append=append)

    @rule(append=st.booleans())
    def symlink_swap(self, append: bool) -> None:
        self.names += 1
        target = str(self.dir / f"target-{self.names}.log")
        self._leave_namespace(self.live)
        self._retire_live()
        new = self._new_live(append=append, target=target)
        os.symlink(target, self.path + ".tmp")
        os.replace(self.path + ".tmp", self.path)
        self.live = new

    @rule()
    def restart(self) -> None:
        self._commit()
        self.tailer.close()
        self._restarted()

    @rule()
    def crash(self) -> None:
        self.tailer.close()
        self.uncommitted = []
        self._restarted()

    def _restarted(self) -> None:
        for model in self.files:
            model.opened = False  # a new process holds nothing open until it polls
            if not model.in_namespace:
                self._mark_uncommitted_losable(model)
                model.lossy = True
        self.tailer = Tailer(self.config, clock=self.clock, checkpoint=self.saved)

    # -- final check -----------------------------------------------------------------------

    def teardown(self) -> None:
        try:
            if self.live.pending is not None:
                self.write(0, 0)
            for model in self.files:
                model.writer.close()
            for _ in range(6):
                self.clock.advance(GRACE + 1)
                self._poll(ack=True)
                while self.tailer.more:
                    self._poll(ack=True)
            self._check()
        finally:
            self.tailer.close()
            shutil.rmtree(self.dir, ignore_errors=True)

    def _check(self) -> None:
        assert not any("\x00" in line.text for line in self.committed)
        complete = [line for line in self.committed if not line.partial]
        counts = Counter(line.text[:6] for line in complete)
        duplicated = [key for key, n in counts.items() if n > 1]
        assert not duplicated, f"duplicated: {duplicated}"
        assert set(counts) <= set(self.required), f"unknown: {set(counts) - set(self.required)}"
        for line in complete:
            full = self.required[line.text[:6]]
            assert line.text == full[:MAX_LINE]
            assert line.truncated == (len(full) > MAX_LINE)
        flushed = Counter()
        for line in self.committed:
            if line.partial:
                flushed[self._partial_owner(line.text, set(counts))] += 1
        assert all(n == 1 for n in flushed.values()), f"partial twice: {flushed}"
        for key in self.required:
            assert key in counts or key in self.losable, f"lost {key}"
        for key, fragment in self.dangling.items():
            assert key in flushed or key in self.losable, f"lost partial {key} {fragment!r}"

    def _partial_owner(self, text: str, complete: set[str]) -> str:
        """Which line a delivered partial line is the head of: a dangling one, or a line whose
        end was truncated away (losable) before it was read."""
        key = text[:6]
        if key in self.dangling and self.dangling[key][:MAX_LINE] == text:
            return key
        owners = [
            k
            for k, full in self.required.items()
            if full.startswith(text) and k in self.losable and k not in complete
        ]
        assert owners, f"partial line {text!r} belongs to no losable line"
        return owners[0] if len(owners) == 1 else f"?{text}"


TailMachine.TestCase.settings = settings(
    max_examples=int(os.environ.get("TAIL_MACHINE_EXAMPLES", "60")),
    stateful_step_count=int(os.environ.get("TAIL_MACHINE_STEPS", "30")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
test_tail_machine = TailMachine.TestCase
