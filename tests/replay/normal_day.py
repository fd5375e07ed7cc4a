"""A synthetic normal day of one vLLM engine, the day a false page must never come from.

CONSTRUCTED, not captured: vLLM V1 stats lines ("Engine 000: Avg prompt throughput …") and
SpecDecoding lines (k = 3) in the formats of the corpus, every 10 s while busy, one more line
when the engine falls idle (Running: 0), then silence for the idle gap, as vLLM prints. The
stack never changes all day: the engine makes ``STEPS`` forward steps a second with one request,
a little fewer per request as the batch grows; what varies is what a real agentic day varies:
bursts of 2-40 minutes with 1-4 requests running, idle gaps of 1 minute to 2 hours, prefill
windows with prompt throughput in the hundreds or thousands and little decode when a request
arrives, and the mean acceptance length with the content (2.0-3.2). decode = running x MAL x
steps per request.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from pathlib import Path

STEPS = 40.0  # forward steps/s of a single stream; 40 x MAL 2.4 = 96 t/s (anchor default 90)
HEAD = "(APIServer pid=4242) INFO {ts} [loggers.py:271] Engine 000: "
SPEC = "(APIServer pid=4242) INFO {ts} [metrics.py:101] SpecDecoding metrics: "


def stats(ts: str, prompt: float, gen: float, running: int, kv: float) -> str:
    return HEAD.format(ts=ts) + (
        f"Avg prompt throughput: {prompt:.1f} tokens/s, Avg generation throughput: {gen:.1f} "
        f"tokens/s, Running: {running} reqs, Waiting: 0 reqs, GPU KV cache usage: {kv:.1f}%, "
        "Prefix cache hit rate: 41.0%"
    )


def spec(ts: str, drafts: int, mal: float) -> str:
    accepted = round(drafts * (mal - 1))
    per = [min(1.0, (mal - 1) / 3 * w) for w in (1.25, 1.0, 0.75)]
    return SPEC.format(ts=ts) + (
        f"Mean acceptance length: {1 + accepted / drafts:.2f}, Accepted throughput: "
        f"{accepted / 10:.2f} tokens/s, Drafted throughput: {3 * drafts / 10:.2f} tokens/s, "
        f"Accepted: {accepted} tokens, Drafted: {3 * drafts} tokens, Per-position acceptance "
        "rate: "
        + ", ".join(f"{p:.3f}" for p in per)
        + f", Avg Draft acceptance rate: {100 * accepted / (3 * drafts):.1f}%"
    )


def write_normal_day(path: Path, seed: int = 7) -> int:
    """Write the day to ``path``; returns the number of stats windows with requests running."""
    rng = random.Random(seed)
    t = datetime(2026, 11, 30, 0, 0, 0)
    end = t + timedelta(hours=24)
    lines: list[str] = []
    busy = 0
    while t < end:
        t += timedelta(minutes=rng.choice([1, 2, 3, 5, 8, 15, 30, 60, 120]))  # idle gap
        mal = rng.uniform(2.4, 3.2)
        running = 1
        for _ in range(rng.randint(12, 240)):  # a burst of 2-40 minutes
            t += timedelta(seconds=10)
            ts = t.strftime("%m-%d %H:%M:%S")
            if rng.random() < 0.15:  # a request arrives: a prefill-heavy window
                running = min(4, running + 1)
                prompt, share = rng.uniform(300.0, 3000.0), rng.uniform(0.1, 0.5)
            else:
                prompt, share = 0.0, 1.0
                if running > 1 and rng.random() < 0.15:
                    running -= 1
                if rng.random() < 0.1:  # the content changes, so does the acceptance length
                    mal = rng.uniform(2.0, 3.2)
            per_request = STEPS / (1 + 0.08 * (running - 1))
            drafts = max(1, round(per_request * running * 10 * share))
            gen = drafts * mal / 10
            lines.append(stats(ts, prompt, gen, running, min(90.0, 5.0 + 8.0 * running)))
            lines.append(spec(ts, drafts, mal))
            busy += 1
        t += timedelta(seconds=10)
        lines.append(stats(t.strftime("%m-%d %H:%M:%S"), 0.0, 0.0, 0, 0.0))  # idle again
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return busy
