"""store.byteshuffle: float64 arrays as byte planes, block by block, and back."""

from __future__ import annotations

import random
import struct

import pytest

from inferwatch.store.byteshuffle import BLOCK, ITEM, shuffled, unshuffled


def test_a_block_is_laid_out_as_byte_planes() -> None:
    data = struct.pack("<2d", 1.0, -2.0)  # 00..f0 3f and 00..00 c0
    (block,) = shuffled([data], 16)
    assert block == bytes(b for i in range(ITEM) for b in data[i::ITEM])
    assert block[-2:] == b"\x3f\xc0"  # the two numbers' top bytes: the last plane


@pytest.mark.parametrize("seed", range(6))
def test_shuffling_in_blocks_round_trips_parts_of_any_length(seed: int) -> None:
    rng = random.Random(seed)
    parts = [rng.randbytes(ITEM * rng.randrange(0, 40)) for _ in range(rng.randrange(1, 12))]
    block = ITEM * rng.choice((1, 2, 3, 7, 16, 1000))
    packed = b"".join(shuffled(parts, block))
    assert len(packed) == sum(map(len, parts))
    assert unshuffled(packed, block) == b"".join(parts)
    if len(packed) > block:  # more than one block: each is shuffled on its own
        assert packed[:block] == next(shuffled(parts, block))


def test_the_default_block_holds_whole_numbers() -> None:
    assert BLOCK % ITEM == 0


@pytest.mark.parametrize("block", [0, -8, 12])
def test_a_block_size_that_is_no_multiple_of_eight_is_refused(block: int) -> None:
    with pytest.raises(ValueError, match="in blocks of"):
        unshuffled(bytes(16), block)


def test_bytes_that_are_no_whole_numbers_are_refused() -> None:
    with pytest.raises(ValueError, match="12 bytes"):
        unshuffled(bytes(12), 8)
