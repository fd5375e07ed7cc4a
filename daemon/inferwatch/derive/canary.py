"""The canary's verdict on an answer: it must contain the expected text and must not repeat
itself (a broken prefix cache once answered "capital of France" with repeated garbage tokens,
reference/host.md). Pure functions."""

from __future__ import annotations

import re

# a unit of 1-12 characters said five times or more in a row ("the the the the the", "ççççç")
_REPEAT = re.compile(r"(.{1,12}?)(?:\s*\1){4,}", re.S)
MIN_WORDS_FOR_VARIETY = 12
MIN_VARIETY = 0.3


def repetition(text: str) -> str:
    """What repeats in ``text``, or "" when nothing does."""
    found = _REPEAT.search(text)
    if found is not None and found.group(1).strip():
        return found.group(1).strip()
    words = text.lower().split()
    if len(words) >= MIN_WORDS_FOR_VARIETY and len(set(words)) / len(words) < MIN_VARIETY:
        return " ".join(sorted(set(words))[:3])
    return ""


def judge(text: str, expect: str) -> str:
    """Why the answer is wrong, or "" when it is right."""
    repeated = repetition(text)
    if repeated:
        return f"the answer repeats {repeated[:40]!r}"
    if expect.casefold() not in text.casefold():
        return f"the answer {text[:80]!r} does not contain {expect!r}"
    return ""


def decode_rate(answer_tokens: int, first_s: float | None, last_s: float | None) -> float | None:
    """Tokens per second after the first token; None when it cannot be told."""
    if first_s is None or last_s is None or answer_tokens < 2 or last_s <= first_s:
        return None
    return (answer_tokens - 1) / (last_s - first_s)
