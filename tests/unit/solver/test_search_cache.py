"""The search's memo (:class:`pddplan.solver.cache.SearchCache`): a bounded LRU."""

from __future__ import annotations

from pddplan.solver.cache import SearchCache


def test_a_kept_value_is_returned_without_computing_again() -> None:
    cache = SearchCache()
    calls: list[str] = []

    def compute() -> float:
        calls.append("x")
        return 2.5

    assert cache.get(("route", 1.0), compute) == 2.5
    assert cache.get(("route", 1.0), compute) == 2.5
    assert calls == ["x"]
    assert (cache.hits, cache.misses) == (1, 1)


def test_falsy_values_are_kept_like_any_other() -> None:
    """None, 0 and an empty tuple are values (a search that found nothing), not misses."""
    cache = SearchCache()
    for key, value in (("none", None), ("zero", 0.0), ("empty", ())):
        calls: list[object] = []

        def compute(v: object = value, seen: list[object] = calls) -> object:
            seen.append(v)
            return v

        assert cache.get(key, compute) == value
        assert cache.get(key, compute) == value
        assert len(calls) == 1, key
    assert (cache.hits, cache.misses) == (3, 3)


def test_the_least_recently_used_entry_goes_first() -> None:
    cache = SearchCache(max_entries=2)
    cache.get("a", lambda: 1)
    cache.get("b", lambda: 2)
    cache.get("a", lambda: -1)  # a hit: "a" is now the most recently used
    cache.get("c", lambda: 3)  # over the bound: "b" goes
    assert "a" in cache and "c" in cache and "b" not in cache
    assert len(cache) == 2
    assert cache.get("b", lambda: 20) == 20  # computed again
    assert "a" not in cache  # "a" was the least recently used then


def test_put_replaces_a_value_and_counts_as_a_use() -> None:
    cache = SearchCache(max_entries=2)
    cache.put("a", 1)
    cache.put("b", 2)
    cache.put("a", 10)  # replaced, and now the most recently used
    cache.put("c", 3)
    assert cache.get("a", lambda: -1) == 10
    assert "b" not in cache


def test_clear_forgets_values_and_counts() -> None:
    cache = SearchCache()
    cache.get("a", lambda: 1)
    cache.get("a", lambda: 1)
    cache.clear()
    assert len(cache) == 0 and (cache.hits, cache.misses) == (0, 0)
    assert cache.get("a", lambda: 7) == 7
