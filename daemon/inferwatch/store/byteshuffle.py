"""Byte shuffling of float64 arrays before compression (the filter HDF5 and Blosc apply).

Successive samples of a series differ mostly in their low bytes: the sign, exponent and high
mantissa bytes of a temperature, a clock, a counter or a timestamp repeat from one sample to the
next. Laid out as planes (the first byte of every number, then the second, ...), the repeating
bytes form long runs, which zlib packs smaller and faster than the numbers side by side. The
planes are made per block of :data:`BLOCK` bytes, so memory stays bounded by a block.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

ITEM = 8  # bytes per number (float64)
BLOCK = 1 << 20
"""Bytes per shuffled block (a multiple of :data:`ITEM`); a file records the block it used."""


def shuffled(parts: Iterable[bytes], block: int = BLOCK) -> Iterator[bytes]:
    """The concatenation of ``parts`` (each a whole number of items), block by block, each
    block as its byte planes."""
    pending = bytearray()
    for part in parts:
        pending += part
        while len(pending) >= block:
            yield _planes(pending[:block])
            del pending[:block]
    if pending:
        yield _planes(pending)


def unshuffled(data: bytes | memoryview, block: int = BLOCK) -> bytearray:
    """The numbers' bytes back in order, from what :func:`shuffled` made with ``block``."""
    if block <= 0 or block % ITEM or len(data) % ITEM:
        raise ValueError(f"shuffled arrays: {len(data)} bytes in blocks of {block}")
    out = bytearray(len(data))
    view = memoryview(data)
    for start in range(0, len(data), block):
        chunk = view[start : start + block]
        n = len(chunk) // ITEM
        for i in range(ITEM):
            out[start + i : start + len(chunk) : ITEM] = chunk[i * n : (i + 1) * n]
    return out


def _planes(data: bytearray) -> bytes:
    return b"".join(data[i::ITEM] for i in range(ITEM))
