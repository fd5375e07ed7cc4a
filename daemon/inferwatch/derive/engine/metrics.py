"""An engine's /metrics scrapes in, the same ``inferwatch_engine_*`` series as the log out.

reference/engine.md 4 (vLLM, old and new names), 7.3 (SGLang, ``sglang:`` or renamed ``sglang_``)
and 8 (llama.cpp). Rates come from counter deltas between two consecutive scrapes of one engine
process (engine.md 4.4): decode = d generation tokens / dt, MAL = 1 + d accepted / d drafts,
per-position = d accepted_per_pos / d drafts, draft acceptance = d accepted / d draft tokens,
forward steps = d iteration_tokens_count (llama.cpp: d n_decode) / dt. The step rate is
request-steps per second like the log's: d drafts / dt when exactly one request runs (exact,
engine.md 3.4), else decode / MAL. SGLang: MAL = d generation tokens / d spec_verify_calls.

- The first scrape, the first after a failed one, and one where any counter went down (the engine
  restarted: counters reset) give no rate: windows are never merged across processes or outages,
  and a rate is never negative. The rate series end (a staleness marker) at a reset and when the
  scrape fails; ``inferwatch_engine_up`` says which.
- Nothing drafted in the interval: MAL is absent, not 1. Without spec counters speculative
  decoding counts as off (step rate = decode) unless configured on, or vLLM shows several DP
  engines (0.10-era builds dropped spec metrics with DP > 1); 0.8-era vLLM has no drafts
  counter, so no MAL here — the log provides it.
- ``ScrapeResult.claims`` names the series this engine's /metrics can produce, whether or not a
  value came out this time; ``engine_arbiter`` gives them to /metrics while its scrape is up.

vLLM's ``engine`` label is the DP index and becomes ``dp_rank``; SGLang's ``dp_rank`` is kept
only when some rank is not 0 (its logs show DP only with attention DP), other TP ranks are
skipped. Pure and clock-free: ``at`` is the scrape time.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from inferwatch.derive.effects import Effect, GaugeSet, SeriesEnd
from inferwatch.derive.engine import names as n
from inferwatch.derive.engine.exposition import EngineSamples, group_samples, spec_absent
from inferwatch.derive.engine.log import MAX_TRACKED
from inferwatch.derive.engine.spec import mean_acceptance_length
from inferwatch.labels import Labels, make_labels
from inferwatch.parsers.promtext import MetricSample

_GAUGE_NAMES = {"running": n.RUNNING, "waiting": n.WAITING, "kv": n.KV_USAGE}


@dataclass(frozen=True, slots=True)
class ScrapeResult:
    """One scrape's effects and the series names /metrics can produce for this engine."""

    engine: str
    at: float
    effects: tuple[Effect, ...]
    claims: frozenset[str]
    restarted: bool = False


class EngineMetricsDeriver:
    """Feed one engine's parsed scrapes in time order; ``down(at)`` when a scrape fails."""

    __slots__ = ("_k", "_labels", "_prev", "_prev_at", "_spec", "_written", "engine")

    def __init__(
        self,
        engine: str,
        *,
        speculative: bool | None = None,
        num_speculative_tokens: int | None = None,
    ) -> None:
        self.engine = engine
        self._spec = speculative
        self._k = num_speculative_tokens
        self._prev: dict[str | None, EngineSamples] = {}
        self._prev_at: float | None = None
        self._labels: dict[tuple[str | None, str], Labels] = {}
        self._written: dict[tuple[str, Labels], None] = {}

    def feed(self, samples: Iterable[MetricSample], at: float) -> ScrapeResult:
        streams = group_samples(samples)
        out: list[Effect] = [GaugeSet(n.UP, self._lab(None, ""), 1.0, at)]
        claims: set[str] = set()
        dt = None if self._prev_at is None else at - self._prev_at
        restarted = False
        several_dp = sum(1 for dp in streams if dp is not None) > 1
        for dp, cur in streams.items():
            prev = self._prev.get(dp)
            labels = self._lab(dp, "")
            spec_off = self._spec is False or (self._spec is None and spec_absent(cur, several_dp))
            claims |= _claims(cur, spec_off=spec_off, v0_mal=self._k is not None)
            self._gauges(out, cur, labels, at)
            if prev is None or dt is None or dt <= 0:
                continue
            if any(cur.counters.get(k, v) < v for k, v in prev.counters.items()):
                restarted = True  # a counter went down: the engine restarted
                out += self._end(at, labels, rates_only=True)
                continue
            self._rates(out, cur, prev, dt, dp=dp, spec_off=spec_off, at=at)
        self._prev = streams
        self._prev_at = at
        return ScrapeResult(self.engine, at, tuple(out), frozenset(claims), restarted)

    def down(self, at: float) -> list[Effect]:
        """The scrape failed: up = 0, every series this deriver wrote ends, and the next scrape
        starts a new baseline (the engine may have restarted meanwhile)."""
        self._prev = {}
        self._prev_at = None
        return [GaugeSet(n.UP, self._lab(None, ""), 0.0, at), *self._end(at, None)]

    # -- internals --------------------------------------------------------------------------
    def _lab(self, dp: str | None, position: str) -> Labels:
        labels = self._labels.get((dp, position))
        if labels is None:
            pairs = {"engine": self.engine, "dp_rank": dp or "", "position": position}
            labels = make_labels(pairs)
            if len(self._labels) < MAX_TRACKED:  # a body naming ever new ranks: not kept
                self._labels[(dp, position)] = labels
        return labels

    def _set(self, out: list[Effect], name: str, labels: Labels, value: float, at: float) -> None:
        out.append(GaugeSet(name, labels, value, at))
        if len(self._written) < MAX_TRACKED or (name, labels) in self._written:
            self._written[(name, labels)] = None

    def _end(self, at: float, labels: Labels | None, rates_only: bool = False) -> list[Effect]:
        ended = [(name, lab) for name, lab in self._written
                 if (labels is None or _same_stream(lab, labels))
                 and (not rates_only or name in n.RATE_NAMES)]  # fmt: skip
        for item in ended:
            del self._written[item]
        return [SeriesEnd(name, lab, at) for name, lab in ended]

    def _gauges(self, out: list[Effect], cur: EngineSamples, labels: Labels, at: float) -> None:
        g = cur.gauges
        for role, name in _GAUGE_NAMES.items():
            value = g.get(role, g.get("kv_old")) if role == "kv" else g.get(role)
            if value is not None:
                self._set(out, name, labels, value, at)
        if "prefix" in g and ("pc_q", "") not in cur.counters:
            self._set(out, n.PREFIX_HIT, labels, g["prefix"], at)

    def _rates(
        self, out: list[Effect], cur: EngineSamples, prev: EngineSamples, dt: float, *,
        dp: str | None, spec_off: bool, at: float,
    ) -> None:  # fmt: skip
        def d(role: str, position: str = "") -> float | None:
            now, before = cur.counters.get((role, position)), prev.counters.get((role, position))
            return None if now is None or before is None else now - before

        labels = self._lab(dp, "")
        gen, prompt, drafts = d("gen"), d("prompt"), d("drafts")
        decode = None if gen is None else gen / dt
        if decode is not None:
            self._set(out, n.DECODE, labels, decode, at)
        if prompt is not None:
            self._set(out, n.PREFILL, labels, prompt / dt, at)
        forward, queries, hits = d("iter"), d("pc_q"), d("pc_h")
        if forward is not None:
            self._set(out, n.FORWARD_STEPS, labels, forward / dt, at)
        if queries and hits is not None:
            self._set(out, n.PREFIX_HIT, labels, hits / queries, at)
        accepted, draft_tokens, emitted, verify = (
            d("accepted"), d("draft_tokens"), d("emitted"), d("verify"))  # fmt: skip
        if accepted is not None and draft_tokens:
            self._set(out, n.DRAFT_ACCEPT, labels, accepted / draft_tokens, at)
        mal = steps = None
        if drafts is not None:
            mal = mean_acceptance_length(drafts, accepted=accepted)
            if mal is not None:
                for (role, position), _ in cur.counters.items():
                    per_pos = d(role, position) if role == "pos" else None
                    if per_pos is not None:
                        self._set(out, n.POSITION, self._lab(dp, position), per_pos / drafts, at)
                if cur.gauges.get("running") == 1:
                    steps = drafts / dt
        elif verify is not None:
            mal = None if gen is None else mean_acceptance_length(verify, emitted=gen)
            if mal is not None:
                steps = verify / dt
        elif emitted is not None and draft_tokens and self._k:
            mal = mean_acceptance_length(draft_tokens / self._k, emitted=emitted)
        elif spec_off and decode is not None:
            steps = decode
        if mal is not None:
            self._set(out, n.MAL, labels, mal, at)
            if steps is None and decode is not None:
                steps = decode / mal
        elif drafts is not None or verify is not None:
            out += [SeriesEnd(name, lab, at) for name, lab in self._pop_spec(labels)]
        if steps is not None:
            self._set(out, n.STEPS, labels, steps, at)

    def _pop_spec(self, labels: Labels) -> list[tuple[str, Labels]]:
        """Nothing drafted this interval: MAL, positions and step rate are absent."""
        gone = [(name, lab) for name, lab in self._written
                if name in (n.MAL, n.POSITION, n.STEPS) and _same_stream(lab, labels)]  # fmt: skip
        for item in gone:
            del self._written[item]
        return gone


def _dp_of(labels: Labels) -> str | None:
    for name, value in labels:
        if name == "dp_rank":
            return value
    return None


def _same_stream(labels: Labels, stream: Labels) -> bool:
    return _dp_of(labels) == _dp_of(stream)


def _claims(cur: EngineSamples, *, spec_off: bool, v0_mal: bool) -> set[str]:
    roles = {role for role, _ in cur.counters} | set(cur.gauges)
    claims = {name for role, name in _GAUGE_NAMES.items() if role in roles}
    if "kv_old" in roles:
        claims.add(n.KV_USAGE)
    pairs = (("gen", n.DECODE), ("prompt", n.PREFILL), ("iter", n.FORWARD_STEPS),
             ("pc_q", n.PREFIX_HIT), ("prefix", n.PREFIX_HIT))  # fmt: skip
    claims |= {name for role, name in pairs if role in roles}
    if {"accepted", "draft_tokens"} <= roles:
        claims.add(n.DRAFT_ACCEPT)
    if "drafts" in roles:
        claims |= {n.MAL, n.POSITION, n.STEPS}
    if "verify" in roles or (v0_mal and {"emitted", "draft_tokens"} <= roles):
        claims |= {n.MAL, n.STEPS}
    if spec_off and "gen" in roles:
        claims.add(n.STEPS)
    return claims
