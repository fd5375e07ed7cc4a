"""The kernel side of a replay, imported only when kernel logs are replayed (an engine-log
replay never loads the Xid catalogue, the correlator and the kernel pipeline)."""

from __future__ import annotations

from inferwatch.derive.effects import Effect
from inferwatch.derive.kernel.effects import kernel_input
from inferwatch.derive.kernel.pipeline import KernelPipeline, PipelineSettings
from inferwatch.parsers.kernel import KernelLine
from inferwatch.pipeline.kernel import describe_kernel_metrics
from inferwatch.replay.timeline import TimedRecord
from inferwatch.store.tsdb import SeriesStore


def kernel_pipeline(store: SeriesStore, correlation_window: float | None) -> KernelPipeline:
    """The daemon's kernel pipeline, its series described in ``store``."""
    describe_kernel_metrics(store)
    if correlation_window is None:
        return KernelPipeline()
    return KernelPipeline(PipelineSettings(correlation_window=correlation_window))


def feed(pipeline: KernelPipeline, record: TimedRecord) -> list[Effect]:
    """One kernel record through the pipeline, as the daemon's kernel ingest hands it over."""
    parsed = record.parsed
    assert isinstance(parsed, KernelLine)
    item = kernel_input(
        record.source,
        record.line,
        record.at,
        record.text,
        f"{record.source}:{record.line}",
        facility=parsed.facility,
        level=parsed.level,
    )
    return pipeline.process(item)
