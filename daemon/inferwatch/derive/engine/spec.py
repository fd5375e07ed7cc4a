"""Mean acceptance length and acceptance ratios of one speculative-decoding window.

reference/engine.md 3.2-3.3. One *draft* is one request verified in one engine step; the V1 log
line gives accepted draft tokens and drafted tokens for its window only, so
drafts = drafted / k (k = the per-position list's length, or the configured
num_speculative_tokens) and MAL = 1 + accepted / drafts. When nothing was drafted MAL is
undefined, **not 1** (vLLM's helper returns 1; the official dashboard's ``> 0`` guard does not).
Proposers such as n-gram may draft fewer than k tokens, which makes drafted / k too small; when
the line also prints its MAL (Gen 2+, computed by vLLM from the true drafts) and the two disagree
beyond the printed rounding, the printed value wins and drafts are recovered from it.

V0 counts are cumulative since engine start: consecutive lines are differenced, a drop in any
count is a restart (never a negative rate, and the windows on either side are never merged),
and V0's MAL is emitted / drafts (its "accepted" counts positions after a rejection too).
"""

from __future__ import annotations

from typing import NamedTuple

from inferwatch.parsers.engine_records import SpecDecode

_PRINTED_SLACK = 0.006  # MAL is printed with 2 decimals


def mean_acceptance_length(
    drafts: float, *, accepted: float | None = None, emitted: float | None = None
) -> float | None:
    """MAL over ``drafts`` request-steps: the one formula of the log, /metrics and replay.

    Each draft emits its accepted tokens plus one, so V1's accepted draft tokens give
    ``1 + accepted / drafts``; V0 and SGLang count the emitted tokens themselves
    (``emitted / drafts``, engine.md 3.3), which wins when given. None when nothing was drafted
    (MAL is undefined then, not 1) or neither count is known."""
    if drafts <= 0:
        return None
    if emitted is not None:
        return emitted / drafts
    if accepted is not None:
        return 1.0 + accepted / drafts
    return None


def line_mal(spec: SpecDecode) -> float | None:
    """The MAL one SpecDecoding line states: as printed, or for a V0 line (which prints none)
    emitted / (drafted / k) of its cumulative counts, to 2 decimals as a log would print it.
    This is the line's own value (replay's line events, the engine-line corpus), not a
    window's: windows come from :func:`v1_window` and :class:`V0Counters`."""
    if spec.format != "vllm_v0" or not (spec.k and spec.drafted) or spec.emitted is None:
        return spec.mal
    mal = mean_acceptance_length(spec.drafted / spec.k, emitted=spec.emitted)
    return None if mal is None else round(mal, 2)


class SpecWindow(NamedTuple):
    """What one window says; None = unknown. ``drafts`` are request-steps (may be fractional)."""

    mal: float | None
    accepted: float | None
    drafts: float | None
    draft_acceptance: float | None
    per_position: tuple[float, ...] | None


def v1_window(spec: SpecDecode, k_hint: int | None) -> SpecWindow:
    """A V1 line (any generation): counts for its window only."""
    accepted, drafted = spec.accepted, spec.drafted
    k = spec.k or k_hint
    drafts: float | None = None
    mal: float | None = None
    if accepted is not None and drafted is not None and k:
        drafts = drafted / k
        mal = mean_acceptance_length(drafts, accepted=accepted)
    printed = spec.mal
    disagree = printed is not None and (mal is None or abs(mal - printed) > _PRINTED_SLACK)
    if printed is not None and disagree and (drafted is None or drafted > 0):
        mal = printed
        if accepted is not None and printed > 1.0:
            drafts = accepted / (printed - 1.0)
        elif accepted:
            drafts = None  # printed 1.00 with accepted tokens: rounding hides drafts
    if drafted == 0:
        mal = drafts = None  # nothing drafted: MAL undefined
    ratio: float | None = None
    if accepted is not None and drafted:
        ratio = accepted / drafted
    elif spec.draft_acceptance_pct is not None and drafted != 0:
        ratio = spec.draft_acceptance_pct / 100.0
    per_position = spec.per_position if mal is not None else None
    return SpecWindow(mal, accepted if mal is not None else None, drafts, ratio, per_position)


class V0Delta(NamedTuple):
    """The outcome of one cumulative V0 line: a window, a restart, or the first baseline."""

    window: SpecWindow | None
    restart: bool


class V0Counters:
    """Differences V0's cumulative ``Speculative metrics`` counts for one engine stream."""

    __slots__ = ("_prev",)

    def __init__(self) -> None:
        self._prev: tuple[int, int, int] | None = None

    def reset(self) -> None:
        self._prev = None

    def feed(self, spec: SpecDecode, k_hint: int | None) -> V0Delta:
        accepted, drafted, emitted = spec.accepted, spec.drafted, spec.emitted
        if accepted is None or drafted is None:
            return V0Delta(None, False)
        current = (accepted, drafted, emitted if emitted is not None else -1)
        prev, self._prev = self._prev, current
        if prev is None:
            return V0Delta(None, False)
        if any(now < before for now, before in zip(current, prev, strict=True)):
            return V0Delta(None, True)  # counters dropped: the engine restarted
        d_acc, d_drafted = current[0] - prev[0], current[1] - prev[1]
        k = spec.k or k_hint
        if d_drafted == 0 or not k:
            return V0Delta(SpecWindow(None, None, None, None, None), False)
        drafts = d_drafted / k
        mal: float | None = None
        if current[2] >= 0 and prev[2] >= 0:
            mal = mean_acceptance_length(drafts, emitted=current[2] - prev[2])
        accepted_equiv = None if mal is None else (mal - 1.0) * drafts
        return V0Delta(SpecWindow(mal, accepted_equiv, drafts, d_acc / d_drafted, None), False)
