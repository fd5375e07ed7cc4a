"""Strip an inference-engine log line from the outside in (reference/engine.md section 1).

    [wrapper][colour][(Proc pid=N) ]...[LEVEL MM-DD HH:MM:SS [file:NNN] ]message

`split_prefix` peels, in this order: the wrapper some collector added (docker/k8s RFC 3339
timestamp, compose `service  | `, a journald/syslog header in any locale, a foreign logger that
re-emits the line, e.g. KServe), ANSI colour codes (the ESC byte, its caret form `^[`, or
the remnant a paste leaves without either: `[0;0m`, `1;36m(`; ``engine_text``), the
`(Name pid=N)` process tags (nested tags: the innermost wins), and then one header: vLLM's
`LEVEL MM-DD HH:MM:SS [file:NNN]` (with or without the opening bracket), uvicorn's padded
`LEVEL:`, SGLang's `[date time DPn TPn]` bracket, torch's `[rankN]:[E... file:NNN]`, or another
library's `date time - LEVEL - logger - ` format. An unknown wrapper never stops the parse: the
anchors are searched near the start of the line, and whatever is not understood stays in the
message body. Pure: no I/O, no clock; the year is never guessed here.
"""

# No ``from __future__ import annotations`` here: a named tuple's string annotations each cost a
# compile() at import (typing.ForwardRef); evaluated ones cost nothing, and the scan workers
# fork only once the parsers are imported.
import re
from typing import NamedTuple

from inferwatch.parsers.engine_text import may_hold_colour, strip_colour

__all__ = ["EMPTY_PREFIX", "LEVELS", "LinePrefix", "split_prefix"]

LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
_LEVEL_ALIASES = {"WARN": "WARNING", "FATAL": "CRITICAL"}
_GLOG_LEVELS = {"I": "INFO", "W": "WARNING", "E": "ERROR", "F": "CRITICAL"}
_LEVEL_RE = r"DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL"
_STARTS_WITH_LEVEL = ("DEBUG", "INFO", "WARN", "ERROR", "CRITICAL")

# How far into a line anchors are searched when the start is not understood.
_SEARCH_SPAN = 200


# docker/k8s `--timestamps` (RFC 3339, UTC, ns); CRI log files add `stdout F `.
_DOCKER = re.compile(
    r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?) "
    r"(?:(?:stdout|stderr) [FP] )?"
)
# the `host ident[pid]: ` part of a journald/syslog header.
_SYSLOG_REST = re.compile(r"(\S+) ([^\s\[\]:]+)(?:\[\d+\])?: ")
# `Aug 19 18:34:30 ` / `авг  8 14:15:04 ` / ` 8月 18 14:15:04 `: any locale's month.
_SYSLOG_TS = re.compile(
    r"((?:[^\W\d_]{2,5}\.?|\d{1,2}月) +\d{1,2} \d\d:\d\d:\d\d(?:\.\d+)?) (\S+) ([^\s\[\]:]+)"
    r"(?:\[\d+\])?: "
)
_COMPOSE = re.compile(r"(\w[\w.-]*) +\| ")
# A foreign logger's `date time[.ms] [tokens]` in front of a recognisable inner line (KServe).
_FOREIGN_WRAPPER = re.compile(
    r"(\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?) (?:\S+ ){0,3}?"
    rf"(?=\([^()]*pid=\d+[^()]*\) |(?:{_LEVEL_RE})(?::\s| \d\d-\d\d \d\d:))"
)
_TAG = re.compile(r"\((?:([^()]*?) )?pid=(\d+)(?:, ip=[^()]*)?\) ?")
# vLLM `LEVEL MM-DD HH:MM:SS ` + `[file:NNN] ` (>= 0.8) or `file.py:NNN] ` (<= 0.7); pastes
# may damage the bracket (`[file.py:NNN[]`). Or uvicorn's `LEVEL:` padded with spaces.
_LEVEL_HEADER = re.compile(
    rf"({_LEVEL_RE})(?:(:) +|:$| (\d\d-\d\d \d\d:\d\d:\d\d(?:[.,]\d+)?)"
    r"(?: (?:\[[^\s\[\]]*:\d+(?:\]|\[\])|[^\s\[\]]+:\d+\]))?(?: |$))"
)
_LEVEL_HEADER_SEARCH = re.compile(
    rf"\b({_LEVEL_RE}) (\d\d-\d\d \d\d:\d\d:\d\d(?:[.,]\d+)?)"
    r"(?: (?:\[[^\s\[\]]*:\d+(?:\]|\[\])|[^\s\[\]]+:\d+\]))?(?: |$)"
)
# SGLang `[2025-02-27 04:46:39 TP0] `, `[04:40:55 TP0] `, `[… DP0 TP0] `, `[2026-04-05 20:02:51] `.
_SGLANG = re.compile(r"\[((?:\d{4}-\d\d-\d\d )?\d\d:\d\d:\d\d)((?: [A-Z]{2}\d+)*)\] ?")
_RANK_TOKEN = re.compile(r"([A-Z]{2})(\d+)")
# torch C++ (glog) `[rank0]:[E ProcessGroupNCCL.cpp:563] `, `[rank3]:[E1012 22:31:22.26 file:607] `.
_TORCH = re.compile(
    r"(?:\[rank(\d+)\]:)?\[([IWEF])(?:\d{4} \d\d:\d\d:\d\d\.\d+)? ?[^\s\]]+:\d+\] ?"
)
# Another library's logging format: `2026-07-25 13:42:38,525 - INFO - autotuner.py:824 - `,
# `2026-06-07 10:59:31,659 [INFO] sglang.srt.managers.x: `, loguru `... | INFO | mod:fn:12 - `.
_FOREIGN_HEADER = re.compile(
    r"(\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?)\s*[-|]?\s*"
    rf"\[?({_LEVEL_RE})\]?(?:\s*[-|:])?\s+"
    r"(?:[\w.<>-]+(?::[\w.<>-]+)*\s*(?::|\s-)\s+)?"
)


class LinePrefix(NamedTuple):
    """What the layers in front of an engine message said; None = not present / unknown.

    `wrapper` is None, "docker", "compose", "journald" or "other"; `wrapper_ts` the wrapper's
    timestamp text as printed (docker, journald, other). `proc`/`pid` come from the innermost
    `(Name pid=N)` tag. `level` is one of LEVELS (uvicorn `INFO:` counts as INFO). `ts` is the
    engine's own timestamp text exactly as printed (vLLM `MM-DD HH:MM:SS`, SGLang
    `YYYY-MM-DD HH:MM:SS` or `HH:MM:SS`, a foreign logger's full date-time), never with a guessed
    year. `tp_rank`/`dp_rank` come from SGLang's bracket, `rank` from torch's `[rankN]:`.
    `header` names the header format found: "vllm", "uvicorn", "sglang", "torch", "foreign".
    """

    wrapper: str | None = None
    wrapper_ts: str | None = None
    service: str | None = None
    host: str | None = None
    proc: str | None = None
    pid: int | None = None
    level: str | None = None
    ts: str | None = None
    tp_rank: int | None = None
    dp_rank: int | None = None
    rank: int | None = None
    header: str | None = None

    def to_dict(self) -> dict[str, object]:
        """The corpus keys always; `wrapper_ts`, `service`, `host` and the extras when known."""
        out: dict[str, object] = {}
        for key in _FIELD_NAMES:
            value = getattr(self, key)
            if value is not None or key in _ALWAYS:
                out[key] = value
        if self.header == "sglang":
            out["tp_rank"] = self.tp_rank
        return out


_FIELD_NAMES = LinePrefix._fields


_ALWAYS = frozenset({"wrapper", "proc", "pid", "level", "ts"})
EMPTY_PREFIX = LinePrefix()


def _int(text: str | None) -> int | None:
    if not text:
        return None
    try:
        return int(text)
    except ValueError:  # e.g. more digits than int() accepts
        return None


def _level(name: str) -> str:
    return _LEVEL_ALIASES.get(name, name)


class _Builder:
    """Mutable scratch state while peeling one line (internal)."""

    __slots__ = (
        "dp_rank", "header", "host", "level", "pid", "proc", "rank", "service", "tp_rank", "ts",
        "wrapper", "wrapper_ts",
    )  # fmt: skip

    def __init__(self) -> None:
        self.wrapper: str | None = None
        self.wrapper_ts: str | None = None
        self.service: str | None = None
        self.host: str | None = None
        self.proc: str | None = None
        self.pid: int | None = None
        self.level: str | None = None
        self.ts: str | None = None
        self.tp_rank: int | None = None
        self.dp_rank: int | None = None
        self.rank: int | None = None
        self.header: str | None = None

    def set_wrapper(self, kind: str, ts: str | None) -> None:
        if self.wrapper is None:
            self.wrapper = kind
        if self.wrapper_ts is None:
            self.wrapper_ts = ts

    def build(self) -> LinePrefix:
        return LinePrefix(
            self.wrapper, self.wrapper_ts, self.service, self.host, self.proc, self.pid,
            self.level, self.ts, self.tp_rank, self.dp_rank, self.rank, self.header,
        )  # fmt: skip


def _strip_wrappers(s: str, b: _Builder) -> int:
    """Peel wrappers at the start of `s`; return the position after them."""
    pos = 0
    for _ in range(3):
        if s.startswith(_STARTS_WITH_LEVEL, pos) or s.startswith(("(", "["), pos):
            return pos
        first = s[pos : pos + 1]
        if first.isdigit():
            m = _DOCKER.match(s, pos)
            if m is not None:
                rest = _SYSLOG_REST.match(s, m.end())
                if rest is not None and not m.group(1).endswith("Z"):
                    b.set_wrapper("journald", m.group(1))  # journalctl -o short-iso
                    b.host = b.host or rest.group(1)
                    pos = rest.end()
                else:
                    b.set_wrapper("docker", m.group(1))
                    pos = m.end()
                continue
            m = _FOREIGN_WRAPPER.match(s, pos)
            if m is not None:
                b.set_wrapper("other", m.group(1))
                pos = m.end()
                continue
        m = _SYSLOG_TS.match(s, pos)
        if m is not None:
            b.set_wrapper("journald", m.group(1))
            b.host = b.host or m.group(2)
            pos = m.end()
            continue
        if s.find("| ", pos, pos + 80) >= 0:
            m = _COMPOSE.match(s, pos)
            if m is not None:
                b.set_wrapper("compose", None)
                b.service = b.service or m.group(1)
                pos = m.end()
                continue
        return pos
    return pos


def _strip_tags(s: str, pos: int, b: _Builder) -> int:
    while s.startswith("(", pos):
        m = _TAG.match(s, pos)
        if m is None:
            break
        b.proc = m.group(1) or None
        b.pid = _int(m.group(2))
        pos = m.end()
    return pos


def _search_anchor(s: str, pos: int, b: _Builder) -> int:
    """Nothing known at `pos`: look for a process tag or a vLLM header a little further on.

    Text skipped before a tag, or before a header when no tag was seen, is an unknown wrapper
    ("other"); after a tag it is `VLLM_LOGGING_PREFIX`, which is not a wrapper.
    """
    end = pos + _SEARCH_SPAN
    if b.proc is None and (s.find(" pid=", pos, end) >= 0 or s.find("(pid=", pos, end) >= 0):
        m = _TAG.search(s, pos, end)
        if m is not None:
            b.set_wrapper("other", None)
            pos = _strip_tags(s, m.start(), b)
            return _strip_header(s, pos, b, search=False)
    for name in _STARTS_WITH_LEVEL:
        at = s.find(name + " ", pos, end)
        if at >= 0:
            m = _LEVEL_HEADER_SEARCH.search(s, at, end)
            if m is not None:
                if b.proc is None:
                    b.set_wrapper("other", None)
                b.level = _level(m.group(1))
                b.ts = m.group(2)
                b.header = "vllm"
                return m.end()
    return pos


def _strip_header(s: str, pos: int, b: _Builder, *, search: bool = True) -> int:
    if s.startswith(_STARTS_WITH_LEVEL, pos):
        m = _LEVEL_HEADER.match(s, pos)
        if m is not None:
            b.level = _level(m.group(1))
            if m.group(2) is not None or m.group(3) is None:
                b.header = "uvicorn"
            else:
                b.header = "vllm"
                b.ts = m.group(3)
            return m.end()
    elif s.startswith("[", pos):
        m = _SGLANG.match(s, pos)
        if m is not None:
            b.header = "sglang"
            b.ts = m.group(1)
            for kind, number in _RANK_TOKEN.findall(m.group(2)):
                if kind == "TP":
                    b.tp_rank = _int(number)
                elif kind == "DP":
                    b.dp_rank = _int(number)
            pos = m.end()
            if s.startswith(_STARTS_WITH_LEVEL, pos):  # uvicorn under SGLang's prefix
                u = _LEVEL_HEADER.match(s, pos)
                if u is not None and u.group(2) is not None:
                    b.level = _level(u.group(1))
                    pos = u.end()
            return pos
        m = _TORCH.match(s, pos)
        if m is not None:
            b.header = "torch"
            b.rank = _int(m.group(1))
            b.level = _GLOG_LEVELS[m.group(2)]
            return m.end()
    elif s[pos : pos + 1].isdigit():
        m = _FOREIGN_HEADER.match(s, pos)
        if m is not None:
            b.header = "foreign"
            b.ts = m.group(1)
            b.level = _level(m.group(2))
            return m.end()
    return _search_anchor(s, pos, b) if search else pos


# Prefix text -> LinePrefix for the common shapes; LinePrefix is immutable, so sharing is safe.
_MEMO: dict[str, LinePrefix] = {}
_MEMO_MAX = 2048


def _fast(s: str) -> tuple[LinePrefix, str] | None:
    """`LEVEL …` or `(Name pid=N) LEVEL …` (most lines of a vLLM log), memoised by prefix text."""
    pos = 0
    tag = None
    if s.startswith("("):
        tag = _TAG.match(s)
        if tag is None or s.startswith("(", tag.end()):
            return None
        pos = tag.end()
    if not s.startswith(_STARTS_WITH_LEVEL, pos):
        return None
    m = _LEVEL_HEADER.match(s, pos)
    if m is None:
        return None
    end = m.end()
    key = s[:end]
    prefix = _MEMO.get(key)
    if prefix is None:
        proc = pid = None
        if tag is not None:
            proc, pid = tag.group(1) or None, _int(tag.group(2))
        uvicorn = m.group(2) is not None or m.group(3) is None
        prefix = LinePrefix(
            proc=proc,
            pid=pid,
            level=_level(m.group(1)),
            ts=None if uvicorn else m.group(3),
            header="uvicorn" if uvicorn else "vllm",
        )
        if len(_MEMO) >= _MEMO_MAX:
            _MEMO.clear()
        _MEMO[key] = prefix
    return prefix, s[end:]


def split_prefix(line: str) -> tuple[LinePrefix, str]:
    """Split `line` into what its prefix says and the message body (never raises)."""
    s = line.rstrip("\r\n") if line.endswith(("\n", "\r")) else line
    if may_hold_colour(s):
        s = strip_colour(s)
    if s.startswith(("(", *_STARTS_WITH_LEVEL)):
        fast = _fast(s)
        if fast is not None:
            return fast
    b = _Builder()
    pos = _strip_wrappers(s, b)
    pos = _strip_tags(s, pos, b)
    pos = _strip_header(s, pos, b)
    if pos == 0:
        return EMPTY_PREFIX, s
    return b.build(), s[pos:]
