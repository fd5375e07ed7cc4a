"""The selection cache (promql.index) against selecting afresh, while the store grows."""

from __future__ import annotations

import random

import pytest

from inferwatch.clock import FakeClock
from inferwatch.promql.ast import VectorSelector
from inferwatch.promql.index import PLAIN_SELECTION, SelectionCache
from inferwatch.promql.load import parse
from inferwatch.store.series import Series
from inferwatch.store.tsdb import SeriesStore

SELECTORS = (
    'xid_total{xid="79"}',
    'xid_total{xid!="79", bus=~"0000:.*"}',
    "xid_total",
    'xid_total{bus="0000:01:00.0"}',
    'gpu_up{gpu=~"[0-3]"}',
    "gpu_up",
    '{__name__=~"xid_total|gpu_up", gpu!="2"}',
    'missing{a="b"}',
)


def _selector(text: str) -> VectorSelector:
    node = parse(text)
    assert isinstance(node, VectorSelector)
    return node


@pytest.mark.parametrize("seed", range(8))
def test_selections_follow_a_growing_store_as_if_selected_afresh(seed: int) -> None:
    """Series join families in random order, some while a selection is cached and some many
    at once; every selection, whether grown from its cached one or made anew, holds the same
    series in the same order as a fresh selection."""
    rng = random.Random(seed)
    store = SeriesStore(FakeClock(0.0))
    cache = SelectionCache()
    selectors = [_selector(text) for text in SELECTORS]
    for step in range(60):
        for _ in range(rng.choice((0, 1, 1, 2, 7))):
            if rng.random() < 0.6:
                bus = f"{rng.choice(('0000', '0001'))}:{rng.randrange(64):02x}:00.0"
                labels = (("bus", bus), ("xid", rng.choice(("79", "31", "13"))))
                store.inc("xid_total", labels, 1.0, float(step))
            else:
                store.set("gpu_up", (("gpu", str(rng.randrange(8))),), 1.0, float(step))
        for sel in rng.sample(selectors, rng.randrange(1, len(selectors) + 1)):
            got = cache.series(store, sel)
            assert got == PLAIN_SELECTION.series(store, sel), (seed, step, sel)


def test_a_grown_selection_is_a_new_list() -> None:
    """A selection handed out earlier is never changed in place when the family grows."""
    store = SeriesStore(FakeClock(0.0))
    cache = SelectionCache()
    sel = _selector('xid_total{xid="79"}')
    store.inc("xid_total", (("bus", "b"), ("xid", "79")), 1.0, 0.0)
    first = cache.series(store, sel)
    held = list(first)
    store.inc("xid_total", (("bus", "a"), ("xid", "79")), 1.0, 1.0)
    grown = cache.series(store, sel)
    assert first == held
    assert [s.labels[0][1] for s in grown] == ["a", "b"]


def test_a_series_restored_in_place_of_a_held_one_is_selected() -> None:
    """A snapshot's series that takes the place of one the store held (same name and labels)
    is what later selections hold, not the object it replaced."""
    store = SeriesStore(FakeClock(0.0))
    cache = SelectionCache()
    sel = _selector('xid_total{xid="79"}')
    store.inc("xid_total", (("bus", "b"), ("xid", "79")), 1.0, 0.0)
    (old,) = cache.series(store, sel)
    store.restore_series(Series(old.name, old.labels, old.kind, carry_forward=True))
    store.inc("xid_total", (("bus", "a"), ("xid", "79")), 1.0, 1.0)
    (_, restored) = cache.series(store, sel)
    assert restored is store.get("xid_total", old.labels)
    assert restored is not old
