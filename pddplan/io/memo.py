"""A memo keyed on an object's identity: the bindings a problem build repeats, and what the
loader learns of a parsed document it merges into again and again (:mod:`pddplan.io.loader`).

A robust study, a verdict check and a what-if sweep build a problem per sample, end or point,
and most of the spec objects in it (the model, the workload, the links) are the very objects of
the last build: the loader keeps a validated profile while its content is unchanged. Their
numbers are then looked up by identity instead of being derived again, or keyed on the object's
serialized content. Spec objects are frozen pydantic models (:class:`pddplan.spec.Strict`),
so an object's numbers never change while it lives; the memo holds each object it keys on, so
its ``id`` cannot be reused by another object while the entry is kept.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

T = TypeVar("T")


class IdentityMemo:
    """``compute()`` remembered per (object, args) for the last ``size`` pairs used."""

    def __init__(self, size: int = 64) -> None:
        self.size = size
        self._data: OrderedDict[tuple[int, Hashable], tuple[Any, Any]] = OrderedDict()

    def get(self, obj: object, args: Hashable, compute: Callable[[], T]) -> T:
        key = (id(obj), args)
        hit = self._data.get(key)
        if hit is not None and hit[0] is obj:
            self._data.move_to_end(key)
            return hit[1]  # type: ignore[no-any-return]
        value = compute()
        self._data[key] = (obj, value)
        if len(self._data) > self.size:
            self._data.popitem(last=False)
        return value
