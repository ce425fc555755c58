"""Memo keys whose hash is computed once (:class:`HashedKey`): an instance's physics key
(:attr:`pddplan.deployment.Instance.physics_key`) and a problem's (the search's memo,
:mod:`pddplan.solver.cache`) are large tuples of model and layout numbers, and a tuple's hash
walks every element, and a frozen dataclass's every field, at every lookup."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any


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

    def __reduce__(self) -> tuple[Any, ...]:
        # a string's hash differs from one process to the next: another process rehashes
        return (HashedKey, (self.value,))

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if not isinstance(other, HashedKey):
            return NotImplemented
        return self._hash == other._hash and self.value == other.value


#: Interned keys of :meth:`HashedKey.of` (a sweep's points share their problem's physics).
_INTERNED: dict[HashedKey, HashedKey] = {}
_INTERNED_MAX = 4096
