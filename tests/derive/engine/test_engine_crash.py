"""Crash incidents: one per chain of crash lines, labelled with the root-cause signature.

Real chains from tests/fixtures/corpus/engine-lines.txt (L<n>); CONSTRUCTED lines follow the
templates of reference/engine.md 5.1-5.2 and say so.
"""

from __future__ import annotations

from pathlib import Path

from inferwatch.derive.effects import CounterInc, Effect
from inferwatch.derive.engine import names as n
from inferwatch.derive.engine.crash import EngineCrashTracker
from inferwatch.event import Event
from inferwatch.labels import make_labels
from inferwatch.parsers.engine import parse_engine_line

CORPUS = Path(__file__).resolve().parents[2] / "fixtures" / "corpus" / "engine-lines.txt"
LINES = CORPUS.read_text(encoding="utf-8").split("\n")
STATS = LINES[82]  # L83, an ordinary stats line


def feed(t: EngineCrashTracker, items: list[tuple[int, str, float]]) -> list[Effect]:
    out: list[Effect] = []
    for line, text, at in items:
        out += t.feed(parse_engine_line(text), at, line, "vllm.log", f"vllm.log:{line}")
    return out


def corpus(first: int, last: int, at: float) -> list[tuple[int, str, float]]:
    return [(i, LINES[i - 1], at) for i in range(first, last + 1)]


def incidents(effects: list[Effect]) -> list[tuple[dict[str, str], float]]:
    return [(dict(e.labels), e.delta) for e in effects if isinstance(e, CounterInc)]


def test_illegal_memory_access_chain_is_one_incident_with_the_root_cause() -> None:
    # L19 worker CUDA error, L20 its hint line, L21 EngineCore failed to start.
    t = EngineCrashTracker("flash")
    assert feed(t, corpus(19, 21, 1000.0)) == []  # undecided while the window is open
    out = t.flush()  # end of input decides it
    assert incidents(out) == [({"engine": "flash", "signature": "illegal_memory_access"}, 1.0)]
    (event,) = [e for e in out if isinstance(e, Event)]
    assert event.type == "engine_crash" and event.at == 1000.0 and event.line == 19
    assert event.labels == {"engine": "flash", "signature": "illegal_memory_access"}
    assert event.details["signatures"] == ["illegal_memory_access", "startup_failed"]
    assert event.details["lines"] == [19, 21]
    assert event.details["root_cause"] == "CUDA error: an illegal memory access was encountered"
    assert event.key == "vllm.log:19:crash"
    assert t.flush() == []  # decided once


def test_dp_crash_sequence_counts_once_not_per_line() -> None:
    # L31-L37: v0.9.1 DP=2 crash — fatal error + AttributeError, output_handler failed +
    # EngineDeadError, HTTP shutdown: one incident, root cause the AttributeError.
    t = EngineCrashTracker("flash")
    out = feed(t, corpus(31, 37, 500.0)) + t.flush()
    assert incidents(out) == [({"engine": "flash", "signature": "exception"}, 1.0)]
    (event,) = [e for e in out if isinstance(e, Event)]
    assert event.details["exception"] == "AttributeError"
    assert event.details["signatures"] == ["exception", "engine_dead"]


def test_nccl_chain_prefers_the_specific_fault_over_the_fatal_error_line() -> None:
    # L76-L79 as one constructed sequence (real lines from different logs, one second apart).
    t = EngineCrashTracker("e")
    out = feed(t, [(76, LINES[75], 1.0), (77, LINES[76], 1.5), (78, LINES[77], 2.0)])
    out += t.flush()
    assert incidents(out) == [({"engine": "e", "signature": "nccl"}, 1.0)]


def test_separate_deaths_are_separate_incidents_decided_as_input_moves_on() -> None:
    t = EngineCrashTracker("e", window=5.0)
    out = feed(t, corpus(23, 24, 100.0))  # L23-24: output_handler failed + EngineDeadError
    # Later input: more than `window` seconds and more lines than the grouper can hold a block.
    out += feed(t, [(100 + i, STATS, 120.0 + i) for i in range(60)])
    assert incidents(out) == [({"engine": "e", "signature": "engine_dead"}, 1.0)]
    out = feed(t, corpus(39, 39, 400.0)) + t.flush()  # L39: NPU OOM
    assert incidents(out) == [({"engine": "e", "signature": "npu_oom"}, 1.0)]


def test_flush_with_now_waits_for_the_window_to_close() -> None:
    t = EngineCrashTracker("e", window=5.0)
    feed(t, corpus(33, 34, 100.0))
    assert t.flush(now=103.0) == []  # still inside the chain's window: more lines may come
    out = t.flush(now=106.0)  # the daemon's tick, the log has been quiet
    assert incidents(out) == [({"engine": "e", "signature": "exception"}, 1.0)]


def test_request_error_alone_is_not_a_crash() -> None:
    t = EngineCrashTracker("e")
    out = feed(t, corpus(28, 28, 1.0)) + t.flush()
    assert out == []


def test_a_bare_worker_exception_is_root_cause_only_inside_a_chain() -> None:
    # CONSTRUCTED (engine.md 5.1-5.2): a worker's bare exception, then the engine core's fatal
    # error and the client's "died unexpectedly" two seconds later.
    worker = (
        "(Worker_TP1 pid=88) ERROR 05-08 16:30:01 [multiproc_executor.py:1007] RuntimeError: "
        "shape mismatch in the draft proposer"
    )
    fatal = "(EngineCore_DP0 pid=9) ERROR 05-08 16:30:03 [core.py:710] EngineCore encountered a fatal error."
    died = (
        "(APIServer pid=7) ERROR 05-08 16:30:03 [core_client.py:564] Engine core proc "
        "EngineCore_DP0 died unexpectedly, shutting down client."
    )
    t = EngineCrashTracker("e")
    out = feed(t, [(1, worker, 1.0), (2, fatal, 3.0), (3, died, 3.0)]) + t.flush()
    assert incidents(out) == [({"engine": "e", "signature": "exception"}, 1.0)]
    (event,) = [e for e in out if isinstance(e, Event)]
    assert event.line == 1 and event.at == 1.0
    assert event.details["exception"] == "RuntimeError"
    assert event.details["signatures"] == ["exception", "fatal_error", "engine_died"]

    # The same exception nowhere near an engine death is no incident.
    t = EngineCrashTracker("e")
    out = feed(t, [(1, worker, 1.0), (2, STATS, 60.0)]) + t.flush()
    assert incidents(out) == []


def test_a_start_up_assertion_is_an_incident() -> None:
    # CONSTRUCTED: host A's start-up assertion (host.md), with nothing else logged.
    assertion = (
        "(EngineCore_DP0 pid=9) ERROR 05-08 16:30:01 [core.py:710] AssertionError: expert "
        "parallel group size must divide the number of experts"
    )
    t = EngineCrashTracker("e")
    out = feed(t, [(1, assertion, 1.0)]) + t.flush()
    assert incidents(out) == [({"engine": "e", "signature": "assertion"}, 1.0)]


def test_counter_labels() -> None:
    t = EngineCrashTracker("flash")
    out = feed(t, corpus(42, 42, 1.0)) + feed(t, corpus(21, 21, 2.0)) + t.flush()  # OOM at start
    (inc,) = [e for e in out if isinstance(e, CounterInc)]
    assert inc.name == n.CRASHES
    assert inc.labels == make_labels({"engine": "flash", "signature": "cuda_oom"})


HINT = LINES[74]  # L75, the shm-broadcast hint: an unrelated line that moves the grouper


def ticking(
    t: EngineCrashTracker, start: float, items: dict[float, list[tuple[int, str]]], until: float
) -> list[tuple[float, Effect]]:
    """Unrelated lines every 0.5 s from ``start`` (stats and hints, alternating), the crash
    lines of ``items`` at their times, and a flush every second as the daemon's tick: every
    effect with the time it came out."""
    out: list[tuple[float, Effect]] = []
    now, line = start, 1000
    while now <= until:
        for number, text in items.get(now, []):
            out += [(now, e) for e in t.feed(parse_engine_line(text), now, number, "v.log", "k")]
        line += 1
        filler = STATS if line % 2 else HINT
        out += [(now, e) for e in t.feed(parse_engine_line(filler), now, line, "v.log", "k")]
        if now == int(now):
            out += [(now, e) for e in t.flush(now)]
        now += 0.5
    return out


def test_page_within_the_window_while_unrelated_lines_keep_coming() -> None:
    # L19 (worker IMA) at 100.0, L21 (failed to start) at 102.0: one incident, paged by 105.0.
    t = EngineCrashTracker("e", window=5.0)
    out = ticking(t, 100.0, {100.0: [(19, LINES[18])], 102.0: [(21, LINES[20])]}, 140.0)
    counted = [(now, e) for now, e in out if isinstance(e, CounterInc) and e.name == n.CRASHES]
    assert len(counted) == 1
    now, inc = counted[0]
    assert now - 100.0 <= 5.0 and inc.at == 100.0
    assert dict(inc.labels) == {"engine": "e", "signature": "illegal_memory_access"}
    (event,) = [e for _, e in out if isinstance(e, Event)]
    assert event.details["signatures"] == ["illegal_memory_access", "startup_failed"]


def test_a_root_cause_joins_only_within_the_window_and_never_counts_twice() -> None:
    # L33 fatal error at 100.0; its AttributeError (L34) at 102.0 joins and names the cause.
    t = EngineCrashTracker("e", window=5.0)
    out = ticking(t, 100.0, {100.0: [(33, LINES[32])], 102.0: [(34, LINES[33])]}, 120.0)
    (inc,) = [e for _, e in out if isinstance(e, CounterInc)]
    assert dict(inc.labels)["signature"] == "exception"
    # The same root cause 7 s after the fatal error: the page went out without it, at 104; the
    # API server's lines of the same death (L23-L24) at 104.5 and the late root cause do not
    # count again.
    t = EngineCrashTracker("e", window=5.0)
    items = {
        100.0: [(33, LINES[32])],
        104.5: [(23, LINES[22]), (24, LINES[23])],
        107.0: [(34, LINES[33])],
    }
    out = ticking(t, 100.0, items, 130.0)
    counted = [(now, e) for now, e in out if isinstance(e, CounterInc)]
    assert [(now, dict(e.labels)["signature"]) for now, e in counted] == [(104.0, "fatal_error")]
    # A death 20 s after the last line of the first one is a second incident.
    items[124.0] = [(123, LINES[22]), (124, LINES[23])]
    t = EngineCrashTracker("e", window=5.0)
    out = ticking(t, 100.0, items, 140.0)
    assert len([e for _, e in out if isinstance(e, CounterInc)]) == 2


def test_a_new_start_ends_the_incident() -> None:
    # L23-24 (the API server's death lines) at 100, a start-up line at 200, the same lines at
    # 203: two deaths of two processes, two counts.
    t = EngineCrashTracker("e", window=5.0)
    start = LINES[56]  # L57, the version banner of a starting engine
    items = {
        100.0: [(23, LINES[22]), (24, LINES[23])],
        200.0: [(57, start)],
        203.0: [(123, LINES[22]), (124, LINES[23])],
    }
    out = ticking(t, 100.0, items, 230.0)
    assert len([e for _, e in out if isinstance(e, CounterInc)]) == 2
