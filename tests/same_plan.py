"""Two plans (or any records holding arrays) compared field by field, arrays by value: the
comparison tests use where a plan is rebuilt, not kept (a dataclass's own ``==`` compares a
plan's timeline arrays only where both plans hold the very same arrays)."""

from __future__ import annotations

import dataclasses

import numpy as np


def assert_same(a: object, b: object, path: str = "plan") -> None:
    """Assert ``a`` and ``b`` equal field by field (dataclasses, dicts in key order, lists and
    tuples, arrays by value, NaN equal to NaN), every field but a dataclass's ``problem`` (the
    problem object: compared by the caller, by identity or ``==``); ``path`` names the field
    that differs."""
    if dataclasses.is_dataclass(a) and not isinstance(a, type):
        assert type(a) is type(b), path
        for f in dataclasses.fields(a):
            if f.name != "problem":
                assert_same(getattr(a, f.name), getattr(b, f.name), f"{path}.{f.name}")
        return
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        assert np.array_equal(a, b), path
        return
    if isinstance(a, dict):
        assert isinstance(b, dict) and list(a) == list(b), path
        for k in a:
            assert_same(a[k], b[k], f"{path}[{k!r}]")
        return
    if isinstance(a, list | tuple):
        assert type(a) is type(b) and len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_same(x, y, f"{path}[{i}]")
        return
    assert a == b or (a != a and b != b), f"{path}: {a!r} != {b!r}"  # NaN equals NaN here
