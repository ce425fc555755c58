"""Affinity maps: item ``i`` runs on worker ``i % workers`` at every map of one block, so a
second pass over the same items finds what the first cached there (robust's two passes)."""

from __future__ import annotations

import os

from pddplan.executors import LocalExecutor

#: What each process has seen (module state of the worker that ran the task).
_SEEN: list[int] = []


def _remember(item: int) -> tuple[int, int, tuple[int, ...]]:
    """The item, the worker's pid, and the items this worker had seen before."""
    before = tuple(_SEEN)
    _SEEN.append(item)
    return item, os.getpid(), before


def test_affinity_pins_each_item_to_one_worker_across_maps() -> None:
    items = list(range(6))
    _SEEN.clear()  # where a worker is forked from this process, it starts with what this saw
    with LocalExecutor(jobs=2) as ex:
        first = ex.map(_remember, items, affinity=True)
        second = ex.map(_remember, items, affinity=True)
    assert [r[0] for r in first] == items and [r[0] for r in second] == items  # items' order
    pid_of = {i: pid for i, pid, _ in first}
    assert {i: pid for i, pid, _ in second} == pid_of  # the same worker at the second map
    assert pid_of[0] != pid_of[1] and os.getpid() not in pid_of.values()
    for i in items:
        assert pid_of[i] == pid_of[i % 2]  # worker i % workers
        # the worker that runs item i in the second map ran it (and its lane's others) first
        lane = [j for j in items if j % 2 == i % 2]
        assert set(lane) <= set(second[i][2])
        assert not set(items) - set(lane) & set(second[i][2])


def test_affinity_and_shared_pool_give_the_same_results() -> None:
    items = list(range(5))
    with LocalExecutor(jobs=2) as ex:
        pinned = [r[0] for r in ex.map(_remember, items, affinity=True)]
        shared = [r[0] for r in ex.map(_remember, items)]
    serial = [r[0] for r in LocalExecutor(jobs=1).map(_remember, items, affinity=True)]
    assert pinned == shared == serial == items


def test_progress_counts_every_item_with_affinity() -> None:
    told: list[int] = []
    with LocalExecutor(jobs=2) as ex:
        ex.map(_remember, list(range(4)), affinity=True, progress=told.append)
    assert sorted(told) == [1, 2, 3, 4]


def _modules_loaded(item: int) -> tuple[int, int, bool]:
    """The item, the worker's pid, and whether the worker had imported ``json.tool`` (which
    only :meth:`LocalExecutor.start` asks for here)."""
    import sys

    return item, os.getpid(), "json.tool" in sys.modules


def test_started_workers_have_imported_and_keep_their_lanes() -> None:
    items = list(range(4))
    with LocalExecutor(jobs=2) as ex:
        ex.start("json.tool", affinity=True)
        started = ex._lanes[:]
        out = ex.map(_modules_loaded, items, affinity=True)
        assert ex._lanes == started  # the maps run on the started lanes
    assert [r[0] for r in out] == items
    assert all(r[2] for r in out)  # each lane imported what start named before its tasks
    assert len({r[1] for r in out}) == 2 and os.getpid() not in {r[1] for r in out}


def test_start_with_one_worker_does_nothing() -> None:
    with LocalExecutor(jobs=1) as ex:
        ex.start("json.tool", affinity=True)
        assert ex._lanes == [] and ex._pool is None
        assert [r[0] for r in ex.map(_modules_loaded, [0, 1], affinity=True)] == [0, 1]
