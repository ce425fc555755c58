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

T = TypeVar("T")


class HashedKey:
    """A key part whose hash is computed once: a problem's physics key is a large tuple, and a
    tuple's hash walks every element at every lookup. Equal to another ``HashedKey`` of an
    equal value, never to the bare value."""

    __slots__ = ("_hash", "value")

    def __init__(self, value: Hashable) -> None:
        self.value = value
        self._hash = hash(value)

    @classmethod
    def of(cls, value: Hashable) -> HashedKey:
        """The one ``HashedKey`` of ``value`` (interned, so that keys built from equal values
        are the same object and compare by identity; at most :data:`_INTERNED_MAX` kept)."""
        key = cls(value)
        known = _INTERNED.get(key)
        if known is not None:
            return known
        if len(_INTERNED) >= _INTERNED_MAX:
            _INTERNED.clear()
        _INTERNED[key] = key
        return key

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if not isinstance(other, HashedKey):
            return NotImplemented
        return self._hash == other._hash and self.value == other.value


#: Interned keys of :meth:`HashedKey.of` (a sweep's points share their problem's physics).
_INTERNED: dict[HashedKey, HashedKey] = {}
_INTERNED_MAX = 4096


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
        if key in data:
            data.move_to_end(key)
            self.hits += 1
            return data[key]  # type: ignore[no-any-return]
        self.misses += 1
        value = compute()
        data[key] = value
        if len(data) > self.max_entries:
            data.popitem(last=False)
        return value

    def clear(self) -> None:
        self._data.clear()
        self.hits = self.misses = 0

    def __len__(self) -> int:
        return len(self._data)


#: The cache solvers share unless given their own (a sweep's points reuse each other's work).
DEFAULT_CACHE = SearchCache()
