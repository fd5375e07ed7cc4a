"""Arbitration: /metrics writes an engine's speed series while its scrape is up, the log fills in
otherwise, and no series ever holds values from both."""

from __future__ import annotations

from pathlib import Path

from inferwatch.clock import FakeClock
from inferwatch.derive.effects import Effect, GaugeSet, SeriesEnd, apply
from inferwatch.derive.engine import names as n
from inferwatch.derive.engine.arbiter import EngineRateArbiter
from inferwatch.derive.engine.log import EngineLogDeriver
from inferwatch.derive.engine.metrics import EngineMetricsDeriver, ScrapeResult
from inferwatch.parsers.engine import parse_engine_line
from inferwatch.parsers.promtext import parse_exposition
from inferwatch.store.tsdb import SeriesStore

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "engine"
CONTENT = (FIXTURES / "constructed_content_change.log").read_text(encoding="utf-8").splitlines()
STATS, SPEC = CONTENT[4], CONTENT[5]  # a constructed V1 stats line and its SpecDecoding line


def log_effects(d: EngineLogDeriver, at: float) -> list[Effect]:
    out: list[Effect] = []
    for i, text in enumerate((STATS, SPEC)):
        record = parse_engine_line(text)
        assert record is not None
        out += d.feed(record, at, i, "log", f"log:{at}:{i}")
    return out


def names(effects: list[Effect]) -> set[str]:
    return {e.name for e in effects if isinstance(e, GaugeSet)}


def scrape(d: EngineMetricsDeriver, number: int, at: float) -> ScrapeResult:
    text = (FIXTURES / f"vllm_v1_scrape_{number}.prom").read_text(encoding="utf-8")
    return d.feed(parse_exposition(text), at)


def test_log_alone_passes_through() -> None:
    arbiter = EngineRateArbiter()
    effects = log_effects(EngineLogDeriver("e"), 10.0)
    assert arbiter.from_log(effects) == effects


def test_metrics_owns_what_it_can_produce_and_the_log_fills_in_the_rest() -> None:
    arbiter = EngineRateArbiter(hold=30.0)
    metrics = EngineMetricsDeriver("e")
    arbiter.from_metrics(scrape(metrics, 1, 0.0))
    kept = arbiter.from_log(log_effects(EngineLogDeriver("e"), 5.0))
    assert names(kept) == {n.LAST_STATS}  # every speed series is /metrics' now

    # An 0.8-era /metrics without a drafts counter claims no MAL: the log's MAL goes through.
    arbiter = EngineRateArbiter(hold=30.0)
    result = ScrapeResult("e", 0.0, (), frozenset({n.DECODE, n.RUNNING}))
    arbiter.from_metrics(result)
    kept = arbiter.from_log(log_effects(EngineLogDeriver("e"), 5.0))
    assert n.DECODE not in names(kept) and n.RUNNING not in names(kept)
    assert {n.MAL, n.STEPS, n.POSITION} <= names(kept)


def test_scrape_down_hands_back_to_the_log_and_claims_expire() -> None:
    arbiter = EngineRateArbiter(hold=30.0)
    arbiter.from_metrics(ScrapeResult("e", 0.0, (), frozenset({n.DECODE})))
    assert arbiter.owner("e", n.DECODE, 10.0) == "metrics"
    assert arbiter.owner("other", n.DECODE, 10.0) == "log"
    assert arbiter.owner("e", n.DECODE, 31.0) == "log"  # no claiming scrape for `hold` seconds
    arbiter.metrics_down("e")
    assert arbiter.owner("e", n.DECODE, 5.0) == "log"
    assert n.DECODE in names(arbiter.from_log(log_effects(EngineLogDeriver("e"), 5.0)))


def test_takeover_ends_the_logs_series() -> None:
    arbiter = EngineRateArbiter()
    arbiter.from_log(log_effects(EngineLogDeriver("e"), 5.0))
    out = arbiter.from_metrics(ScrapeResult("e", 10.0, (), frozenset({n.DECODE})))
    assert [(e.name, e.at) for e in out if isinstance(e, SeriesEnd)] == [(n.DECODE, 10.0)]


def test_no_series_mixes_both_inputs() -> None:
    """Interleave a scrape every 10 s (down for a while) with log windows every 10 s, apply
    everything to a store, and check every written sample's origin per series."""
    store = SeriesStore(FakeClock(0.0))
    arbiter = EngineRateArbiter(hold=30.0)
    metrics = EngineMetricsDeriver("e")
    log = EngineLogDeriver("e")
    origin: dict[tuple[str, tuple[tuple[str, str], ...], float], str] = {}
    scrape_no = 1
    for step in range(12):
        t = step * 10.0
        if 3 <= step <= 6:  # the scrape fails for 40 s
            down = metrics.down(t)
            arbiter.metrics_down("e")
            apply(down, store)
        else:
            # scrapes 1 and 2 alternate; 2 -> 1 is a reset, which gives no rate (fine here)
            result = scrape(metrics, 1 + scrape_no % 2, t)
            scrape_no += 1
            effects = arbiter.from_metrics(result)
            for e in effects:
                if isinstance(e, GaugeSet):
                    origin[(e.name, e.labels, e.at)] = "metrics"
            apply(effects, store)
        kept = arbiter.from_log(log_effects(log, t + 5.0))
        for e in kept:
            if isinstance(e, GaugeSet):
                origin[(e.name, e.labels, e.at)] = "log"
        apply(kept, store)
    by_series: dict[tuple[str, tuple[tuple[str, str], ...]], list[str]] = {}
    for (name, labels, _), who in sorted(origin.items(), key=lambda kv: kv[0][2]):
        if name in n.ARBITRATED:
            by_series.setdefault((name, labels), []).append(who)
    for series, writers in by_series.items():
        # one owner per stretch: /metrics, the log during the outage, /metrics again
        runs = [w for i, w in enumerate(writers) if i == 0 or writers[i - 1] != w]
        assert runs in (["metrics"], ["metrics", "log", "metrics"], ["log"]), (series, writers)
    decode = by_series[(n.DECODE, (("dp_rank", "0"), ("engine", "e")))]
    assert decode.count("log") == 4  # the log filled the 40 s outage, window by window
    stored = store.get(n.DECODE, (("dp_rank", "0"), ("engine", "e")))
    assert stored is not None and len(stored) > 0
