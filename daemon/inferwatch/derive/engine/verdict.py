"""The verdict on a decode difference between two busy periods: content, stack, or both.

reference/host.md: decode tokens/s ~ step rate x MAL; MAL follows the content, the step rate the
stack. So a period's decode is compared with the previous period's through both: a step rate
within ``TOLERANCE`` (10 %) is unchanged, and then a different decode is explained by MAL ("decode
100 vs 150 earlier is explained by MAL 2.8 vs 4.6 at an unchanged step rate of 36/s"); a step rate
that moved at similar MAL is the stack ("step rate fell 38 % at similar MAL: stack regression").

Like is compared with like (``periods``): only decode-bound windows count, and two periods are
compared at a concurrency both saw in at least ``MIN_WINDOWS`` windows (the one the current
period saw most); periods that share none are not compared. The step rate is per request
(decode ÷ MAL ÷ running). A single-stream period is also set against the log's median
single-stream step rate.
"""

from __future__ import annotations

from inferwatch.derive.engine.periods import BusyPeriod, Cohort

TOLERANCE = 0.10
"""Relative change below which a step rate, a MAL or a decode rate counts as unchanged."""
MIN_WINDOWS = 3
"""Decode-bound windows a concurrency needs in both periods to be compared."""
_NOTABLE = ("stack regression", "the stack got faster", "is explained by MAL",
            "both the stack and the content changed", "single-stream median")  # fmt: skip


def _change(new: float, old: float) -> float:
    return (new - old) / old if old else 0.0


def _similar(new: float | None, old: float | None) -> bool:
    return new is not None and old is not None and abs(_change(new, old)) <= TOLERANCE


def notable(text: str) -> bool:
    """Whether a verdict says something changed and why (the summary lists only those)."""
    return any(marker in text for marker in _NOTABLE)


def compare(cur: BusyPeriod, prev: BusyPeriod | None, baseline: float | None) -> str:
    """One period's verdict: against the previous period, then against the log-wide median
    single-stream step rate (``baseline``). Step rates within TOLERANCE count as unchanged."""
    text = _against_previous(cur, prev)
    single = cur.cohorts.get(1)
    if single is not None and single.step_rate is not None and baseline and cur.running == 1:
        off = _change(single.step_rate, baseline)
        if abs(off) > TOLERANCE:
            side = "below" if off < 0 else "above"
            text += (f"; step rate {single.step_rate:.0f}/s is {abs(off) * 100:.0f} % {side} "
                     f"the log's single-stream median of {baseline:.0f}/s")  # fmt: skip
    return text


def _first(cur: BusyPeriod) -> str:
    d = f"{cur.decode:.0f}" if cur.decode is not None else "unknown"
    parts = [f"first busy period: decode {d}"]
    if cur.mal is not None:
        parts.append(f"MAL {cur.mal:.1f}")
    if cur.step_rate is not None:
        parts.append(f"step rate {cur.step_rate:.0f}/s")
    if cur.running is not None and cur.running != 1:
        parts.append(f"mostly {cur.running:g} running")
    return ", ".join(parts)


def _shared(cur: BusyPeriod, prev: BusyPeriod) -> int | None:
    both = [
        r
        for r, c in cur.cohorts.items()
        if c.windows >= MIN_WINDOWS and prev.cohorts.get(r, _NONE).windows >= MIN_WINDOWS
    ]
    return max(both, key=lambda r: (cur.cohorts[r].windows, -r)) if both else None


_NONE = Cohort(0, None, None, None)


def _against_previous(cur: BusyPeriod, prev: BusyPeriod | None) -> str:
    if prev is None:
        return _first(cur)
    if cur.decode is None or prev.decode is None:
        return "decode unknown in one of the periods (no decode-bound window)"
    running = _shared(cur, prev)
    if running is None:
        return (
            f"decode {cur.decode:.0f} vs {prev.decode:.0f} earlier, not compared: no concurrency "
            f"both saw (mostly {cur.running:g} vs {prev.running:g} running)"
        )
    return _cohorts(cur.cohorts[running], prev.cohorts[running], running)


def _cohorts(cur: Cohort, prev: Cohort, running: int) -> str:
    assert cur.decode is not None and prev.decode is not None  # cohorts hold decode windows
    at = "" if running == 1 else f" at {running} running"
    d = f"{cur.decode:.0f}"
    vs = f"decode {d} vs {prev.decode:.0f} earlier{at}"
    if cur.step_rate is None or prev.step_rate is None:
        return f"{vs}; step rate unknown (no SpecDecoding lines in one of the periods)"
    step_change = _change(cur.step_rate, prev.step_rate)
    mal_text = (f"MAL {cur.mal:.1f} vs {prev.mal:.1f}"
                if cur.mal is not None and prev.mal is not None else "MAL unknown")  # fmt: skip
    if abs(step_change) <= TOLERANCE:
        if _similar(cur.decode, prev.decode):
            return (f"decode unchanged ({d} vs {prev.decode:.0f}{at}) at step rate "
                    f"{cur.step_rate:.0f}/s")  # fmt: skip
        if cur.mal is not None and prev.mal is not None and not _similar(cur.mal, prev.mal):
            return (f"{vs} is explained by {mal_text} at an unchanged step rate of "
                    f"{cur.step_rate:.0f}/s")  # fmt: skip
        return f"{vs} at an unchanged step rate of {cur.step_rate:.0f}/s ({mal_text})"
    moved = "fell" if step_change < 0 else "rose"
    pct = f"{abs(step_change) * 100:.0f} %"
    steps = f"{cur.step_rate:.0f}/s vs {prev.step_rate:.0f}/s"
    if _similar(cur.mal, prev.mal):
        cause = "stack regression" if step_change < 0 else "the stack got faster"
        return f"step rate {moved} {pct} at similar MAL: {cause} ({vs}, step rate {steps})"
    return (f"{vs}: step rate {moved} {pct} ({steps}) and {mal_text}: both the stack and the "
            f"content changed")  # fmt: skip
