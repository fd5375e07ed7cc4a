"""Which series a selector matches: cached selections over a per-family label index.

Testing every series of a family against the matchers would cost far more than the arithmetic
(100 rules over thousands of series). A selector's matches change only when a series joins its
family (the store never removes one and adds each at its family's end), so each selection is
cached while the family's size is unchanged, and when the family grows only its newest series
are tested and put in their places; a selector without a metric name is selected again when the
store's total series count changes. Selecting goes through an index of the family by label
pair, grown with the family, so even a cold tick costs one dictionary lookup per equality
matcher.

Selections are sorted by name and labels: Prometheus's order is its storage order, promtool's is
random (promql.md §10 #2); sorted order is what makes our results reproducible. Regexes are ours
(RE2's meaning, promql_ast.compile_regex), not the store's.
"""

from __future__ import annotations

from bisect import insort
from collections.abc import Iterable, Sized
from itertools import islice
from weakref import WeakKeyDictionary

from inferwatch.labels import NAME_LABEL, Labels, MatchOp
from inferwatch.promql.ast import LabelMatcher, VectorSelector
from inferwatch.promql.context import Selection
from inferwatch.promql.types import DEFAULT_OPTIONS, EvalOptions
from inferwatch.store.series import Series
from inferwatch.store.tsdb import SeriesStore

_MAX_ENTRIES = 4096


def family_name(sel: VectorSelector) -> str | None:
    """The one metric name a selector can match, if it names one."""
    if sel.name is not None:
        return sel.name
    for m in sel.matchers:
        if m.name == NAME_LABEL and m.op is MatchOp.EQ:
            return m.value
    return None


def _value(s: Series, label: str) -> str:
    if label == NAME_LABEL:
        return s.name
    for k, v in s.labels:
        if k == label:
            return v
    return ""


def _matches(s: Series, matchers: tuple[LabelMatcher, ...]) -> bool:
    return all(m.matches(_value(s, m.name)) for m in matchers)


def _order(s: Series) -> tuple[str, Labels]:
    return s.name, s.labels


def _sorted(found: Iterable[Series]) -> list[Series]:
    return sorted(found, key=_order)


class _FamilyIndex:
    """The series of one family by (label, value); grown as the family grows."""

    def __init__(self, members: Iterable[Series]) -> None:
        self.members: list[Series] = []
        self.by_pair: dict[tuple[str, str], list[Series]] = {}
        self.extend(members)

    @property
    def size(self) -> int:
        return len(self.members)

    def extend(self, members: Iterable[Series]) -> None:
        for s in members:
            self.members.append(s)
            for pair in s.labels:
                self.by_pair.setdefault(pair, []).append(s)

    def candidates(self, matchers: tuple[LabelMatcher, ...]) -> list[Series]:
        """The smallest member list that every match must be in."""
        best = self.members
        for m in matchers:
            if m.op is MatchOp.EQ and m.value and m.name != NAME_LABEL:
                listed = self.by_pair.get((m.name, m.value), [])
                if len(listed) < len(best):
                    best = listed
        return best


class SelectionCache:
    """Selections and family indexes of one store."""

    def __init__(self) -> None:
        self._entries: dict[str, tuple[int, tuple[str, int], list[Series]]] = {}
        self._families: dict[str, _FamilyIndex] = {}
        self._replaced = 0

    def series(self, store: SeriesStore, sel: VectorSelector) -> list[Series]:
        if store.replaced != self._replaced:
            self._follow(store)
        hit = self._entries.get(sel.key)
        generation = store.generation
        if hit is not None and hit[0] == generation:
            return hit[2]  # no series joined the store since: the selection stands
        name = family_name(sel)
        if name is None:
            token = ("", store.series_count())
        else:
            family = store.family(name)
            token = (name, len(family) if isinstance(family, Sized) else -1)
        if hit is not None and hit[1] == token and token[1] >= 0:
            self._entries[sel.key] = (generation, token, hit[2])
            return hit[2]
        if hit is not None and name is not None and hit[1][0] == name and 0 <= hit[1][1] < token[1]:
            found = self._grown(store, sel, name, (hit[1][1], token[1]), hit[2])
        else:
            found = self._select(store, sel, name, token[1])
        if len(self._entries) >= _MAX_ENTRIES:
            self._entries.clear()
        self._entries[sel.key] = (generation if token[1] >= 0 else -1, token, found)
        return found

    def _grown(
        self,
        store: SeriesStore,
        sel: VectorSelector,
        name: str,
        sizes: tuple[int, int],
        held: list[Series],
    ) -> list[Series]:
        """The selection of a family grown from ``sizes[0]`` to ``sizes[1]`` series: only the
        newest can join, each put in its sorted place. A new list: ``held`` may still be read."""
        before, size = sizes
        newest = self._index(store, name, size).members[before:]
        joined = [s for s in newest if _matches(s, sel.matchers)]
        if not joined:
            return held
        found = list(held)
        for s in joined:
            insort(found, s, key=_order)
        return found

    def _select(
        self, store: SeriesStore, sel: VectorSelector, name: str | None, size: int
    ) -> list[Series]:
        matchers = sel.matchers
        if name is None:
            return _sorted(s for s in store.all_series() if _matches(s, matchers))
        index = self._index(store, name, size)
        return _sorted(s for s in index.candidates(matchers) if _matches(s, matchers))

    def family_index(self, store: SeriesStore, name: str, size: int) -> _FamilyIndex:
        """The family's index, grown (or built) to its ``size`` members, in the family's order."""
        self._follow(store)
        return self._index(store, name, size)

    def _follow(self, store: SeriesStore) -> None:
        if store.replaced != self._replaced:  # a held series object was swapped: start afresh
            self._entries.clear()
            self._families.clear()
            self._replaced = store.replaced

    def _index(self, store: SeriesStore, name: str, size: int) -> _FamilyIndex:
        index = self._families.get(name)
        if index is None or size < 0 or index.size > size:
            index = self._families[name] = _FamilyIndex(store.family(name))
        elif index.size < size:
            index.extend(islice(store.family(name), index.size, None))
        return index


class PlainSelection:
    """Selections computed afresh every time: each series of the family (or of the store, for
    a selector without a metric name) tested against every matcher."""

    def series(self, store: SeriesStore, sel: VectorSelector) -> list[Series]:
        name = family_name(sel)
        found = store.all_series() if name is None else store.family(name)
        return _sorted(s for s in found if _matches(s, sel.matchers))


PLAIN_SELECTION = PlainSelection()
_CACHES: WeakKeyDictionary[SeriesStore, SelectionCache] = WeakKeyDictionary()


def cache_for(store: SeriesStore, options: EvalOptions = DEFAULT_OPTIONS) -> Selection:
    """The store's selection cache, or with the speed machinery off, no cache."""
    if not options.plan:
        return PLAIN_SELECTION
    cache = _CACHES.get(store)
    if cache is None:
        cache = _CACHES[store] = SelectionCache()
    return cache


class Within:
    """A cache's selections cut to one partition (``promql.partition``): the series whose
    labels hold each of ``pairs`` (a missing label counts as ``""``). Found through the family
    index by the rarest pair, so a partition of a big family costs what the partition holds."""

    def __init__(self, cache: SelectionCache, pairs: tuple[tuple[str, str], ...]) -> None:
        self.cache = cache
        self.pairs = pairs
        self.read = 0  # series looked at, for tests and measurements

    def series(self, store: SeriesStore, sel: VectorSelector) -> list[Series]:
        name = family_name(sel)
        listed = None
        if name is not None:
            family = store.family(name)
            size = len(family) if isinstance(family, Sized) else -1
            index = self.cache.family_index(store, name, size)
            for pair in self.pairs:
                if pair[1]:
                    found = index.by_pair.get(pair, [])
                    if listed is None or len(found) < len(listed):
                        listed = found
        if listed is None:
            listed = self.cache.series(store, sel)
        self.read += len(listed)
        pairs = self.pairs
        return _sorted(
            s
            for s in listed
            if all(_value(s, k) == v for k, v in pairs) and _matches(s, sel.matchers)
        )
