"""Kernel-log lines: strip whatever prefix the log path added, and read raw /dev/kmsg records.

A kernel message reaches us through several paths (reference/xid.md section 2, kernel-log.md
sections 2 and 6): bare text (journald MESSAGE, pastes), `dmesg` with kernel seconds, caller ids,
`-T`/`--ctime` wall times, `--time-format iso` with `--decode` facility and level, syslog and
journalctl headers (any locale's month names), wrappers added by other tools, and raw kmsg
records. `parse_kernel_line` peels those layers and returns the message body with the time
information exactly as found; nothing here fails on an unfamiliar prefix, it only leaves the time
unknown. `RecordAssembler` joins the indented continuation lines `dmesg` prints for a multi-line
record. Carriers that wrap every line (`talosctl dmesg`'s `node: kern: warning: [ISO]: `,
docker compose's `svc-1  | `, a bare `  | `) are peeled first, so continuation lines inside them
join as well. Everything here is pure: no I/O, no clock.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone

from inferwatch.model import FACILITY_NAMES, LEVEL_NAMES
from inferwatch.parsers.months import month_number

PLACEHOLDER_YEAR = 2000
"""Year put into `KernelLine.wall` when the prefix has none (a leap year, so Feb 29 survives)."""

_MAX_LAYERS = 8

# `[  123.456789] `: seconds since boot, padding varies.
_KSECONDS = re.compile(r"\[\s*(\d+\.\d+)\]\s?")
# The same, followed directly by a message (no caller id, no second layer).
_KSECONDS_ONLY = re.compile(r"\[\s*(\d+\.\d+)\] (?=[^\s\[])")
# `[ T1946] ` / `[C3] `: printk caller id (task or CPU).
_CALLER = re.compile(r"\[\s*([TC]\d+)\]\s?")
# `[Sun Feb 23 16:24:18 2025] ` (dmesg -T / --ctime); day and month names may be localised.
_CTIME = re.compile(r"\[\S+ (\S+) +(\d{1,2}) (\d{1,2}):(\d{2}):(\d{2}) (\d{4})\]\s?")
# `[…] ` or `[...] ` as in documentation, `[  +0.000004] ` / `[<   0.000004>] ` (dmesg delta).
_UNTIMED_BRACKET = re.compile(r"\[(?:…|\.\.\.|\s*\+\d+\.\d+|<\s*\d+\.\d+>)\]\s?")
# `2025-01-21T04:41:44,283575+00:00 ` (dmesg iso uses a comma; rsyslog RFC 3339 a dot).
_ISO = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2}):(\d{2})(?:[.,](\d{1,9}))?"
    r"(Z|[+-]\d{2}(?::?\d{2})?)?\s+"
)
# `May 13 17:18:47 ` syslog / journalctl short; the month is any word (German `Okt`, `12月`).
_SYSLOG = re.compile(r"(\S+) +(\d{1,2}) (\d{1,2}):(\d{2}):(\d{2})(?:\.\d+)? +")
# `kern  :warn  : ` from `dmesg --decode`.
_DECODE = re.compile(r"([a-z]+[0-7]?) *:([a-z]+) *: ")
# `hyperion kernel: ` or `kernel: ` after a timestamp; a bare `kernel: ` at the start.
_HOST_KERNEL = re.compile(r"(?:([^\s:\[]+) +)?kernel: ?")
# `host tag[pid]: ` after a syslog timestamp, for lines other programs wrote.
_HOST_TAG = re.compile(r"([^\s:\[]+) +([^\s:\[]+)(?:\[\d+\])?: ")
# An indented line that starts with one of these is a prefixed record, not a continuation.
_INDENTED_PREFIX = re.compile(
    r"\[\s*[\d.+<]|\[\S+ \S+ +\d{1,2} \d|\d{4}-\d{2}-\d{2}[T ]\d|\S+ +\d{1,2} \d{1,2}:\d{2}:\d{2} "
)
# `node1: kern: warning: [2026-03-02T08:14:55.120044871Z]: ` (talosctl dmesg; fields padded).
_TALOS = re.compile(
    r"(\S+): +([a-z]+[0-7]?): +([a-z]+): \[(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:[.,]\d{1,9})?"
    r"(?:Z|[+-]\d{2}(?::?\d{2})?))\]: "
)
_TALOS_LEVELS = {name: name for name in LEVEL_NAMES} | {"warning": "warn", "error": "err"}
# `vllm-1  | ` (docker compose) or `  | ` (a pasted table or quote): carries the whole line.
_CARRIER = re.compile(r"(?:[A-Za-z0-9][\w.-]*)? +\| ")
_KMSG_ESCAPE = re.compile(rb"\\x([0-9a-fA-F]{2})")
# `12,36072,1809884084,-;` a raw kmsg header pasted in front of its text.
_KMSG_HEADER = re.compile(r"(\d{1,4}),\d+,(\d+),[^,;]*(?:,[^;]*)?;")


@dataclass(frozen=True, slots=True)
class KernelLine:
    """One kernel-log line with its prefix taken apart.

    `wall` is naive local time for `dmesg -T` and syslog prefixes, aware for ISO prefixes that
    carry an offset. When the prefix has no year (`year_missing`), `wall` carries
    `PLACEHOLDER_YEAR`; use `wall_in_year`. `continuation` marks an indented, prefix-less line
    that belongs to the record above it.
    """

    message: str
    kernel_seconds: float | None = None
    wall: datetime | None = None
    year_missing: bool = False
    host: str | None = None
    tag: str | None = None
    caller: str | None = None
    facility: str | None = None
    level: str | None = None
    wrapper: str | None = None
    continuation: bool = False

    def wall_in_year(self, year: int) -> datetime | None:
        """The wall time with `year` filled in where the prefix had none (None if impossible)."""
        if self.wall is None or not self.year_missing:
            return self.wall
        try:
            return self.wall.replace(year=year)
        except ValueError:
            return None


@dataclass(frozen=True, slots=True)
class KmsgRecord:
    """One record read from /dev/kmsg (Documentation/ABI/testing/dev-kmsg).

    `message` is unescaped and decoded; a multi-line kernel message keeps its newlines.
    `fields` holds the dictionary lines (` SUBSYSTEM=pci`, ` DEVICE=+pci:0000:01:00.0`).
    """

    facility: int
    level: int
    seq: int
    usec: int
    flags: str
    message: str
    caller: str | None = None
    fields: dict[str, str] = field(default_factory=dict)

    @property
    def monotonic_seconds(self) -> float:
        """Seconds since boot on the printk clock."""
        return self.usec / 1_000_000

    @property
    def level_name(self) -> str:
        return LEVEL_NAMES[self.level]

    def to_kernel_line(self) -> KernelLine:
        """The record as a `KernelLine`, so text files and kmsg feed the same parsers."""
        return KernelLine(
            message=self.message,
            kernel_seconds=self.monotonic_seconds,
            caller=self.caller,
            facility=_facility_name(self.facility),
            level=self.level_name,
        )


def _facility_name(number: int) -> str | None:
    return FACILITY_NAMES[number] or None if number < len(FACILITY_NAMES) else None


def parse_kernel_line(line: str) -> KernelLine:
    """Take the prefix of one kernel-log line (or assembled record) apart; never raises."""
    text = strip_carrier(line.rstrip("\r\n"))
    first = text[:1]
    if first == "[" and "kernel:" not in text and "NVRM:" not in text:
        simple = _KSECONDS_ONLY.match(text)  # the common `[  123.456789] message`, fast
        if simple:
            return KernelLine(message=text[simple.end() :], kernel_seconds=float(simple[1]))
    elif first in (" ", "\t"):
        body = text.lstrip(" \t")
        if not _INDENTED_PREFIX.match(body):
            return KernelLine(message=body, continuation=bool(body))
        text = body
    found = _Found()
    pos = _peel(text, found)
    message = text[pos:]
    if found.kmsg and "\\x" in message:
        message = unescape_kmsg(message)
    wrapper = None
    anchor = message.find("NVRM:")
    if anchor > 0 and message[anchor - 1] == " " and "\n" not in message[:anchor]:
        wrapper, message = message[:anchor].rstrip(), message[anchor:]
    return KernelLine(
        message=message,
        kernel_seconds=found.kernel_seconds,
        wall=found.wall,
        year_missing=found.year_missing,
        host=found.host,
        tag=found.tag,
        caller=found.caller,
        facility=found.facility,
        level=found.level,
        wrapper=wrapper,
    )


class _Found:
    """What the prefix layers peeled so far have said (scratch state of one parse)."""

    __slots__ = ("caller", "facility", "host", "kernel_seconds", "kmsg", "level", "tag", "timed",
                 "wall", "year_missing")  # fmt: skip

    def __init__(self) -> None:
        self.kernel_seconds: float | None = None
        self.wall: datetime | None = None
        self.year_missing = False
        self.host: str | None = None
        self.tag: str | None = None
        self.caller: str | None = None
        self.facility: str | None = None
        self.level: str | None = None
        self.timed = False
        self.kmsg = False


def _peel(text: str, found: _Found) -> int:
    """Consume prefix layers from the start of `text`, recording what they say; return the end."""
    pos = 0
    for _ in range(_MAX_LAYERS):
        first = text[pos : pos + 1]
        if first == "[":
            end = _peel_bracket(text, pos, found)
        elif first.isdigit():
            end = _peel_iso(text, pos, found)
        else:
            end = _peel_word(text, pos, found)
        if end == pos:
            break
        pos = end
    return pos


def _peel_bracket(text: str, pos: int, found: _Found) -> int:
    match = _KSECONDS.match(text, pos)
    if match:
        found.kernel_seconds, found.timed = float(match[1]), True
        return match.end()
    match = _CALLER.match(text, pos)
    if match:
        found.caller = match[1]
        return match.end()
    match = _CTIME.match(text, pos)
    if match:
        month = month_number(match[1])
        found.wall, found.timed = _datetime(match[6], month, match.groups()[1:5]), True
        return match.end()
    match = _UNTIMED_BRACKET.match(text, pos)
    return match.end() if match else pos


def _peel_iso(text: str, pos: int, found: _Found) -> int:
    match = _ISO.match(text, pos)
    if not match:
        end = _peel_kmsg_header(text, pos, found)
        return end if end != pos else _peel_word(text, pos, found)
    year, month, day, hour, minute, second, fraction, offset = match.groups()
    wall = _datetime(year, int(month), (day, hour, minute, second))
    if wall is not None and fraction:
        wall = wall.replace(microsecond=int(fraction[:6].ljust(6, "0")))
    if wall is not None and offset:
        zone = _zone(offset)
        wall = wall.replace(tzinfo=zone) if zone is not None else None
    found.wall, found.timed = wall, True
    return _peel_host(text, match.end(), found, generic=False)


def _peel_kmsg_header(text: str, pos: int, found: _Found) -> int:
    match = _KMSG_HEADER.match(text, pos)
    if not match:
        return pos
    prio = int(match[1])
    found.kernel_seconds, found.timed, found.kmsg = int(match[2]) / 1_000_000, True, True
    found.level, found.facility = LEVEL_NAMES[prio & 7], _facility_name(prio >> 3)
    return match.end()


def _peel_word(text: str, pos: int, found: _Found) -> int:
    if not found.timed:
        match = _TALOS.match(text, pos)
        level = _TALOS_LEVELS.get(match[3]) if match else None
        if match and level is not None:
            found.host, found.facility, found.level = match[1], match[2], level
            found.wall, found.timed = _iso_datetime(match[4]), True
            return match.end()
    match = _DECODE.match(text, pos) if text.find(":", pos, pos + 10) > pos else None
    if match and match[2] in LEVEL_NAMES:
        found.facility, found.level = match[1], match[2]
        return match.end()
    if not found.timed:
        match = _SYSLOG.match(text, pos)
        if match:
            month = month_number(match[1])
            found.wall = _datetime(PLACEHOLDER_YEAR, month, match.groups()[1:])
            found.year_missing = found.timed = True
            return _peel_host(text, match.end(), found, generic=True)
    if found.tag is None and "kernel:" in text:
        return _peel_host(text, pos, found, generic=False, host_allowed=found.timed)
    return pos


def _peel_host(
    text: str, pos: int, found: _Found, *, generic: bool, host_allowed: bool = True
) -> int:
    """After a timestamp: `host kernel: `, `kernel: `, or (syslog only) `host tag[pid]: `."""
    match = _HOST_KERNEL.match(text, pos)
    if match and (host_allowed or match[1] is None):
        found.tag, found.host = "kernel", match[1] or found.host
        return match.end()
    if generic:
        match = _HOST_TAG.match(text, pos)
        if match:
            found.host, found.tag = match[1], match[2]
            return match.end()
    return pos


def _datetime(year: str | int, month: int | None, clock: Sequence[str]) -> datetime | None:
    """Build a naive datetime from a year, a month number and (day, hour, minute, second)."""
    if month is None:
        return None
    day, hour, minute, second = clock
    try:
        return datetime(int(year), month, int(day), int(hour), int(minute), int(second))
    except ValueError:
        return None


def _iso_datetime(text: str) -> datetime | None:
    """An ISO 8601 time with an offset (`2026-03-02T08:14:55.120044871Z`), aware; None if
    impossible. Fractions beyond microseconds are cut."""
    match = _ISO.match(text + " ")
    if not match:
        return None
    year, month, day, hour, minute, second, fraction, offset = match.groups()
    wall = _datetime(year, int(month), (day, hour, minute, second))
    if wall is None:
        return None
    if fraction:
        wall = wall.replace(microsecond=int(fraction[:6].ljust(6, "0")))
    zone = _zone(offset) if offset else None
    return wall.replace(tzinfo=zone) if zone is not None else None


def _zone(offset: str) -> timezone | None:
    if offset == "Z":
        return UTC
    digits = offset[1:].replace(":", "")
    minutes = int(digits[:2]) * 60 + (int(digits[2:4]) if len(digits) >= 4 else 0)
    if minutes >= 24 * 60:
        return None
    return timezone(timedelta(minutes=-minutes if offset[0] == "-" else minutes))


def strip_carrier(text: str) -> str:
    """`text` without a docker compose `svc-1  | ` or bare `  | ` carrier, else unchanged."""
    if "| " not in text[:64]:
        return text
    match = _CARRIER.match(text)
    return text[match.end() :] if match else text


def is_continuation(line: str) -> bool:
    """Whether a raw line continues the record above it (indented, no prefix of its own)."""
    text = strip_carrier(line.rstrip("\r\n"))
    if text[:1] not in (" ", "\t"):
        return False
    body = text.lstrip(" \t")
    return bool(body) and not _INDENTED_PREFIX.match(body)


def unescape_kmsg(text: str) -> str:
    """Undo /dev/kmsg's `\\xNN` escaping, then decode UTF-8 with replacement."""
    if "\\x" not in text:
        return text
    raw = _KMSG_ESCAPE.sub(lambda m: bytes.fromhex(m[1].decode()), text.encode("utf-8", "replace"))
    return raw.decode("utf-8", "replace")


def parse_kmsg_record(record: bytes | str) -> KmsgRecord | None:
    """Parse one `prio,seq,usec,flags[,...];text` record with its dictionary; None if malformed."""
    text = record.decode("utf-8", "replace") if isinstance(record, bytes) else record
    header, sep, rest = text.partition(";")
    if not sep:
        return None
    parts = header.split(",")
    if len(parts) < 4 or not all(p.isdigit() and p.isascii() for p in parts[:3]):
        return None
    prio, seq, usec = int(parts[0]), int(parts[1]), int(parts[2])
    caller = next((p[7:] for p in parts[4:] if p.startswith("caller=")), None)
    lines = rest.rstrip("\n").split("\n")
    fields: dict[str, str] = {}
    for extra in lines[1:]:
        key, eq, value = extra[1:].partition("=")
        if extra.startswith(" ") and eq and key:
            fields[key] = unescape_kmsg(value)
    return KmsgRecord(
        facility=prio >> 3,
        level=prio & 7,
        seq=seq,
        usec=usec,
        flags=parts[3],
        message=unescape_kmsg(lines[0]),
        caller=caller,
        fields=fields,
    )


@dataclass(frozen=True, slots=True)
class RawRecord:
    """One kernel record as text: its first line plus its continuation lines, and where it began."""

    text: str
    line_no: int


class RecordAssembler:
    """Joins `dmesg`'s indented continuation lines to the record above them, on raw text.

    Feed lines in file order; `feed` returns the previous record once a new one starts, and
    `flush` returns the last one. Continuation lines are appended without their indentation,
    separated by newlines, as journald and kmsg deliver multi-line records; the result goes to
    `parse_kernel_line` (or straight to a parser's cheap pre-check first: nothing here runs a
    regex on an ordinary line). Blank lines are skipped.
    """

    __slots__ = ("_line_no", "_pending")

    def __init__(self) -> None:
        self._pending: str | None = None
        self._line_no = 0

    def feed(self, line: str, line_no: int = 0) -> RawRecord | None:
        """Add one line (with its 1-based number); return the record it completed, if any."""
        text = strip_carrier(line.rstrip("\r\n"))
        if text[:1] in (" ", "\t"):
            body = text.lstrip(" \t")
            if not body:
                return None
            if self._pending is not None and not _INDENTED_PREFIX.match(body):
                self._pending = f"{self._pending}\n{body}"
                return None
            text = body
        elif not text:
            return None
        done = self.flush()
        self._pending, self._line_no = text, line_no
        return done

    def flush(self) -> RawRecord | None:
        """Return the record still being assembled, if any, and forget it."""
        if self._pending is None:
            return None
        done = RawRecord(self._pending, self._line_no)
        self._pending = None
        return done
