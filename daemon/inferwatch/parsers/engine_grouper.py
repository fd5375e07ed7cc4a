"""Group a traceback block's lines into one crash event (reference/engine.md 5.1 "Grouping").

The pure parser marks every exception line as a crash candidate; a Python traceback, though, is
one event: its final exception line is the root cause, and the File/code lines, the CUDA hint
lines and chained-exception headers around it are not new crashes. `TracebackGrouper` is fed the
records of one log stream in order and keeps one open block per emitting process (wrapper
service, process tag name and pid), so interleaved processes do not mix. A block opens on a
traceback header, an exception line, an incident anchor (`EngineCore encountered a fatal
error.`, `failed to start`, `output_handler failed`, `died unexpectedly`) or a request error,
and closes on the next unrelated line of the same process, a little after its final exception
line, after too many unrelated lines, or on `flush()`. Blocks with neither an exception line nor
an anchor (stray fragments) produce nothing. No I/O and no clock: call `flush()` at the end of
input, or when the stream has been idle for a while.

Only lines with an anchor (`engine_precheck`) move a block, and indented code right after one of
them: replay's scanner delivers exactly those, so a scanned replay groups like a full read. An
access-log line, a warning or another library's line neither closes a block nor counts toward
its gap, and code lines elsewhere (a second code line, a caret line, code interleaved with other
processes' lines) are not part of any block.
"""

# No ``from __future__ import annotations`` here: a named tuple's string annotations each cost a
# compile() at import (typing.ForwardRef); evaluated ones cost nothing, and the scan workers
# fork only once the parsers are imported.
from dataclasses import dataclass
from typing import Literal, NamedTuple

from inferwatch.parsers.engine_precheck import traceback_code, unanchored
from inferwatch.parsers.engine_prefix import LinePrefix
from inferwatch.parsers.engine_records import (
    CRASH_SIGNATURES,
    FAULT_SIGNATURES,
    EngineCrash,
    EngineRecord,
    OtherLine,
    stopped_on_purpose,
)
from inferwatch.parsers.vllm_faults import STEP_FRAMES

__all__ = ["TracebackGroup", "TracebackGrouper"]

_Key = tuple[str | None, str | None, int | None]
_Part = Literal["opener", "header", "chain", "cont", "exc"]

# Crash lines that announce an incident rather than state its cause.
_OPENERS = frozenset(
    {
        "fatal_error", "startup_failed", "output_handler_failed", "engine_died", "worker_died",
        "worker_exception",
    }
)  # fmt: skip
_CHAIN = ("The above exception was the direct cause", "During handling of the above exception")
_HEADERS = ("Traceback (most recent call last)", "Process ", "Exception in ")


class TracebackGroup(NamedTuple):
    """One traceback block: `signature` is the most specific crash signature in it (the final
    exception line's unless an earlier line named a specific fault), else the opener's, else
    "exception"; `root_cause` the final exception line's message; `incident` whether it means
    the engine died (see `engine_records.FAULT_SIGNATURES`), as opposed to a request error, a
    process ended by a stop signal, or a worker's exception outside a model step (an RPC such as
    adding a LoRA adapter fails and the engine lives on). `gpu` is the GPU index a line of the
    block named (CUDA OOM)."""

    @property
    def type(self) -> Literal["engine_crash"]:
        return "engine_crash"

    prefix: LinePrefix
    first_line: int
    last_line: int
    line_count: int
    opener: str | None
    signature: str
    exception: str | None
    root_cause: str | None
    incident: bool
    gpu: int | None = None

    def to_dict(self) -> dict[str, object]:
        return {
            "type": self.type, "signature": self.signature, "exception": self.exception,
            "root_cause": self.root_cause, "opener": self.opener, "incident": self.incident,
            "line": self.first_line, "last_line": self.last_line, "line_count": self.line_count,
            "gpu": self.gpu, "prefix": self.prefix.to_dict(),
        }  # fmt: skip


@dataclass(slots=True)
class _Block:
    prefix: LinePrefix
    first_line: int
    last_line: int
    opener: str | None = None
    opener_line: EngineCrash | None = None
    final: EngineCrash | None = None
    specific: str | None = None
    count: int = 0
    complete: bool = False
    want_traceback: bool = False
    gap: int = 0
    anchored_line: int = -1  # the block's last line with an anchor (not traceback code)
    step: bool = False  # a frame of a model step was seen (STEP_FRAMES)
    gpu: int | None = None

    def add(self, part: _Part, record: EngineRecord, line_no: int) -> None:
        self.count += 1
        self.last_line = line_no
        self.gap = 0
        if not traceback_code(record):
            self.anchored_line = line_no
        if isinstance(record, EngineCrash) and self.gpu is None:
            self.gpu = record.gpu
        elif part == "cont" and isinstance(record, OtherLine):
            self.step = self.step or record.text.rstrip().endswith(STEP_FRAMES)
        if part == "chain":
            self.complete = False
            self.want_traceback = True
        elif part == "header":
            self.want_traceback = False
        elif part == "exc" and isinstance(record, EngineCrash):
            self.final = record
            self.complete = True
            self.want_traceback = False
            if record.signature != "exception":
                self.specific = record.signature

    def result(self) -> TracebackGroup | None:
        opener_sig = self.opener if self.opener in CRASH_SIGNATURES else None
        if self.final is None and opener_sig is None:
            return None  # a stray fragment, or a request error without its exception
        final_sig = self.final.signature if self.final is not None else None
        if final_sig is not None and final_sig != "exception":
            signature = final_sig
        else:
            signature = self.specific or opener_sig or "exception"
        from_opener = self.final is None and self.specific is None
        incident = (
            (signature in FAULT_SIGNATURES and not from_opener)
            or self._fatal_opener()
            or (signature == "assertion" and self.opener is None)
        )
        return TracebackGroup(
            prefix=self.prefix,
            first_line=self.first_line,
            last_line=self.last_line,
            line_count=self.count,
            opener=self.opener,
            signature=signature,
            exception=self.final.exception if self.final is not None else None,
            root_cause=self.final.message if self.final is not None else None,
            incident=incident,
            gpu=self.gpu,
        )

    def _fatal_opener(self) -> bool:
        """The opening line alone says the engine died: not a request error, not a process
        ended by a stop signal, and a worker's exception only inside a model step."""
        if self.opener is None or self.opener == "request_error":
            return False
        if self.opener == "worker_exception":
            return self.step
        return self.opener_line is None or not stopped_on_purpose(self.opener_line)


def _part(record: EngineRecord | None) -> _Part | None:
    if isinstance(record, EngineCrash):
        if record.exception is None and record.signature in _OPENERS:
            return "opener"
        return "exc"
    if isinstance(record, OtherLine):
        if record.kind == "request_error":
            return "opener"
        if record.kind == "cuda_error_detail":
            return "cont"
        if record.kind == "traceback":
            if record.text.startswith(_CHAIN):
                return "chain"
            return "header" if record.text.startswith(_HEADERS) else "cont"
    return None


def _key(record: EngineRecord) -> _Key:
    """The emitting process: wrapper service, process tag name and pid."""
    return (record.prefix.service, record.prefix.proc, record.prefix.pid)


class TracebackGrouper:
    """Feed records (or lines) in log order; collect the finished groups each call returns."""

    def __init__(self, *, settle_lines: int = 2, max_gap: int = 50, max_lines: int = 2000) -> None:
        self._open: dict[_Key, _Block] = {}
        self._settle = settle_lines
        self._max_gap = max_gap
        self._max_lines = max_lines

    @property
    def idle(self) -> bool:
        """No block is open: a record that opens none (stats, SpecDecoding) changes nothing."""
        return not self._open

    def feed(self, record: EngineRecord | None, line_no: int = 0) -> list[TracebackGroup]:
        """Take the next record of the stream (None for a line that parsed to nothing); a
        record without an anchor that :meth:`moves` rejects changes nothing."""
        out: list[TracebackGroup] = []
        if record is not None and not self.moves(record, line_no):
            return out
        part = _part(record)
        key: _Key | None = None
        if record is not None:
            key = _key(record)
        for other_key in list(self._open):
            if other_key == key:
                continue
            waiting = self._open[other_key]
            waiting.gap += 1
            if (waiting.complete and waiting.gap >= self._settle) or waiting.gap >= self._max_gap:
                self._close(other_key, out)
        if record is None or key is None:
            return out
        if part is None:
            self._close(key, out)
            return out
        block = self._open.get(key)
        if block is not None and self._starts_new(block, part):
            self._close(key, out)
            block = None
        if block is None:
            block = _Block(record.prefix, line_no, line_no)
            if part == "opener":
                if isinstance(record, EngineCrash):
                    block.opener, block.opener_line = record.signature, record
                else:
                    block.opener = "request_error"
                block.want_traceback = True
            self._open[key] = block
        block.add(part, record, line_no)
        if block.count >= self._max_lines:
            self._close(key, out)
        return out

    def incident_open(self, record: EngineRecord) -> bool:
        """Whether the open block of ``record``'s process, as it stands, means the engine died:
        the line that makes it so is the first that identifies a crash."""
        block = self._open.get(_key(record))
        if block is None:
            return False
        group = block.result()
        return group is not None and group.incident

    def flush(self) -> list[TracebackGroup]:
        """Close every open block (end of input, or the stream went quiet)."""
        out: list[TracebackGroup] = []
        for key in list(self._open):
            self._close(key, out)
        return out

    def moves(self, record: EngineRecord, line_no: int) -> bool:
        """Whether the record may change the open blocks: any record with an anchor, and
        traceback code on the line right after an anchored line of its process's open block
        (the scanner always delivers the line after a hit); no other record without one."""
        if not unanchored(record):
            return True
        if not traceback_code(record):
            return False
        block = self._open.get(_key(record))
        return block is not None and line_no == block.anchored_line + 1

    @staticmethod
    def _starts_new(block: _Block, part: _Part) -> bool:
        if part == "opener":
            return True
        if part == "header":
            return block.complete and not block.want_traceback
        return False

    def _close(self, key: _Key, out: list[TracebackGroup]) -> None:
        block = self._open.pop(key, None)
        if block is not None:
            group = block.result()
            if group is not None:
                out.append(group)
