"""The service debouncer on a fake timeline: UP/DOWN after streaks, STARTING while a young
process loads, FLAPPING once for alternating results, and alternation never moving the state."""

from __future__ import annotations

from inferwatch.derive.service_state import (
    Debouncer,
    DebounceSettings,
    Observation,
    ServiceState,
)

UP, DOWN = ServiceState.UP, ServiceState.DOWN
STARTING, FLAPPING = ServiceState.STARTING, ServiceState.FLAPPING
T0 = 1_700_000_000.0
STEP = 10.0


def run(
    d: Debouncer, oks: list[bool], start: float = T0, **kw: object
) -> list[tuple[int, ServiceState]]:
    """Feed one observation per STEP; the (probe index, new state) of each transition."""
    out = []
    for i, ok in enumerate(oks):
        change = d.observe(Observation(start + i * STEP, ok, "" if ok else "http", "", **kw))  # type: ignore[arg-type]
        if change is not None:
            out.append((i, change.new))
    return out


def test_up_after_two_good_down_after_three_bad() -> None:
    d = Debouncer(DebounceSettings())
    assert run(d, [True, True, True, False, False, True, False, False, False]) == [
        (1, UP), (8, DOWN),
    ]  # fmt: skip
    assert (d.check, d.state) == ("http", DOWN)


def test_alternation_never_moves_the_state_and_flaps_once() -> None:
    d = Debouncer(DebounceSettings())
    seen = run(d, [True, True] + [False, True] * 30)
    assert seen == [(1, UP), (8, FLAPPING)]  # the 7th change in the window: more than 6


def test_alternation_from_down_flaps_once_without_up() -> None:
    d = Debouncer(DebounceSettings(startup_grace=0))
    seen = run(d, [False] * 3 + [True, False] * 20)
    assert seen == [(2, DOWN), (9, FLAPPING)]


def test_flapping_ends_when_the_window_calms_and_a_streak_decides() -> None:
    d = Debouncer(DebounceSettings(flap_window=100.0))
    seen = run(d, [True, True] + [False, True] * 5 + [True] * 20)
    assert [s for _, s in seen] == [UP, FLAPPING, UP]
    _, back = seen[-1]
    assert back is UP and seen[-1][0] * STEP - seen[1][0] * STEP >= 30.0


def test_young_process_is_starting_then_up() -> None:
    d = Debouncer(DebounceSettings())
    seen = run(d, [False] * 12 + [True] * 2, alive=True, started_at=T0 - 5)
    assert seen == [(2, STARTING), (13, UP)]


def test_start_up_past_the_grace_stays_starting_but_overdue() -> None:
    d = Debouncer(DebounceSettings(startup_grace=60.0))
    assert run(d, [False] * 10, alive=True, started_at=T0) == [(2, STARTING)]
    assert d.overdue(T0 + 50) is False
    assert d.overdue(T0 + 61) is True


def test_dead_process_is_down_even_within_the_grace() -> None:
    d = Debouncer(DebounceSettings())
    assert run(d, [False] * 3, alive=False, started_at=None) == [(2, DOWN)]


def test_crash_then_restart_reads_down_then_starting_then_up() -> None:
    d = Debouncer(DebounceSettings())
    run(d, [True, True], alive=True, started_at=T0 - 1000)
    seen = run(d, [False] * 3, start=T0 + 20, alive=False)
    seen += run(d, [False] * 3, start=T0 + 50, alive=True, started_at=T0 + 45)
    seen += run(d, [True] * 2, start=T0 + 80, alive=True, started_at=T0 + 45)
    assert [s for _, s in seen] == [DOWN, STARTING, UP]


def test_owner_restart_of_a_ready_service_is_starting_not_down() -> None:
    d = Debouncer(DebounceSettings())
    run(d, [True, True], alive=True, started_at=T0 - 1000)
    seen = run(d, [False] * 20, start=T0 + 20, alive=True, started_at=T0 + 15)
    assert [s for _, s in seen] == [STARTING]


def test_ready_process_that_stops_answering_is_down() -> None:
    d = Debouncer(DebounceSettings())
    run(d, [True, True], alive=True, started_at=T0 - 5)
    assert [s for _, s in run(d, [False] * 3, start=T0 + 20, alive=True, started_at=T0 - 5)] == [
        DOWN
    ]


def test_without_process_facts_the_grace_runs_from_the_first_probe() -> None:
    d = Debouncer(DebounceSettings(startup_grace=60.0))
    seen = run(d, [False] * 10)
    assert seen == [(2, STARTING), (6, DOWN)]  # 60 s after the first probe
