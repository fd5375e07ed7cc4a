"""Remnants that pasting and collecting leave in engine log text (reference/engine.md 1.1-1.2).

Colour codes survive in three shapes: with the ESC byte, in caret notation (``^[[0;36m``), and
without any escape at all once a paste or a copy from a web page dropped the ESC byte
(``[1;36m(VllmWorker rank=0 pid=1)[0;0m ERROR …``, or a chunk cut inside the sequence that
starts with ``1;36m(``). Docker Compose's ``service  | `` (or a bare ``| `` whose service name
was cut off) can also sit inside a message, where no wrapper parser looks for it.

``strip_colour`` runs on whole lines before the prefix is split; ``clean_message`` on the text a
crash reports as its root cause. Pure.
"""

from __future__ import annotations

import re

__all__ = ["clean_message", "may_hold_colour", "strip_colour"]

# ESC or caret escapes (any parameters), ESC-less SGR remnants `[0m`, `[1;36m`, `[0;0m`, and a
# sequence cut at the start of a line right before a process tag: `1;36m(`.
_COLOUR = re.compile(
    r"(?:\x1b|\^\[)\[[0-9;]*m|\[\d{1,3}(?:;\d{1,3})*m|^\d{1,3}(?:;\d{1,3})*m(?=\()"
)
# A compose separator left at the start of a message: `vllm-1  | ` (compose pads the names, so
# at least two spaces: `a | b` is text) or a bare `| `.
_PASTED_PIPE = re.compile(r"^(?:\w[\w.-]*  +)?\| +")


def may_hold_colour(line: str) -> bool:
    """A cheap test run on every line: False means ``line`` surely holds no colour code. The
    ESC-less remnants sit at the start (``[1;36m(``), right after a process tag (``)[0;0m``)
    or at the end (``[0m``) of a line."""
    return (
        "\x1b" in line
        or "^[" in line
        or "m" in line[:8]
        or line.endswith("m")
        or ")[" in line[:160]
    )


def strip_colour(line: str) -> str:
    """``line`` without colour codes in any of their three shapes (itself when it has none)."""
    return _COLOUR.sub("", line) if _COLOUR.search(line) is not None else line


def clean_message(text: str) -> str:
    """A crash message fit to show as a root cause: no colour remnants, no compose separator
    in front, no surrounding whitespace."""
    text = strip_colour(text).strip()
    while True:
        m = _PASTED_PIPE.match(text)
        if m is None:
            return text
        text = text[m.end() :].lstrip()
