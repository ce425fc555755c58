"""The identity memo of the spec bindings (:mod:`pddplan.io.memo`)."""

from __future__ import annotations

import gc

from pddplan.io.memo import IdentityMemo


class _Spec:
    def __init__(self, value: int) -> None:
        self.value = value


def test_computes_once_per_object_and_args() -> None:
    memo = IdentityMemo(size=8)
    calls: list[int] = []
    a, b = _Spec(1), _Spec(1)  # equal content, two objects

    def numbers(s: _Spec, k: int) -> int:
        calls.append(s.value)
        return s.value * k

    assert memo.get(a, 2, lambda: numbers(a, 2)) == 2
    assert memo.get(a, 2, lambda: numbers(a, 2)) == 2
    assert memo.get(a, 3, lambda: numbers(a, 3)) == 3  # other args: computed
    assert memo.get(b, 2, lambda: numbers(b, 2)) == 2  # another object: computed
    assert calls == [1, 1, 1]


def test_an_entry_holds_its_object_so_its_id_is_not_reused() -> None:
    memo = IdentityMemo(size=4)
    a = _Spec(1)
    memo.get(a, None, lambda: "a")
    ident = id(a)
    del a
    gc.collect()
    for i in range(50):  # new objects cannot take the id the memo still holds
        c = _Spec(i)
        assert id(c) != ident or memo.get(c, None, lambda: "c") == "c"


def test_least_recently_used_go_first() -> None:
    memo = IdentityMemo(size=2)
    objs = [_Spec(i) for i in range(3)]
    for o in objs:
        memo.get(o, None, lambda o=o: o.value)
    calls: list[int] = []
    assert memo.get(objs[0], None, lambda: calls.append(0) or 10) == 10  # evicted: computed
    assert memo.get(objs[2], None, lambda: calls.append(2) or 20) == 2  # kept
    assert calls == [0]
