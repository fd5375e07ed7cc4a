"""inferwatch's own metrics, by contract (DESIGN.md §4): one helper per thing that can happen.

Components call these helpers; nobody writes a self-metric by hand, so names and label
vocabularies stay fixed.
"""

from __future__ import annotations

import platform

from inferwatch import __version__
from inferwatch.event import Kind
from inferwatch.labels import Labels, make_labels
from inferwatch.store.tsdb import SeriesStore

BUILD_INFO = "inferwatch_build_info"
SOURCE_UP = "inferwatch_source_up"
SOURCE_NO_DATA = "inferwatch_source_no_data"
SOURCE_ERRORS = "inferwatch_source_errors_total"
RECORDS_DROPPED = "inferwatch_records_dropped_total"
RECORDS_READ = "inferwatch_records_total"
SCRAPE_DURATION = "inferwatch_scrape_duration_seconds"
STORE_SERIES = "inferwatch_store_series"
SNAPSHOT_SECONDS = "inferwatch_snapshot_last_success_timestamp_seconds"
CONFIG_RELOAD_OK = "inferwatch_config_last_reload_successful"
CONFIG_RELOAD_AT = "inferwatch_config_last_reload_success_timestamp_seconds"

_HELP: dict[str, tuple[Kind, str]] = {
    BUILD_INFO: (Kind.GAUGE, "Build information of the running inferwatch; always 1."),
    SOURCE_UP: (Kind.GAUGE, "1 when a source is reading its input, 0 when it cannot."),
    SOURCE_NO_DATA: (
        Kind.GAUGE,
        "1 when a source is idle because its input does not exist here (no GPU, no engine).",
    ),
    SOURCE_ERRORS: (Kind.COUNTER, "Errors met by a source, by stage and error type."),
    RECORDS_DROPPED: (Kind.COUNTER, "Records dropped because a queue stayed full."),
    RECORDS_READ: (Kind.COUNTER, "Records handed on by a source."),
    SCRAPE_DURATION: (Kind.GAUGE, "Seconds the last periodic collection of a source took."),
    STORE_SERIES: (Kind.GAUGE, "Series held in the in-memory store."),
    SNAPSHOT_SECONDS: (Kind.GAUGE, "Unix time of the last successful state snapshot."),
    CONFIG_RELOAD_OK: (
        Kind.GAUGE,
        "1 when the last config load (start, SIGHUP or /-/reload) worked, 0 when it failed.",
    ),
    CONFIG_RELOAD_AT: (Kind.GAUGE, "Unix time of the last successful config load."),
}


#: How often the per-record count reaches the store (a busy log hands on 1,000s a second).
RECORDS_FLUSH_S = 0.25


class Telemetry:
    def __init__(self, store: SeriesStore) -> None:
        self.store = store
        self._records: dict[str, int] = {}
        self._records_labels: dict[str, Labels] = {}
        self._records_flushed = float("-inf")
        for name, (kind, text) in _HELP.items():
            store.describe(name, kind, text)

    def build_info(self) -> None:
        labels = make_labels({"version": __version__, "python_version": platform.python_version()})
        self.store.set(BUILD_INFO, labels, 1.0)

    def source_up(self, source: str, up: bool, no_data: bool = False) -> None:
        labels = make_labels({"source": source})
        self.store.set(SOURCE_UP, labels, 1.0 if up else 0.0)
        self.store.set(SOURCE_NO_DATA, labels, 1.0 if no_data else 0.0)

    def source_error(self, source: str, stage: str, error_type: str) -> None:
        labels = make_labels({"source": source, "stage": stage, "error_type": error_type})
        self.store.inc(SOURCE_ERRORS, labels)

    def dropped(self, queue: str, count: int = 1) -> None:
        self.store.inc(RECORDS_DROPPED, make_labels({"queue": queue}), float(count))

    def records(self, source: str, count: int = 1) -> None:
        """Count records handed on; the store sees the sum at most every ``RECORDS_FLUSH_S``
        (and at each :meth:`flush`), not one sample per record."""
        self._records[source] = self._records.get(source, 0) + count
        if self.store.clock.monotonic() - self._records_flushed >= RECORDS_FLUSH_S:
            self.flush()

    def flush(self) -> None:
        self._records_flushed = self.store.clock.monotonic()
        for source, count in self._records.items():
            labels = self._records_labels.get(source)
            if labels is None:
                labels = self._records_labels[source] = make_labels({"source": source})
            self.store.inc(RECORDS_READ, labels, float(count), wake=False)
        self._records.clear()

    def scrape_duration(self, source: str, seconds: float) -> None:
        self.store.set(SCRAPE_DURATION, make_labels({"source": source}), seconds)

    def snapshot_ok(self, at: float) -> None:
        self.store.set(SNAPSHOT_SECONDS, (), at)

    def config_reload(self, ok: bool, at: float) -> None:
        """As Prometheus's ``prometheus_config_last_reload_*``: the start counts as a load."""
        self.store.set(CONFIG_RELOAD_OK, (), 1.0 if ok else 0.0)
        if ok:
            self.store.set(CONFIG_RELOAD_AT, (), at)

    def store_size(self) -> None:
        self.store.set(STORE_SERIES, (), float(self.store.series_count()))
