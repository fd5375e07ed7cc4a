"""runtime.heap: a started daemon's objects are kept out of the collector's walks."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from inferwatch.runtime import heap


@pytest.fixture(autouse=True)
def unfrozen() -> Iterator[None]:
    yield
    gc.unfreeze()


class Node:
    other: object = None


def _cycle() -> weakref.ref[Node]:
    a, b = Node(), Node()
    a.other, b.other = b, a  # a reference cycle: only the collector frees it
    return weakref.ref(a)


def test_settle_moves_live_objects_out_of_the_walks() -> None:
    kept = [[i] for i in range(1000)]  # container objects the collector would walk
    heap.settle()
    assert gc.get_freeze_count() >= len(kept)


def test_a_settled_cycle_waits_for_resettle() -> None:
    ref = _cycle()
    heap.settle()
    gc.collect()
    assert ref() is not None  # settled: the collector does not walk it
    heap.resettle()
    assert ref() is None  # a reload's collection frees it


def test_hold_keeps_collections_off_until_settle() -> None:
    try:
        heap.hold()
        assert not gc.isenabled()
        kept = [[i] for i in range(1000)]
        heap.settle()
        assert gc.isenabled()
        assert gc.get_freeze_count() >= len(kept)
    finally:
        gc.enable()
