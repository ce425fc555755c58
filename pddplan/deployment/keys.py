"""Memo keys whose hash is computed once (:class:`HashedKey`): an instance's physics key
(:attr:`pddplan.deployment.Instance.physics_key`) and a problem's (the search's memo,
:mod:`pddplan.solver.cache`) are large tuples of model and layout numbers, and a tuple's hash
walks every element, and a frozen dataclass's every field, at every lookup."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any, TypeVar

_T = TypeVar("_T", bound=type)


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


def hash_once(cls: _T) -> _T:
    """A frozen dataclass whose hash is computed once per object (its generated hash walks
    every field, at every lookup of every memo key that holds it: a model's numbers are some
    thirty fields, hashed about a microsecond each time).

    The hash is the dataclass's own, kept in the object's ``__dict__`` on first use; a copy or
    a pickle leaves it behind (a string's hash differs from one process to the next), so the
    object is rehashed where it arrives. Only for frozen dataclasses: their fields never
    change, so neither does their hash."""
    params = getattr(cls, "__dataclass_params__", None)
    field_hash: Callable[[Any], int] | None = cls.__dict__.get("__hash__")
    if params is None or not params.frozen or field_hash is None:
        raise TypeError(f"hash_once takes a frozen dataclass with a hash, not {cls.__name__}")

    def __hash__(self: Any) -> int:
        h = self.__dict__.get(_HASH_SLOT)
        if h is None:
            h = self.__dict__[_HASH_SLOT] = field_hash(self)
        return h

    def __getstate__(self: Any) -> dict[str, Any]:
        state = dict(self.__dict__)
        state.pop(_HASH_SLOT, None)
        return state

    cls.__hash__ = __hash__  # type: ignore[assignment, method-assign]
    cls.__getstate__ = __getstate__  # type: ignore[assignment, method-assign]
    return cls


#: Where :func:`hash_once` keeps an object's hash (not a field: never compared or shown).
_HASH_SLOT = "_hash_once"
