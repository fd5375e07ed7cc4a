"""Judging an ended download: partial files, exit status, size and shards; the log's errors."""

from __future__ import annotations

import json

from inferwatch.config.downloads import DownloadConfig
from inferwatch.derive.download_judge import error_lines, expectation, judge
from inferwatch.sources.download_probe import (
    DirectoryScan,
    DownloaderState,
    DownloadObservation,
    PartialFile,
)

INDEX = json.dumps(
    {
        "metadata": {"total_size": 3000},
        "weight_map": {"a": "model-00001.safetensors", "b": "model-00002.safetensors"},
    }
)


def obs(*complete: str, size: int = 5000, partial: bool = False, status: int | None = None,
        result: str = "", log: str | None = None) -> DownloadObservation:  # fmt: skip
    parts = (PartialFile("x.incomplete", 5, "root"),) if partial else ()
    scan = DirectoryScan(True, size, complete, parts)
    return DownloadObservation(1.0, scan, DownloaderState(False, "", status, result), log_tail=log)


def cfg(**kw: object) -> DownloadConfig:
    return DownloadConfig.model_validate({"name": "m", "directory": "/d", "pid": 1, **kw})


def test_the_index_gives_size_and_shards() -> None:
    expect = expectation(cfg(index_file="i.json"), INDEX)
    assert expect.bytes == 3000 and len(expect.shards) == 2
    assert expectation(cfg(expected_bytes=9), INDEX).bytes == 9
    assert expectation(cfg(), "{not json").bytes is None
    shards = ("model-00001.safetensors", "sub/model-00002.safetensors")
    assert judge(obs(*shards), expect).verdict == "finished"
    missing = judge(obs("model-00001.safetensors"), expect)
    assert missing.verdict == "failed" and "1 shard files missing" in missing.reason
    assert judge(obs(*shards, size=2999), expect).reason == "only 2999 of 3000 bytes"


def test_failures() -> None:
    none = expectation(cfg(), None)
    failed = judge(obs("a", partial=True), none)
    assert (failed.verdict, failed.owner) == ("failed", "root")
    assert judge(obs("a", status=1), none).reason == "the downloader exited with status 1"
    assert "result timeout" in judge(obs("a", result="timeout"), none).reason
    assert judge(obs("a", status=0, result="success"), none).verdict == "finished"
    assert judge(obs("a"), expectation(cfg(expected_files=2), None)).reason == "only 1 of 2 files"


def test_error_lines_keep_the_last_errors() -> None:
    log = (
        "Downloading shard 1\nTraceback (most recent call last):\n  File x\n"
        "PermissionError: [Errno 13] Permission denied: '/m/a.incomplete'\nbye\n"
    )
    assert error_lines(log) == (
        "Traceback (most recent call last): | "
        "PermissionError: [Errno 13] Permission denied: '/m/a.incomplete'"
    )
    assert error_lines("just\nthe end\n") == "the end"
    assert error_lines(None) == ""
