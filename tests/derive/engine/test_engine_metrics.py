"""The /metrics derivation: counter deltas between scrapes, resets, MAL, step rate, up/down.

Scrape texts are the MODELLED fixtures in tests/fixtures/engine/ (not captured; see their
headers) and small expositions built here from the names of reference/engine.md 4, 7.3 and 8.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from inferwatch.derive.effects import Effect, GaugeSet, SeriesEnd
from inferwatch.derive.engine import names as n
from inferwatch.derive.engine.metrics import EngineMetricsDeriver
from inferwatch.labels import make_labels
from inferwatch.parsers.promtext import MetricSample, parse_exposition

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "engine"
E0 = make_labels({"engine": "e", "dp_rank": "0"})
E = make_labels({"engine": "e"})


def scrape(name: str) -> list[MetricSample]:
    return parse_exposition((FIXTURES / name).read_text(encoding="utf-8"))


def gauges(
    effects: tuple[Effect, ...] | list[Effect],
) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {(e.name, e.labels): e.value for e in effects if isinstance(e, GaugeSet)}


def ends(effects: tuple[Effect, ...] | list[Effect]) -> set[str]:
    return {e.name for e in effects if isinstance(e, SeriesEnd)}


def vllm(
    *,
    gen: float,
    drafts: float | None,
    accepted: float,
    running: float = 1,
    engine: str = "0",
    per_pos: tuple[float, ...] = (),
) -> str:
    lab = f'engine="{engine}",model_name="m"'
    text = (
        "# TYPE vllm:num_requests_running gauge\n"
        f"vllm:num_requests_running{{{lab}}} {running}\n"
        "# TYPE vllm:generation_tokens_total counter\n"
        f"vllm:generation_tokens_total{{{lab}}} {gen}\n"
        "# TYPE vllm:spec_decode_num_accepted_tokens_total counter\n"
        f"vllm:spec_decode_num_accepted_tokens_total{{{lab}}} {accepted}\n"
        "# TYPE vllm:spec_decode_num_draft_tokens_total counter\n"
        f"vllm:spec_decode_num_draft_tokens_total{{{lab}}} {(drafts or accepted) * 4}\n"
    )
    if drafts is not None:
        text += (
            "# TYPE vllm:spec_decode_num_drafts_total counter\n"
            f"vllm:spec_decode_num_drafts_total{{{lab}}} {drafts}\n"
        )
    if per_pos:
        text += "# TYPE vllm:spec_decode_num_accepted_tokens_per_pos_total counter\n"
        for i, v in enumerate(per_pos):
            text += (
                f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{{lab},position="{i}"}} {v}\n'
            )
    return text


def test_first_scrape_gives_no_rate_then_counter_deltas() -> None:
    d = EngineMetricsDeriver("e")
    first = d.feed(scrape("vllm_v1_scrape_1.prom"), 100.0)
    g = gauges(first.effects)
    assert g[(n.UP, E)] == 1.0
    assert g[(n.RUNNING, E0)] == 1.0 and g[(n.KV_USAGE, E0)] == 0.042
    assert (n.DECODE, E0) not in g and (n.MAL, E0) not in g  # no rate from one scrape
    assert {n.DECODE, n.MAL, n.STEPS, n.POSITION} <= first.claims

    second = d.feed(scrape("vllm_v1_scrape_2.prom"), 110.0)
    g = gauges(second.effects)
    assert g[(n.DECODE, E0)] == pytest.approx(100.0)  # +1000 tokens in 10 s
    assert g[(n.MAL, E0)] == pytest.approx(1 + 640 / 360)
    assert g[(n.DRAFT_ACCEPT, E0)] == pytest.approx(640 / 1440)
    # One request running: the exact request-step rate is d drafts / dt (engine.md 3.4).
    assert g[(n.STEPS, E0)] == pytest.approx(36.0)
    assert g[(n.FORWARD_STEPS, E0)] == pytest.approx(36.1)
    positions = [g[(n.POSITION, make_labels({"engine": "e", "dp_rank": "0", "position": str(i)}))]
                 for i in range(4)]  # fmt: skip
    assert positions == pytest.approx([270 / 360, 190 / 360, 120 / 360, 60 / 360])
    assert sum(positions) == pytest.approx(g[(n.MAL, E0)] - 1)
    assert not second.restarted


def test_counter_reset_is_a_restart_never_a_negative_rate() -> None:
    d = EngineMetricsDeriver("e")
    d.feed(scrape("vllm_v1_scrape_1.prom"), 100.0)
    d.feed(scrape("vllm_v1_scrape_2.prom"), 110.0)
    third = d.feed(scrape("vllm_v1_scrape_3.prom"), 120.0)  # every counter went down
    assert third.restarted
    g = gauges(third.effects)
    assert all(value >= 0 for value in g.values())
    assert (n.DECODE, E0) not in g and (n.MAL, E0) not in g  # windows never span a restart
    assert {n.DECODE, n.MAL, n.STEPS, n.POSITION} <= ends(third.effects)
    assert g[(n.RUNNING, E0)] == 1.0  # gauges still read
    # The next scrape differences against the restarted process.
    text = (FIXTURES / "vllm_v1_scrape_3.prom").read_text(encoding="utf-8")
    fourth = d.feed(parse_exposition(text.replace("} 120.0", "} 620.0")), 130.0)
    assert gauges(fourth.effects)[(n.DECODE, E0)] == pytest.approx(50.0)


def test_mal_absent_when_nothing_was_drafted() -> None:
    d = EngineMetricsDeriver("e")
    d.feed(parse_exposition(vllm(gen=100, drafts=40, accepted=60)), 0.0)
    busy = d.feed(parse_exposition(vllm(gen=200, drafts=80, accepted=120)), 10.0)
    assert gauges(busy.effects)[(n.MAL, E0)] == pytest.approx(2.5)
    idle = d.feed(parse_exposition(vllm(gen=200, drafts=80, accepted=120, running=0)), 20.0)
    g = gauges(idle.effects)
    assert (n.MAL, E0) not in g  # undefined, not 1 (engine.md 4.3)
    assert {n.MAL, n.STEPS} <= ends(idle.effects)
    assert g[(n.DECODE, E0)] == 0.0
    assert n.MAL in idle.claims  # still /metrics' series: the log must not fill in


def test_several_running_requests_use_decode_over_mal() -> None:
    d = EngineMetricsDeriver("e")
    d.feed(parse_exposition(vllm(gen=0, drafts=0, accepted=0, running=3)), 0.0)
    r = d.feed(parse_exposition(vllm(gen=900, drafts=300, accepted=600, running=3)), 10.0)
    g = gauges(r.effects)
    assert g[(n.MAL, E0)] == pytest.approx(3.0)
    assert g[(n.STEPS, E0)] == pytest.approx(90.0 / 3.0)


def test_without_drafts_counter_mal_is_left_to_the_log() -> None:
    # 0.8-era V1: draft-token and accepted counters only, no drafts counter (engine.md 4.2).
    d = EngineMetricsDeriver("e")
    first = d.feed(parse_exposition(vllm(gen=0, drafts=None, accepted=0)), 0.0)
    r = d.feed(parse_exposition(vllm(gen=500, drafts=None, accepted=200)), 10.0)
    assert n.MAL not in first.claims and n.STEPS not in first.claims
    assert (n.MAL, E0) not in gauges(r.effects)
    assert gauges(r.effects)[(n.DECODE, E0)] == 50.0


def test_dp_engines_stay_separate() -> None:
    text = vllm(gen=100, drafts=50, accepted=50, engine="0") + vllm(
        gen=300, drafts=100, accepted=200, engine="1"
    ).replace("# TYPE", "# HELP")  # one TYPE line per family
    text2 = vllm(gen=200, drafts=100, accepted=100, engine="0") + vllm(
        gen=500, drafts=150, accepted=300, engine="1"
    ).replace("# TYPE", "# HELP")
    d = EngineMetricsDeriver("e")
    d.feed(parse_exposition(text), 0.0)
    g = gauges(d.feed(parse_exposition(text2), 10.0).effects)
    e1 = make_labels({"engine": "e", "dp_rank": "1"})
    assert g[(n.DECODE, E0)] == 10.0 and g[(n.DECODE, e1)] == 20.0
    assert g[(n.MAL, E0)] == 2.0 and g[(n.MAL, e1)] == 3.0


def test_sglang_and_llamacpp() -> None:
    sg = (FIXTURES / "sglang_metrics.prom").read_text(encoding="utf-8")
    d = EngineMetricsDeriver("s")
    d.feed(parse_exposition(sg), 0.0)
    later = sg.replace("} 294.0", "} 1294.0").replace("} 151.0", "} 551.0")
    g = gauges(d.feed(parse_exposition(later), 10.0).effects)
    s = make_labels({"engine": "s"})
    assert g[(n.DECODE, s)] == 100.0
    assert g[(n.MAL, s)] == pytest.approx(1000 / 400)  # d generation / d spec_verify_calls
    assert g[(n.STEPS, s)] == 40.0
    assert g[(n.RUNNING, s)] == 1.0 and g[(n.PREFIX_HIT, s)] == 0.42

    lc = (FIXTURES / "llamacpp_metrics.prom").read_text(encoding="utf-8")
    d = EngineMetricsDeriver("l")
    d.feed(parse_exposition(lc), 0.0)
    later = lc.replace("tokens_predicted_total 1280", "tokens_predicted_total 1780").replace(
        "n_decode_total 1300", "n_decode_total 1810"
    )
    g = gauges(d.feed(parse_exposition(later), 5.0).effects)
    lab = make_labels({"engine": "l"})
    assert g[(n.DECODE, lab)] == 100.0
    assert g[(n.FORWARD_STEPS, lab)] == 102.0
    assert g[(n.STEPS, lab)] == 100.0  # no speculation on llama.cpp's /metrics
    assert (n.MAL, lab) not in g


def test_v0_mal_needs_k() -> None:
    v0 = (FIXTURES / "vllm_v0_metrics.prom").read_text(encoding="utf-8")
    later = (
        v0.replace("} 34244.0", "} 34494.0")
        .replace("} 53716.0", "} 54116.0")
        .replace("} 32594.0", "} 32894.0")
    )
    d = EngineMetricsDeriver("v", num_speculative_tokens=4)
    d.feed(parse_exposition(v0), 0.0)
    g = gauges(d.feed(parse_exposition(later), 10.0).effects)
    assert g[(n.MAL, make_labels({"engine": "v"}))] == pytest.approx(2.5)  # emitted / drafts
    d = EngineMetricsDeriver("v")
    d.feed(parse_exposition(v0), 0.0)
    assert (n.MAL, make_labels({"engine": "v"})) not in gauges(
        d.feed(parse_exposition(later), 10.0).effects
    )


def test_down_ends_series_and_restarts_the_baseline() -> None:
    d = EngineMetricsDeriver("e")
    d.feed(scrape("vllm_v1_scrape_1.prom"), 100.0)
    d.feed(scrape("vllm_v1_scrape_2.prom"), 110.0)
    down = d.down(115.0)
    assert gauges(down)[(n.UP, E)] == 0.0
    assert {n.DECODE, n.MAL, n.RUNNING} <= ends(down)
    back = d.feed(scrape("vllm_v1_scrape_2.prom"), 130.0)
    assert (n.DECODE, E0) not in gauges(back.effects)  # no rate across the outage


def test_empty_body_is_up_without_samples() -> None:
    r = EngineMetricsDeriver("e").feed(parse_exposition(""), 1.0)
    assert gauges(r.effects) == {(n.UP, E): 1.0}
    assert r.claims == frozenset()
