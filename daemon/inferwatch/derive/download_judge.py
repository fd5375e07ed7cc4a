"""How a download that has ended is judged: complete or not, and what its log says went wrong.

Pure functions over what :mod:`inferwatch.sources.download_probe` read.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from inferwatch.config.downloads import DownloadConfig
from inferwatch.sources.download_probe import DownloadObservation

ERROR_LINE = re.compile(
    r"error|exception|traceback|denied|errno|fatal|failed|killed|no space", re.IGNORECASE
)
ERROR_LINES = 3
MAX_LINE = 240
MAX_TEXT = 600


@dataclass(frozen=True, slots=True)
class Expectation:
    """What a complete download holds, as far as the config and the index file say."""

    bytes: int | None = None
    files: int | None = None
    shards: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Judgement:
    verdict: str  # finished | failed
    reason: str
    error: str = ""
    owner: str = ""


def expectation(cfg: DownloadConfig, index_text: str | None) -> Expectation:
    """``expected_bytes``/``expected_files`` win; else the index's ``metadata.total_size`` and
    its shard files (``weight_map`` values). An unreadable index adds nothing."""
    total: int | None = None
    shards: tuple[str, ...] = ()
    if index_text:
        try:
            doc = json.loads(index_text)
        except ValueError:
            doc = None
        if isinstance(doc, dict):
            meta = doc.get("metadata")
            size = meta.get("total_size") if isinstance(meta, dict) else None
            if isinstance(size, int | float) and not isinstance(size, bool) and size > 0:
                total = int(size)
            weight_map = doc.get("weight_map")
            if isinstance(weight_map, dict):
                shards = tuple(sorted({str(v) for v in weight_map.values()}))
    return Expectation(
        bytes=cfg.expected_bytes if cfg.expected_bytes is not None else total,
        files=cfg.expected_files,
        shards=shards,
    )


def error_lines(log_tail: str | None) -> str:
    """The downloader's last error lines (a traceback's last line is its exception), joined
    with `` | ``; the last line written when none looks like an error."""
    if not log_tail:
        return ""
    lines = [line.strip() for line in log_tail.splitlines() if line.strip()]
    picked = [line for line in lines if ERROR_LINE.search(line)][-ERROR_LINES:] or lines[-1:]
    text = " | ".join(line[:MAX_LINE] for line in picked)
    return text[-MAX_TEXT:]


def judge(obs: DownloadObservation, expect: Expectation) -> Judgement:
    """The verdict on a download whose downloader is gone for good."""
    scan = obs.scan
    error = error_lines(obs.log_tail)
    owners = ", ".join(sorted({p.owner for p in scan.partials}))
    d = obs.downloader
    if not scan.exists:
        return Judgement("failed", "its directory does not exist", error)
    if scan.partials:
        first = scan.partials[0].path
        more = f" and {len(scan.partials) - 1} more" if len(scan.partials) > 1 else ""
        reason = f"partial files left: {first}{more}"
        return Judgement("failed", reason, error, owners)
    if d.exit_status not in (None, 0):
        return Judgement("failed", f"the downloader exited with status {d.exit_status}", error)
    if d.result not in ("", "success"):
        return Judgement("failed", f"the downloader's unit ended with result {d.result}", error)
    if expect.bytes is not None and scan.total_bytes < expect.bytes:
        reason = f"only {scan.total_bytes} of {expect.bytes} bytes"
        return Judgement("failed", reason, error)
    names = {path.rsplit("/", 1)[-1] for path in scan.complete}
    missing = [s for s in expect.shards if s not in names]
    if missing:
        return Judgement("failed", f"{len(missing)} shard files missing ({missing[0]}, …)", error)
    if expect.files is not None and len(scan.complete) < expect.files:
        reason = f"only {len(scan.complete)} of {expect.files} files"
        return Judgement("failed", reason, error)
    return Judgement("finished", f"{scan.total_bytes} bytes in {len(scan.complete)} files")
