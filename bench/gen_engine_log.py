#!/usr/bin/env python3
"""A deterministic vLLM (V1 engine, OpenAI server) log for the ingest benchmarks.

    python3 bench/gen_engine_log.py OUT [LINES=1000000] [SEED=7]

The line mix is that of the benchmark input the project was measured on: about 30 % long
"Received request" lines (500-3,000 characters, the prompt's repr), 4 % short "Added request"
lines, uvicorn access lines for the rest, a stats line followed by its SpecDecoding line every
180-220 lines (about every 10 s of log time, as vLLM prints them), and about one warning or error
in 5,000 lines, some with a traceback. It writes ``OUT.expected.json`` beside the log: the true
counts and sums, which ``bench/check_counts.py`` compares with what ``inferwatch replay`` and
mtail found. Standard library only, so a fresh clone needs nothing else.
"""

from __future__ import annotations

import json
import random
import sys
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from pathlib import Path

TEXT = (
    "a about after all also and answer any are as ask at attention back batch be because "
    "been before best both but by cache call can code context could cuda data day decode "
    "did do draft each even expert first for from get give go good great GPU had has have "
    "he her here him his how if in into is it its just kernel know latency layer like long "
    "look make many may me memory model more most my new no not now of on one only or other "
    "our out over people prefill prefix prompt python request say schedule see she so some "
    "take tensor than that the their them then there these they think this throughput time "
    "to token two up us use want way we well what when which who will with work would write "
    "year you your 你好 请 总结 一下 这段 代码 日本語 überprüfen café naïve — “x” ✓"
)
VOCAB = TEXT.split()
SYSTEM = (
    "You are a helpful assistant.",
    "You are a careful coding assistant. Be brief.",
    "Answer in the language of the question.",
)
PATHS = (("POST", "/v1/chat/completions", 86), ("POST", "/v1/completions", 6),
         ("GET", "/metrics", 5), ("GET", "/health", 2), ("GET", "/v1/models", 1))  # fmt: skip
TRACEBACK = (
    "Traceback (most recent call last):",
    '  File "/opt/venv/lib/python3.12/site-packages/vllm/v1/engine/async_llm.py", line 388, in '
    "output_handler",
    "    outputs = await engine_core.get_output_async()",
)
INCIDENTS = (
    ("WARNING {ts} [scheduler.py:1790] Sequence group {rid} is preempted by "
     "PreemptionMode.RECOMPUTE mode because there is not enough KV cache space.",),
    ("ERROR {ts} [serving_chat.py:230] Error in preprocessing prompt inputs",
     *TRACEBACK[:1],
     "ValueError: This model's maximum context length is 131072 tokens. However, you "
     "requested 140000 tokens."),
    ("ERROR {ts} [async_llm.py:421] AsyncLLM output_handler failed.", *TRACEBACK,
     "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack "
     "trace (above) for the root cause."),
    ("WARNING {ts} [protocol.py:60] The following fields were present in the request but "
     "ignored: {{'top_k'}}",),
)  # fmt: skip


@dataclass
class Truth:
    """What the log holds, counted while writing it."""

    lines: int = 0
    received: int = 0
    added: int = 0
    access: int = 0
    stats_lines: int = 0
    specdec_lines: int = 0
    error_events: int = 0
    error_lines_total: int = 0
    sum_gen_throughput: float = 0.0
    sum_mal: float = 0.0
    last_gen_throughput: float | None = None
    last_mal: float | None = None
    bytes: int = 0
    seed: int = 0


class Writer:
    def __init__(self, out: Path, seed: int) -> None:
        self.rng = random.Random(seed)  # noqa: S311  (reproducible test data)
        self.truth = Truth(seed=seed)
        self.clock = datetime(2026, 11, 3, 8, 0, 0)
        self.text = " ".join(self.rng.choice(VOCAB) for _ in range(400_000)).replace("'", "")
        self.out = out.open("w", encoding="utf-8", newline="\n")
        self.pending: list[str] = []

    def emit(self, *lines: str) -> None:
        self.pending.extend(lines)
        self.truth.lines += len(lines)
        if len(self.pending) > 16_384:
            self.drain()

    def drain(self) -> None:
        if self.pending:
            self.out.write("\n".join(self.pending) + "\n")
            self.pending.clear()

    @property
    def ts(self) -> str:
        return self.clock.strftime("%m-%d %H:%M:%S")

    def rid(self) -> str:
        return f"chatcmpl-{self.rng.getrandbits(128):032x}"

    def received(self) -> None:
        size = self.rng.randint(500, 3000)
        system = self.rng.choice(SYSTEM)
        head = (
            f"INFO {self.ts} [logger.py:43] Received request {self.rid()}: prompt: "
            f"'<|im_start|>system\\n{system}<|im_end|>\\n<|im_start|>user\\n"
        )
        temperature = self.rng.choice((0.0, 0.6, 0.7, 1.0))
        max_tokens = self.rng.choice((512, 1280, 4096))
        tail = (
            "<|im_end|>\\n<|im_start|>assistant\\n', params: SamplingParams(n=1, "
            f"temperature={temperature}, top_p=0.95, max_tokens={max_tokens}), "
            "prompt_token_ids: None."
        )
        start = self.rng.randrange(len(self.text) - 3100)
        body = self.text[start : start + max(1, size - len(head) - len(tail))]
        self.emit(head + body + tail)
        self.truth.received += 1

    def access(self) -> None:
        method, path, _ = self.rng.choices(PATHS, weights=[w for *_, w in PATHS])[0]
        code = "200 OK"
        if method == "POST":
            code = self.rng.choices(("200 OK", "400 Bad Request", "500 Internal Server Error"),
                                    weights=(992, 6, 2))[0]  # fmt: skip
        port = self.rng.randint(32768, 60999)
        self.emit(f'INFO:     127.0.0.1:{port} - "{method} {path} HTTP/1.1" {code}')
        self.truth.access += 1

    def stats(self) -> None:
        gen = round(self.rng.uniform(20.0, 2500.0), 1)
        prompt = round(self.rng.choice((0.0, 0.0, self.rng.uniform(100.0, 20000.0))), 1)
        k, drafts = 6, self.rng.randint(50, 900)
        keep, rates, rate = self.rng.uniform(0.5, 0.9), [], 1.0
        for _ in range(k):
            rate = min(1.0, rate * keep * self.rng.uniform(0.9, 1.05))
            rates.append(round(rate, 3))
        accepted = round(sum(rates) * drafts)
        mal = round(1 + accepted / drafts, 2)
        self.emit(
            f"INFO {self.ts} [loggers.py:123] Engine 000: Avg prompt throughput: {prompt:.1f} "
            f"tokens/s, Avg generation throughput: {gen:.1f} tokens/s, Running: "
            f"{self.rng.randint(0, 64)} reqs, Waiting: {self.rng.choice((0, 0, 0, 7))} reqs, "
            f"GPU KV cache usage: {self.rng.uniform(0, 95):.1f}%, Prefix cache hit rate: "
            f"{self.rng.uniform(0, 80):.1f}%",
            f"INFO {self.ts} [metrics.py:96] SpecDecoding metrics: Mean acceptance length: "
            f"{mal:.2f}, Accepted throughput: {accepted / 10:.2f} tokens/s, Drafted throughput: "
            f"{drafts * k / 10:.2f} tokens/s, Accepted: {accepted} tokens, Drafted: "
            f"{drafts * k} tokens, Per-position acceptance rate: "
            + ", ".join(f"{r:.3f}" for r in rates)
            + f", Avg Draft acceptance rate: {100 * accepted / (drafts * k):.1f}%",
        )
        t = self.truth
        t.stats_lines, t.specdec_lines = t.stats_lines + 1, t.specdec_lines + 1
        t.sum_gen_throughput, t.sum_mal = t.sum_gen_throughput + gen, t.sum_mal + mal
        t.last_gen_throughput, t.last_mal = gen, mal

    def incident(self) -> None:
        lines = self.rng.choice(INCIDENTS)
        head = lines[0].format(ts=self.ts, rid=self.rid())
        self.emit(head, *lines[1:])
        self.truth.error_events += 1
        self.truth.error_lines_total += len(lines)

    def run(self, total: int) -> Truth:
        until_stats = self.rng.randint(180, 220)
        since_tick = 0
        while self.truth.lines < total:
            left = total - self.truth.lines
            if until_stats <= 0 and left >= 2:
                self.stats()
                until_stats = self.rng.randint(180, 220)
                continue
            before = self.truth.lines
            roll = self.rng.random()
            if roll < 0.0002 and left >= 6:
                self.incident()
            elif roll < 0.30:
                self.received()
            elif roll < 0.34:
                self.emit(f"INFO {self.ts} [async_llm.py:350] Added request {self.rid()}.")
                self.truth.added += 1
            else:
                self.access()
            until_stats -= self.truth.lines - before
            since_tick += self.truth.lines - before
            if since_tick >= 20:  # about 20 lines a second: stats every ~10 s of log time
                since_tick = 0
                self.clock += timedelta(seconds=1)
        self.drain()
        self.out.close()
        return self.truth


def main(argv: list[str]) -> int:
    if len(argv) < 2 or argv[1].startswith("-"):
        print(__doc__)
        return 2
    out = Path(argv[1])
    total = int(argv[2]) if len(argv) > 2 else 1_000_000
    truth = Writer(out, int(argv[3]) if len(argv) > 3 else 7).run(total)
    truth.bytes = out.stat().st_size
    truth.sum_gen_throughput = round(truth.sum_gen_throughput, 1)
    truth.sum_mal = round(truth.sum_mal, 2)
    doc = json.dumps(asdict(truth), indent=1)
    Path(f"{out}.expected.json").write_text(doc + "\n", encoding="utf-8")
    print(doc)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
