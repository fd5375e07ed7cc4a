"""The engine log derivation: windows, MAL arithmetic, V0 counters, DP ranks, restarts, events.

Real lines come from tests/fixtures/corpus/engine-lines.txt (cited as L<n>, as in
reference/engine.md). Sequences the corpus does not hold are CONSTRUCTED from the templates of
engine.md 2.1 and 3.1 and say so where they are built.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from inferwatch.clock import FakeClock
from inferwatch.derive.effects import CounterInc, Effect, GaugeSet, SeriesEnd, apply
from inferwatch.derive.engine import names as n
from inferwatch.derive.engine.log import MAX_TRACKED, EngineLogDeriver, engine_line_event
from inferwatch.derive.engine.periods import StatsWindow
from inferwatch.event import Event
from inferwatch.labels import make_labels
from inferwatch.parsers.engine import parse_engine_line
from inferwatch.store.limits import SeriesLimits
from inferwatch.store.tsdb import SeriesStore

CORPUS = Path(__file__).resolve().parents[2] / "fixtures" / "corpus" / "engine-lines.txt"
LINES = CORPUS.read_text(encoding="utf-8").split("\n")


def corpus(number: int) -> str:
    return LINES[number - 1]


def labels(dp: str | None = "0", **extra: str) -> tuple[tuple[str, str], ...]:
    return make_labels({"engine": "e", "dp_rank": dp or "", **extra})


def feed(d: EngineLogDeriver, items: list[tuple[str, float]]) -> list[Effect]:
    out: list[Effect] = []
    for i, (text, at) in enumerate(items, start=1):
        record = parse_engine_line(text)
        assert record is not None, text
        out += d.feed(record, at, i, "test.log", f"test.log:{i}")
    return out


def values(
    effects: list[Effect], name: str
) -> list[tuple[tuple[tuple[str, str], ...], Any, float]]:
    """(labels, value, at) of the samples of ``name``; values typed Any to compare with approx."""
    return [
        (e.labels, e.value, e.at) for e in effects if isinstance(e, GaugeSet) and e.name == name
    ]


def ended(effects: list[Effect], name: str) -> list[tuple[tuple[str, str], ...]]:
    return [e.labels for e in effects if isinstance(e, SeriesEnd) and e.name == name]


# CONSTRUCTED lines in the exact V1 formats of engine.md 2.1 (list-join) and 3.1 (Gen 3).
def v1_stats(ts: str, gen: float, running: int = 1, engine: int = 0) -> str:
    return (
        f"(APIServer pid=7) INFO 05-08 {ts} [loggers.py:271] Engine {engine:03d}: Avg prompt "
        f"throughput: 0.0 tokens/s, Avg generation throughput: {gen:.1f} tokens/s, Running: "
        f"{running} reqs, Waiting: 0 reqs, GPU KV cache usage: 12.5%, Prefix cache hit rate: 40.0%"
    )


def v1_spec(ts: str, mal: float, accepted: int, drafted: int, per_position: str) -> str:
    return (
        f"(APIServer pid=7) INFO 05-08 {ts} [metrics.py:101] SpecDecoding metrics: Mean "
        f"acceptance length: {mal:.2f}, Accepted throughput: 1.00 tokens/s, Drafted throughput: "
        f"1.00 tokens/s, Accepted: {accepted} tokens, Drafted: {drafted} tokens, Per-position "
        f"acceptance rate: {per_position}, Avg Draft acceptance rate: 50.0%"
    )


def test_mal_arithmetic_on_corpus_lines() -> None:
    # L9 + L10: one 5 s window; drafts = 195 / 3 = 65, MAL = 1 + 78 / 65 = 2.2 (engine.md 3.2).
    d = EngineLogDeriver("e")
    out = feed(d, [(corpus(9), 100.0), (corpus(10), 100.0)])
    assert values(out, n.MAL) == [(labels(), pytest.approx(2.2), 100.0)]
    assert values(out, n.STEPS) == [(labels(), pytest.approx(28.4 / 2.2), 100.0)]
    assert values(out, n.DRAFT_ACCEPT) == [(labels(), pytest.approx(0.4), 100.0)]
    positions = values(out, n.POSITION)
    assert [v for _, v, _ in positions] == [0.615, 0.415, 0.169]
    assert [dict(lab)["position"] for lab, _, _ in positions] == ["0", "1", "2"]
    assert sum(v for _, v, _ in positions) == pytest.approx(2.2 - 1, abs=0.002)

    # L3: 295 / 5 = 59 drafts, 1 + 262 / 59 = 5.44; a spec line with no stats line before it
    # stands alone: no step rate, no dp_rank.
    out = feed(EngineLogDeriver("e"), [(corpus(3), 50.0)])
    assert values(out, n.MAL) == [(labels(None), pytest.approx(1 + 262 / 59), 50.0)]
    assert values(out, n.STEPS) == []

    # L1: 495 tokens drafted (99 drafts), none accepted: MAL is exactly 1, and present.
    out = feed(EngineLogDeriver("e"), [(corpus(1), 1.0)])
    assert values(out, n.MAL) == [(labels(None), 1.0, 1.0)]


def test_lines_without_k_give_no_mal_unless_configured() -> None:
    # L4 (V1 pre-Gen-1) and L5 (Gen 1) carry counts but neither k nor MAL.
    for number in (4, 5):
        out = feed(EngineLogDeriver("e"), [(corpus(number), 1.0)])
        assert values(out, n.MAL) == []
        assert values(out, n.DRAFT_ACCEPT) == [(labels(None), 1.0, 1.0)]
        out = feed(EngineLogDeriver("e", num_speculative_tokens=1), [(corpus(number), 1.0)])
        assert values(out, n.MAL) == [(labels(None), 2.0, 1.0)]  # 66 drafts, 66 accepted


def test_window_without_spec_line_is_unknown_not_zero() -> None:
    d = EngineLogDeriver("e")
    out = feed(
        d,
        [
            (v1_stats("10:00:10", 100.0), 10.0),
            (v1_spec("10:00:10", 2.80, 648, 1440, "0.700, 0.500, 0.350, 0.250"), 10.0),
            (v1_stats("10:00:20", 104.0), 20.0),  # no SpecDecoding line in this window
            (v1_stats("10:00:30", 98.0), 30.0),
            (v1_spec("10:00:30", 2.70, 612, 1440, "0.650, 0.500, 0.330, 0.220"), 30.0),
        ],
    )
    assert [at for _, _, at in values(out, n.DECODE)] == [10.0, 20.0, 30.0]
    assert [at for _, _, at in values(out, n.MAL)] == [10.0, 30.0]
    assert [at for _, _, at in values(out, n.STEPS)] == [10.0, 30.0]
    assert ended(out, n.MAL) == [] and ended(out, n.STEPS) == []
    assert d.spec_mode == "on"


def test_nothing_drafted_makes_mal_absent_not_one() -> None:
    # CONSTRUCTED Gen 2 line (engine.md 3.1) for a window where nothing was drafted.
    nothing = (
        "(APIServer pid=7) INFO 05-08 10:00:20 [metrics.py:101] SpecDecoding metrics: Draft "
        "acceptance rate: nan%, Mean acceptance length: 1.00, Accepted: 0 tokens, Drafted: 0 "
        "tokens, Per-position acceptance rate: nan, nan, nan"
    )
    d = EngineLogDeriver("e")
    out = feed(
        d,
        [
            (v1_stats("10:00:10", 50.0), 10.0),
            (v1_spec("10:00:10", 2.20, 78, 195, "0.615, 0.415, 0.169"), 10.0),
            (v1_stats("10:00:20", 3.0), 20.0),
            (nothing, 20.0),
        ],
    )
    assert [v for _, v, _ in values(out, n.MAL)] == [pytest.approx(2.2)]
    assert ended(out, n.MAL) == [labels()]
    assert ended(out, n.STEPS) == [labels()]


# CONSTRUCTED V0 lines (engine.md 2.1 "V0 later" and 3.1 "V0 later"), continuing L80's counts.
def v0_stats(gen: float) -> str:
    return (
        "INFO 01-22 18:27:20 metrics.py:449] Avg prompt throughput: 0.0 tokens/s, Avg generation "
        f"throughput: {gen:.1f} tokens/s, Running: 1 reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU "
        "KV cache usage: 2.0%, CPU KV cache usage: 0.0%."
    )


def v0_spec(accepted: int, drafted: int, emitted: int) -> str:
    return (
        "Speculative metrics: Draft acceptance rate: 0.600, System efficiency: 0.500, Number of "
        f"speculative tokens: 4, Number of accepted tokens: {accepted}, Number of draft tokens: "
        f"{drafted}, Number of emitted tokens: {emitted}."
    )


def test_v0_cumulative_counters_are_differenced_and_a_drop_is_a_restart() -> None:
    d = EngineLogDeriver("e")
    e = labels(None)
    out = feed(
        d,
        [
            (v0_stats(40.0), 5.0),
            (corpus(80), 5.0),  # real: accepted 32594, drafted 53716, emitted 34244; a baseline
            (v0_stats(50.0), 10.0),
            (v0_spec(32894, 54116, 34494), 10.0),  # +400 tokens = 100 drafts, +250 emitted
            (v0_stats(45.0), 15.0),
            (v0_spec(120, 400, 150), 15.0),  # every count dropped: the engine restarted
            (v0_stats(40.0), 20.0),
            (v0_spec(420, 800, 450), 20.0),  # +100 drafts, +300 emitted since the restart
        ],
    )
    # V0 MAL = emitted / drafts (engine.md 3.3), never 1 + accepted / drafts.
    assert values(out, n.MAL) == [(e, pytest.approx(2.5), 10.0), (e, pytest.approx(3.0), 20.0)]
    assert values(out, n.DRAFT_ACCEPT) == [(e, 0.75, 10.0), (e, 0.75, 20.0)]
    assert values(out, n.STEPS) == [
        (e, pytest.approx(20.0), 10.0),
        (e, pytest.approx(40 / 3), 20.0),
    ]
    assert all(v >= 0 for _, v, _ in values(out, n.MAL) + values(out, n.DRAFT_ACCEPT))
    assert {(e.name, e.at) for e in out if isinstance(e, SeriesEnd)} >= {
        (n.MAL, 15.0),
        (n.STEPS, 15.0),
    }


def test_dp_ranks_are_kept_separate() -> None:
    windows: list[StatsWindow] = []
    d = EngineLogDeriver("e", on_window=windows.append)
    out = feed(
        d,
        [
            (corpus(31), 37.0),  # Engine 000 (real DP=2 lines)
            (corpus(32), 37.0),  # Engine 001
            (v1_stats("11:46:47", 90.0, engine=0), 47.0),
            (v1_spec("11:46:47", 3.00, 600, 1200, "0.800, 0.600, 0.400, 0.200"), 47.0),
            (v1_stats("11:46:47", 60.0, engine=1), 47.0),
            (v1_spec("11:46:47", 2.00, 200, 800, "0.500, 0.250, 0.150, 0.100"), 47.0),
        ],
    )
    d.flush()
    assert values(out, n.DECODE) == [
        (labels("0"), 10.3, 37.0),
        (labels("1"), 10.0, 37.0),
        (labels("0"), 90.0, 47.0),
        (labels("1"), 60.0, 47.0),
    ]
    assert values(out, n.MAL) == [(labels("0"), 3.0, 47.0), (labels("1"), 2.0, 47.0)]
    assert [(w.dp_rank, w.mal) for w in windows if w.at == 47.0] == [("0", 3.0), ("1", 2.0)]


def test_aggregated_line_has_no_dp_rank() -> None:
    # CONSTRUCTED from the aggregated example quoted in engine.md 2.1.
    line = (
        "(APIServer pid=66) INFO 09-02 08:46:23 [v1/metrics/loggers.py:271] 2 Engines Aggregated: "
        "Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 50.0 tokens/s, Running: "
        "2 reqs, Waiting: 0 reqs, GPU KV cache usage: 1.0%, Prefix cache hit rate: 0.0%"
    )
    out = feed(EngineLogDeriver("e"), [(line, 1.0)])
    assert values(out, n.DECODE) == [(labels(None), 50.0, 1.0)]
    assert values(out, n.RUNNING) == [(labels(None), 2.0, 1.0)]


def test_stats_fields_and_units() -> None:
    out = feed(EngineLogDeriver("e"), [(corpus(8), 1.0)])
    by_name = {e.name: e.value for e in out if isinstance(e, GaugeSet)}
    assert by_name == {
        n.DECODE: 734.9,
        n.PREFILL: 12068.8,
        n.RUNNING: 18.0,
        n.WAITING: 33.0,
        n.KV_USAGE: pytest.approx(0.877),
        n.PREFIX_HIT: 0.0,
        n.LAST_STATS: 1.0,
    }
    assert not any(isinstance(e, Event) for e in out)  # stats windows are samples, not events


def test_v0_prefix_cache_line_joins_the_stats_window() -> None:
    # The real V0 prefix-cache line quoted in engine.md 2.1 (#18674), after a V0 stats line.
    cache = "INFO 05-25 06:50:29 [metrics.py:502] Prefix cache hit rate: GPU: 25.00%, CPU: 90.00%"
    out = feed(EngineLogDeriver("e"), [(v0_stats(41.7), 29.0), (cache, 29.0)])
    assert values(out, n.PREFIX_HIT) == [(labels(None), 0.25, 29.0)]


def test_speculation_off_gives_step_rate_equal_to_decode() -> None:
    d = EngineLogDeriver("e", speculative=False)
    out = feed(d, [(v1_stats("10:00:10", 40.0), 10.0)])
    assert values(out, n.STEPS) == [(labels(), 40.0, 10.0)]
    assert values(out, n.MAL) == []

    # Not configured: inferred after six busy windows of one start without any spec line.
    d = EngineLogDeriver("e")
    items = [(v1_stats(f"10:01:{10 * i:02d}", 40.0), float(i * 10)) for i in range(8)]
    out = feed(d, items)
    assert d.spec_mode == "off"
    assert [at for _, _, at in values(out, n.STEPS)] == [60.0, 70.0]
    assert values(out, n.MAL) == []


def test_sglang_decode_lines_carry_their_own_mal() -> None:
    # L73/L74: EAGLE3 accept len 1.95 at 178.86 tok/s is 91.7 request-steps/s (engine.md 7.2).
    out = feed(EngineLogDeriver("e"), [(corpus(73), 1.0), (corpus(74), 2.0)])
    assert values(out, n.MAL)[-1] == (labels(None), 1.95, 2.0)
    assert values(out, n.STEPS)[-1][1] == pytest.approx(178.86 / 1.95)
    assert values(out, n.KV_USAGE)[-1][1] == 0.0
    # L66: no accept len, so no speculation: step rate = decode.
    out = feed(EngineLogDeriver("e"), [(corpus(66), 1.0)])
    assert values(out, n.MAL) == []
    assert values(out, n.STEPS) == [(labels(None), 186.64, 1.0)]


def test_restart_and_crash_end_the_window_series() -> None:
    d = EngineLogDeriver("e")
    out = feed(d, [(v1_stats("10:00:10", 100.0), 10.0), (corpus(47), 40.0)])
    # start-up line after running: a restart — the old process's series end, a new start time.
    assert labels() in ended(out, n.RUNNING)
    assert values(out, n.START_TIME) == [(make_labels({"engine": "e"}), 40.0, 40.0)]
    assert values(out, n.KV_CAPACITY) == [(make_labels({"engine": "e"}), 396448.0, 40.0)]
    # L46 (EngineCore_DP0) in the same start: no second start, KV concurrency is an event.
    out = feed(d, [(corpus(46), 41.0)])
    assert values(out, n.START_TIME) == []
    assert [e.labels["event"] for e in out if isinstance(e, Event)] == ["max_concurrency"]

    out = feed(d, [(v1_stats("10:05:00", 80.0), 300.0), (corpus(33), 301.0)])
    assert ended(out, n.RUNNING) == [labels()]  # L33 fatal error: not a stall suspect
    assert feed(d, [(corpus(36), 302.0)]) == []  # already ended


def test_startup_events_skip_route_chatter() -> None:
    out = feed(EngineLogDeriver("e"), [(corpus(60), 1.0), (corpus(58), 2.0), (corpus(57), 3.0)])
    events = [e for e in out if isinstance(e, Event)]
    assert [e.labels["event"] for e in events] == ["api_server_starting", "version"]
    assert events[1].details["version"] == "0.10.2.dev378+g4d7fe40fc.d20250829"
    assert events[1].key == "test.log:3" and events[1].line == 3 and events[1].type == "startup"


def test_line_event_has_design_fields() -> None:
    spec = parse_engine_line(corpus(10))
    assert spec is not None
    event = engine_line_event(spec, engine="e", source="x.log", line=10)
    assert event is not None
    assert (event["type"], event["source"], event["line"], event["engine"]) == (
        "spec_decode",
        "x.log",
        10,
        "e",
    )
    assert event["mal"] == 2.2 and event["per_position"] == [0.615, 0.415, 0.169]
    assert "prefix" not in event
    line7 = parse_engine_line(corpus(7))
    assert line7 is not None
    stats = engine_line_event(line7, engine="e", source="x", line=7)
    assert stats is not None and stats["gen_tps"] == 4.8 and stats["dp_rank"] == 0
    crash = parse_engine_line(corpus(19))
    assert crash is not None
    assert engine_line_event(crash, engine="e", source="x", line=19) is None


def test_v0_line_event_states_the_mal_derived_from_its_counts() -> None:
    """A V0 line prints no MAL; its event (and the corpus) carries emitted / (drafted / k)."""
    v0 = parse_engine_line(corpus(80))
    assert v0 is not None and v0.type == "spec_decode" and v0.mal is None
    event = engine_line_event(v0, engine="e", source="x", line=80)
    assert event is not None and event["mal"] == 2.55


def test_generated_tokens_counter_sums_windows_and_stays_flat_in_a_gap() -> None:

    d = EngineLogDeriver("e")
    effects = feed(
        d,
        [
            (v1_stats("05-08 16:00:10", 100.0), 10.0),
            (v1_stats("05-08 16:00:20", 120.0), 20.0),
            (v1_stats("05-08 16:00:30", 0.0), 30.0),
            (v1_stats("05-08 16:05:00", 90.0), 300.0),  # 270 s later: idle time, not a window
        ],
    )
    incs = [e for e in effects if isinstance(e, CounterInc) and e.name == n.GENERATED]
    assert [i.delta for i in incs] == [0.0, 1200.0, 0.0, 0.0]
    assert all(i.labels == labels() for i in incs)


def test_what_it_remembers_is_bounded_whatever_the_log_names() -> None:
    """Ever new DP ranks: every line still gives its effects (the store's limits judge them),
    but the deriver keeps at most MAX_TRACKED label sets, written series and last times."""
    d = EngineLogDeriver("e")
    line = (
        "Engine {n:03d}: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 1.0 "
        "tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache usage: 1.0%, "
        "Prefix cache hit rate: 0.0%"
    )
    out = feed(d, [(line.format(n=n), float(n)) for n in range(MAX_TRACKED + 500)])
    ranks = {dict(e.labels).get("dp_rank") for e in out if isinstance(e, GaugeSet)}
    assert len(ranks) == MAX_TRACKED + 500
    assert len(d._labels) <= MAX_TRACKED
    assert len(d._written) <= MAX_TRACKED
    assert len(d._last_stats) <= MAX_TRACKED


def test_readings_the_store_drops_are_made_once_per_series() -> None:
    """With a store that keeps readings of some gauges only (a replay's), a gauge it drops is
    written once per series, so the store creates it (limits, series count), and not again;
    one the store refused stays written, so each refusal is counted as before."""
    unread = {n.POSITION, n.DRAFT_ACCEPT}
    window = [(corpus(9), 100.0), (corpus(10), 100.0)]
    plain = feed(EngineLogDeriver("e"), window + [(t, at + 10) for t, at in window])
    store = SeriesStore(FakeClock(0.0), reads=lambda name: name not in unread)
    d = EngineLogDeriver("e", keeping=store)
    lean: list[Effect] = []
    for text, at in window + [(t, at + 10) for t, at in window]:
        effects = feed(d, [(text, at)])
        apply(effects, store)
        lean += effects
    assert [e for e in plain if not (isinstance(e, GaugeSet) and e.name in unread)] == [
        e for e in lean if not (isinstance(e, GaugeSet) and e.name in unread)
    ]
    assert len(values(plain, n.POSITION)) == 6 and len(values(lean, n.POSITION)) == 3
    assert [at for _, _, at in values(lean, n.DRAFT_ACCEPT)] == [100.0]
    assert sorted(dict(s.labels)["position"] for s in store.family(n.POSITION)) == ["0", "1", "2"]
    # a store at its series limit refuses them: every reading is tried, and each refusal
    # counted, as without the shortcut
    counted = []
    for keeping in (False, True):
        full = SeriesStore(
            FakeClock(0.0), limits=SeriesLimits(series_total=0), reads=set().__contains__
        )
        d = EngineLogDeriver("e", keeping=full if keeping else None)
        made: list[Effect] = []
        for text, at in window + [(t, at + 10) for t, at in window]:
            effects = feed(d, [(text, at)])
            apply(effects, full)
            made += effects
        assert len(values(made, n.POSITION)) == 6
        counted.append(dict(full.admission.dropped))
    assert counted[0] == counted[1] and counted[0]["series_total"] > 6
