"""Snapshot and restore of the series store together with the source checkpoints and the alerts.

All three are written in one file, atomically (temporary file, fsync, rename, fsync of the
directory), so after kill -9 the restored counters, the positions the sources resume from and
the alert state (an opaque text from the rules engine) always belong together: a record is
neither lost nor counted twice, and an alert is never restored firing over series that do not
yet hold the record that fired it (which resolved it, then fired it again with a new
``startsAt``: a second page). A file that cannot be read is moved aside
and reported; the daemon starts empty rather than not at all. So is one that would unpack to
more than :data:`MAX_SNAPSHOT_BYTES` (a zlib bomb): decompression stops at the cap.

The file is :data:`MAGIC` and one zlib stream: the length of a JSON header (8 bytes, little
endian), the header (series names, labels, kinds and sample counts, the checkpoints, the alert
state), then every series' times and values as little-endian float64 arrays, in the header's
order, byte-shuffled in blocks (:mod:`~inferwatch.store.byteshuffle`; the header's ``block``
says their size). A day of a big host's samples is read back at memory speed, with no text
encoding of the numbers. Files of the first format (:data:`MAGIC_V1`: the arrays base64 in the
JSON) are still read, so an upgrade keeps its history.
"""

from __future__ import annotations

import base64
import json
import os
import sys
import zlib
from array import array
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from inferwatch.event import Kind
from inferwatch.store import byteshuffle
from inferwatch.store.series import Series
from inferwatch.store.sqlite import move_aside
from inferwatch.store.tsdb import SeriesStore

MAGIC = b"IWSNAP2\n"
MAGIC_V1 = b"IWSNAP1\n"
_HEAD = 8  # bytes of the header's length
_LEVEL = 1  # zlib: shuffled arrays pack nearly as small at 1 as at 3 or 6, and faster
MAX_SNAPSHOT_BYTES = 512 << 20
"""The most a snapshot may unpack to; far above any real one (a day of a big host's series)."""
_CHUNK = 1 << 20


@dataclass(slots=True)
class Restored:
    series: int = 0
    checkpoints: dict[str, Any] = field(default_factory=dict)
    written_at: float | None = None
    problem: str | None = None
    alerts: str | None = None  # None: a snapshot from before alerts were kept in it


def _raw(a: array[float]) -> bytes:
    """``a`` as little-endian float64 bytes (a copy)."""
    if sys.byteorder == "little":
        return a.tobytes()
    swapped = array("d", a)
    swapped.byteswap()
    return swapped.tobytes()


def _floats(data: bytes | memoryview) -> array[float]:
    out = array("d")
    out.frombytes(data)
    if sys.byteorder != "little":
        out.byteswap()
    return out


def dump(
    store: SeriesStore, checkpoints: dict[str, Any], now: float, alerts: str | None = None
) -> bytes:
    """Serialise in the event loop thread (consistent state); the caller writes it elsewhere."""
    return encode(capture(store, checkpoints, now, alerts))


def capture(
    store: SeriesStore, checkpoints: dict[str, Any], now: float, alerts: str | None = None
) -> dict[str, Any]:
    """The snapshot as a document of fresh objects, taken in the event loop thread (the store is
    not thread-safe: the arrays are copied here, at memory speed); :func:`encode` (zlib, most of
    the cost) may then run elsewhere. ``alerts``: the alert state taken at the same instant
    (same thread, no await between)."""
    rows = []
    for s in store.all_series():
        ts, vs = s.samples()
        if not ts:
            continue
        rows.append(
            {
                "n": s.name,
                "l": [list(p) for p in s.labels],
                "k": s.kind.value,
                "c": s.carry_forward,
                "s": len(ts),
                "t": _raw(ts),
                "v": _raw(vs),
            }
        )
    doc = {"version": 2, "written_at": now, "series": rows, "checkpoints": checkpoints}
    if alerts is not None:
        doc["alerts"] = alerts
    return doc


def encode(doc: dict[str, Any]) -> bytes:
    """A document of :func:`capture` as the file's bytes."""
    arrays = [part for row in doc["series"] for part in (row["t"], row["v"])]
    header = {
        **doc,
        "series": [{k: v for k, v in row.items() if k not in ("t", "v")} for row in doc["series"]],
    }
    header["block"] = byteshuffle.BLOCK
    text = json.dumps(header, separators=(",", ":")).encode()
    packer = zlib.compressobj(_LEVEL)
    out = [MAGIC, packer.compress(len(text).to_bytes(_HEAD, "little")), packer.compress(text)]
    out.extend(packer.compress(block) for block in byteshuffle.shuffled(arrays))
    out.append(packer.flush())
    return b"".join(out)


def encode_and_write(path: Path, doc: dict[str, Any]) -> None:
    write_atomic(path, encode(doc))


def write_atomic(path: Path, payload: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        try:
            os.fchmod(fd, 0o600)
            view = memoryview(payload)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            os.fsync(fd)
        finally:
            os.close(fd)
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)  # a half-written file must not keep a full disk full
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def restore(path: Path, store: SeriesStore, now: float) -> Restored:
    """Load ``path`` into an empty ``store``; a missing file is a fresh start, not a problem."""
    result = Restored()
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return result
    try:
        if raw.startswith(MAGIC):
            doc, series = _decode(inflate(raw[len(MAGIC) :], MAX_SNAPSHOT_BYTES))
        elif raw.startswith(MAGIC_V1):
            doc, series = _decode_v1(inflate(raw[len(MAGIC_V1) :], MAX_SNAPSHOT_BYTES))
        else:
            raise ValueError("not an inferwatch snapshot")
        checkpoints = dict(doc.get("checkpoints") or {})
        alerts = doc.get("alerts")
        if alerts is not None and not isinstance(alerts, str):
            raise ValueError("snapshot alerts: not a text")
    except (ValueError, KeyError, TypeError, zlib.error) as exc:
        moved = move_aside(path, str(exc))
        result.problem = f"snapshot {path} unreadable ({exc}); moved to {moved}"
        return result
    for s in series:
        store.restore_series(s)
    store.trim(now)  # per-metric retention: ask for long ranges (rules) before restoring
    store.bridge(now)  # the downtime reads as "no change", not as counters born now
    result.series = len(series)
    result.checkpoints = checkpoints
    result.alerts = alerts
    result.written_at = float(doc.get("written_at") or 0.0)
    return result


def inflate(data: bytes, limit: int) -> bytes:
    """zlib-decompress ``data``, at most ``limit`` bytes of output (a ValueError beyond it),
    never holding more than that in memory."""
    inflater = zlib.decompressobj()
    parts: list[bytes] = []
    size = 0
    pending = data
    while True:
        part = inflater.decompress(pending, min(_CHUNK, limit - size + 1))
        size += len(part)
        if size > limit:
            raise ValueError(f"snapshot unpacks to more than {limit} bytes; refused")
        parts.append(part)
        pending = inflater.unconsumed_tail
        if not pending and not part:
            break
        if inflater.eof:
            break
    if not inflater.eof:
        raise ValueError("snapshot is truncated (incomplete zlib stream)")
    return b"".join(parts)


def _decode(data: bytes) -> tuple[dict[str, Any], list[Series]]:
    """The header and the series of an unpacked file of the current format."""
    size = int.from_bytes(data[:_HEAD], "little")
    if len(data) < _HEAD or _HEAD + size > len(data):
        raise ValueError("snapshot header is truncated")
    doc = json.loads(data[_HEAD : _HEAD + size])
    version = doc.get("version") if isinstance(doc, dict) else None
    if version != 2:
        raise ValueError(f"unknown snapshot version {version!r}")
    counts = [row["s"] for row in doc["series"]]
    if not all(isinstance(n, int) and n >= 0 for n in counts):
        raise ValueError("snapshot series: a sample count is not a count")
    packed = memoryview(data)[_HEAD + size :]
    if len(packed) != 16 * sum(counts):
        raise ValueError(f"snapshot arrays: {len(packed)} bytes, {16 * sum(counts)} expected")
    block = doc.get("block")
    if not isinstance(block, int):
        raise ValueError("snapshot header: no block size")
    arrays = memoryview(byteshuffle.unshuffled(packed, block))
    series, at = [], 0
    for row, n in zip(doc["series"], counts, strict=True):
        ts, vs = _floats(arrays[at : at + 8 * n]), _floats(arrays[at + 8 * n : at + 16 * n])
        at += 16 * n
        series.append(_series(row, ts, vs))
    return doc, series


def _decode_v1(data: bytes) -> tuple[dict[str, Any], list[Series]]:
    """The first format: one JSON document, each series' arrays base64 in it."""
    doc = json.loads(data)
    version = doc.get("version") if isinstance(doc, dict) else None
    if version != 1:
        raise ValueError(f"unknown snapshot version {version!r}")
    series = [
        _series(row, _floats(base64.b64decode(row["t"])), _floats(base64.b64decode(row["v"])))
        for row in doc["series"]
    ]
    return doc, series


def _series(row: dict[str, Any], ts: array[float], vs: array[float]) -> Series:
    if len(ts) != len(vs):
        raise ValueError(f"series {row['n']} has {len(ts)} times but {len(vs)} values")
    labels = tuple((str(k), str(v)) for k, v in row["l"])
    return Series(str(row["n"]), labels, Kind(row["k"]), bool(row["c"]), ts, vs)
