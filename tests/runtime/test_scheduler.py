from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest

from inferwatch.clock import FakeClock
from inferwatch.runtime.live_scheduler import LiveScheduler
from inferwatch.runtime.scheduler import VirtualScheduler, guard, run_virtual


def test_virtual_interval_jobs_run_at_their_times() -> None:
    clock = FakeClock(1000.0)
    sched = VirtualScheduler(clock)
    seen: list[tuple[str, float]] = []

    async def a() -> None:
        seen.append(("a", clock.time()))

    async def b() -> None:
        seen.append(("b", clock.time()))

    sched.every("a", 10, a)
    sched.every("b", 25, b)
    ran = asyncio.run(sched.run_until(1050.0))
    assert ran == len(seen) == 9
    assert [t for n, t in seen if n == "a"] == [1000, 1010, 1020, 1030, 1040, 1050]
    assert [t for n, t in seen if n == "b"] == [1000, 1025, 1050]
    assert clock.time() == 1050.0


def test_virtual_cron_fires_like_apscheduler() -> None:
    start = datetime(2026, 11, 28, 23, 0, tzinfo=UTC).timestamp()
    clock = FakeClock(start)
    sched = VirtualScheduler(clock)
    fired: list[str] = []

    async def digest() -> None:
        fired.append(datetime.fromtimestamp(clock.time(), UTC).isoformat())

    sched.cron("morning", "0 8 * * *", digest)
    asyncio.run(sched.run_until(start + 3 * 86400))
    assert fired == [
        "2026-11-29T08:00:00+00:00",
        "2026-11-30T08:00:00+00:00",
        "2026-12-01T08:00:00+00:00",
    ]


def test_failing_job_is_reported_and_keeps_running() -> None:
    clock = FakeClock(0.0)
    errors: list[str] = []
    sched = VirtualScheduler(clock, on_error=lambda name, exc: errors.append(f"{name}:{exc}"))
    runs = 0

    async def flaky() -> None:
        nonlocal runs
        runs += 1
        raise RuntimeError("boom")

    sched.every("flaky", 1, flaky)
    asyncio.run(sched.run_until(4.0))
    assert runs == 5
    assert errors == ["flaky:boom"] * 5


def test_removed_job_stops() -> None:
    clock = FakeClock(0.0)
    sched = VirtualScheduler(clock)
    runs: list[float] = []

    async def job() -> None:
        runs.append(clock.time())
        if len(runs) == 2:
            sched.remove("j")

    sched.every("j", 1, job)
    asyncio.run(sched.run_until(10.0))
    assert runs == [0.0, 1.0]


def test_live_scheduler_runs_a_job_and_never_overlaps_it() -> None:
    async def scenario() -> tuple[int, int]:
        sched = LiveScheduler()
        running = 0
        most = 0
        done = asyncio.Event()
        count = 0

        async def slow() -> None:
            nonlocal running, most, count
            running += 1
            most = max(most, running)
            await asyncio.sleep(0.3)  # longer than the interval: runs must not pile up
            running -= 1
            count += 1
            if count >= 2:
                done.set()

        sched.every("slow", 0.05, slow)
        sched.start()
        await asyncio.wait_for(done.wait(), 10)
        sched.shutdown()
        return most, count

    most, count = asyncio.run(scenario())
    assert most == 1
    assert count >= 2


def test_skip_to_coalesces_a_long_gap() -> None:
    clock = FakeClock(0.0)
    sched = VirtualScheduler(clock)
    runs: list[float] = []
    fired: list[float] = []

    async def job() -> None:
        runs.append(clock.time())

    async def daily() -> None:
        fired.append(clock.time())

    sched.every("tick", 10, job)
    sched.cron("daily", "0 8 * * *", daily)
    asyncio.run(sched.run_until(20.0))
    sched.skip_to(50 * 365 * 86400.0)  # fifty years later: nothing in between runs
    asyncio.run(sched.run_until(50 * 365 * 86400.0 + 86400.0))
    assert runs[:3] == [0.0, 10.0, 20.0]
    assert runs[3] == 50 * 365 * 86400.0
    assert len(runs) == 3 + 8641
    assert len(fired) == 1 and fired[0] % 86400 == 8 * 3600


def test_a_job_may_start_one_interval_late() -> None:
    clock = FakeClock(1000.0)
    sched = VirtualScheduler(clock)
    seen: list[float] = []

    async def job() -> None:
        seen.append(clock.time())

    sched.every("snapshot", 30, job, first_in=30)
    asyncio.run(sched.run_until(1095.0))
    assert seen == [1030, 1060, 1090]


def test_the_live_scheduler_starts_a_job_first_in_seconds_from_now() -> None:
    async def scenario() -> tuple[float, float]:
        sched = LiveScheduler()
        ran: list[float] = []
        done = asyncio.Event()
        loop = asyncio.get_running_loop()

        async def now_job() -> None:
            ran.append(loop.time())

        async def late_job() -> None:
            ran.append(loop.time())
            done.set()

        start = loop.time()
        sched.every("late", 60, late_job, first_in=0.3)
        sched.every("now", 60, now_job)
        sched.start()
        await asyncio.wait_for(done.wait(), 10)
        sched.shutdown()
        return ran[0] - start, ran[1] - start

    first, second = asyncio.run(scenario())
    assert first < 0.3 <= second  # the plain job at once, the other not before its delay


def test_a_job_cancelled_under_way_ends_quietly() -> None:
    """The daemon stopping cancels a blocking call a job still waits on: the job ends, with no
    failure reported and nothing raised into the scheduler (APScheduler logs a traceback)."""
    errors: list[str] = []

    async def waits_on_a_dropped_call() -> None:
        dropped: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        dropped.cancel()  # what BlockingPool.shutdown(cancel_futures=True) does to it
        await dropped

    async def scenario() -> None:
        run = guard("events-prune", waits_on_a_dropped_call, lambda n, e: errors.append(n))
        await run()  # returns instead of raising CancelledError

    asyncio.run(scenario())
    assert errors == []


def test_cancelling_a_guarded_job_itself_still_cancels_it() -> None:
    async def scenario() -> bool:
        started = asyncio.Event()

        async def waits() -> None:
            started.set()
            await asyncio.Event().wait()

        task = asyncio.ensure_future(guard("slow", waits, None)())
        await started.wait()
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            return task.cancelled()
        return False

    assert asyncio.run(scenario())


def test_virtual_time_runs_to_its_end_without_a_loop() -> None:
    """Jobs in virtual time never wait for anything real: no event loop is needed."""
    clock = FakeClock(0.0)
    sched = VirtualScheduler(clock)
    seen: list[float] = []

    async def job() -> None:
        seen.append(clock.time())

    sched.every("tick", 10, job)
    assert run_virtual(sched.run_until(30.0)) == 4
    assert seen == [0.0, 10.0, 20.0, 30.0]


def test_a_coroutine_that_waits_for_something_real_is_refused() -> None:
    finished: list[bool] = []

    async def waits() -> None:
        await asyncio.sleep(0)
        finished.append(True)

    with pytest.raises(RuntimeError, match="needs a loop"):
        run_virtual(waits())
    assert finished == []  # closed where it waited, never resumed
