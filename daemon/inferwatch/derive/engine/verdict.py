"""The verdict on a decode difference between two busy periods: content, stack, or both.

reference/host.md: decode tokens/s ~ step rate x MAL; MAL follows the content, the step rate the
stack. So a period's decode is compared with the previous period's through both: a step rate
within ``TOLERANCE`` (10 %) is unchanged, and then a different decode is explained by MAL ("decode
100 vs 150 earlier is explained by MAL 2.8 vs 4.6 at an unchanged step rate of 36/s"); a step rate
that moved at similar MAL is the stack ("step rate fell 38 % at similar MAL: stack regression").
Step rates are per request, so periods at different concurrency are not compared. A
single-stream period is also set against the log's median single-stream step rate.
"""

from __future__ import annotations

from inferwatch.derive.engine.periods import BusyPeriod

TOLERANCE = 0.10
"""Relative change below which a step rate, a MAL or a decode rate counts as unchanged."""


def _change(new: float, old: float) -> float:
    return (new - old) / old if old else 0.0


def _similar(new: float | None, old: float | None) -> bool:
    return new is not None and old is not None and abs(_change(new, old)) <= TOLERANCE


def notable(text: str) -> bool:
    """Whether a verdict says something changed (the summary lists only those)."""
    return not text.startswith("decode unchanged")


def compare(cur: BusyPeriod, prev: BusyPeriod | None, baseline: float | None) -> str:
    """One period's verdict: against the previous period, then against the log-wide median
    single-stream step rate (``baseline``). Step rates within TOLERANCE count as unchanged."""
    text = _against_previous(cur, prev)
    if cur.step_rate is not None and baseline and cur.running == 1:
        off = _change(cur.step_rate, baseline)
        if abs(off) > TOLERANCE:
            side = "below" if off < 0 else "above"
            text += (f"; step rate {cur.step_rate:.0f}/s is {abs(off) * 100:.0f} % {side} the "
                     f"log's single-stream median of {baseline:.0f}/s")  # fmt: skip
    return text


def _against_previous(cur: BusyPeriod, prev: BusyPeriod | None) -> str:
    d = f"{cur.decode:.0f}" if cur.decode is not None else "unknown"
    if prev is None:
        parts = [f"first busy period: decode {d}"]
        if cur.mal is not None:
            parts.append(f"MAL {cur.mal:.1f}")
        if cur.step_rate is not None:
            parts.append(f"step rate {cur.step_rate:.0f}/s")
        return ", ".join(parts)
    if cur.decode is None or prev.decode is None:
        return "decode unknown in one of the periods"
    vs = f"decode {d} vs {prev.decode:.0f} earlier"
    if cur.step_rate is None or prev.step_rate is None:
        return f"{vs}; step rate unknown (no SpecDecoding lines in one of the periods)"
    if cur.running != prev.running:
        return (f"{vs} at different concurrency (running {cur.running:g} vs {prev.running:g}): "
                f"step rates are per request, compare at equal concurrency")  # fmt: skip
    step_change = _change(cur.step_rate, prev.step_rate)
    mal_text = (f"MAL {cur.mal:.1f} vs {prev.mal:.1f}"
                if cur.mal is not None and prev.mal is not None else "MAL unknown")  # fmt: skip
    if abs(step_change) <= TOLERANCE:
        if _similar(cur.decode, prev.decode):
            return f"decode unchanged ({d} vs {prev.decode:.0f}) at step rate {cur.step_rate:.0f}/s"
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
