"""The daemon's scheduler: APScheduler's ``AsyncIOScheduler`` behind the :class:`Scheduler`
interface of :mod:`inferwatch.runtime.scheduler` (kept apart so that replay, which runs the same
jobs in virtual time, never imports APScheduler's scheduler machinery)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, tzinfo

from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.triggers.interval import IntervalTrigger

from inferwatch.runtime.crontab import crontab_trigger
from inferwatch.runtime.scheduler import ErrorHook, Job, guard


class LiveScheduler:
    def __init__(self, on_error: ErrorHook | None = None) -> None:
        self._aps = AsyncIOScheduler(timezone=UTC)
        self._on_error = on_error

    def every(self, name: str, seconds: float, job: Job, first_in: float = 0.0) -> None:
        self._aps.add_job(
            guard(name, job, self._on_error),
            IntervalTrigger(seconds=seconds, timezone=UTC),
            id=name,
            name=name,
            replace_existing=True,
            max_instances=1,
            coalesce=True,
            misfire_grace_time=max(1, int(seconds)),
            next_run_time=datetime.now(UTC) + timedelta(seconds=first_in),
        )

    def cron(self, name: str, expression: str, job: Job, tz: tzinfo | None = None) -> None:
        self._aps.add_job(
            guard(name, job, self._on_error),
            crontab_trigger(expression, tz or UTC),
            id=name,
            name=name,
            replace_existing=True,
            max_instances=1,
            coalesce=True,
            misfire_grace_time=300,
        )

    def remove(self, name: str) -> None:
        if self._aps.get_job(name) is not None:
            self._aps.remove_job(name)

    def start(self) -> None:
        self._aps.start()

    def shutdown(self) -> None:
        if self._aps.running:
            self._aps.shutdown(wait=False)
