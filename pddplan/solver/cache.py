"""One explicit memo for the search's price-independent pieces.

What-if sweeps that change prices, inventory or the rate reuse prefill and decode sizings whose
physics did not change. Every entry is keyed on the typed inputs its value depends on: the
problem's physics key (:meth:`Problem.physics_key`: request classes, links without their prices,
SLA, serving knobs, model), the instance's physics key and the route (rate or line load and
routing). Prices and inventory are never part of a key, so they can never be served stale.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

from pddplan.deployment.keys import HashedKey as HashedKey  # re-exported: the key parts

T = TypeVar("T")

_MISSING = object()  # no value kept (a kept value may be None)


class SearchCache:
    """A bounded least-recently-used memo.

    Parameters
    ----------
    max_entries : how many values to keep; the least recently used go first.
    """

    def __init__(self, max_entries: int = 20_000) -> None:
        self.max_entries = max_entries
        self._data: OrderedDict[Hashable, Any] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def get(self, key: Hashable, compute: Callable[[], T]) -> T:
        """The value for ``key``, computed (and kept) on a miss."""
        data = self._data
        value = data.get(key, _MISSING)  # one lookup, not two: a key's tuple hash is recomputed
        if value is not _MISSING:
            data.move_to_end(key)
            self.hits += 1
            return value  # type: ignore[no-any-return]
        self.misses += 1
        value = compute()
        # :meth:`put`, with the key's move to the end only where it is there already (kept
        # while the value was computed): a new key goes in last
        size = len(data)
        data[key] = value
        if len(data) == size:
            data.move_to_end(key)
        elif len(data) > self.max_entries:
            data.popitem(last=False)
        return value

    def put(self, key: Hashable, value: Any) -> None:
        """Keep ``value`` for ``key`` (replacing what was kept)."""
        data = self._data
        data[key] = value
        data.move_to_end(key)
        if len(data) > self.max_entries:
            data.popitem(last=False)

    def __contains__(self, key: Hashable) -> bool:
        """Whether ``key`` has a value kept (its use is not recorded)."""
        return key in self._data

    def clear(self) -> None:
        self._data.clear()
        self.hits = self.misses = 0

    def __len__(self) -> int:
        return len(self._data)


#: The cache solvers share unless given their own (a sweep's points reuse each other's work).
DEFAULT_CACHE = SearchCache()
