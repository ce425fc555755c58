"""Unit tests of the simulator's resources: the event heap, the FCFS pool against the M/M/c
formula, the processor-sharing line and continuous-batching decode instances."""

from __future__ import annotations

import heapq
import math

import numpy as np
import pytest

from pddplan.io.loader import Registry, bundled_profiles_dir, load_scenario
from pddplan.models import queueing
from pddplan.sim import events as ev
from pddplan.sim.resources import DecodePool, FcfsPool, PsLine, StepTable
from pddplan.solver import PDD, build_problem


@pytest.fixture(scope="module")
def problem():
    rs = load_scenario(None, Registry(dirs=[bundled_profiles_dir()]))
    return build_problem(rs, PDD)


def drain(q: ev.EventQueue, handle) -> None:
    while q.heap:
        t, _, code, a, b = heapq.heappop(q.heap)
        handle(t, code, a, b)


# ------------------------------------------------------------------------------ event heap


def test_event_heap_orders_by_time_then_push_order() -> None:
    q = ev.EventQueue()
    q.push(2.0, ev.SAMPLE, "late")
    q.push(1.0, ev.SAMPLE, "first")
    q.push(1.0, ev.SAMPLE, "second")
    got = [q.pop()[3] for _ in range(3)]
    assert got == ["first", "second", "late"]


# ------------------------------------------------------------------------------ FCFS pool


def mmc_mean_wait(servers: int, rate: float, mean_service_s: float, n: int, seed: int) -> float:
    """Mean wait of ``n`` customers in an M/M/c queue simulated with :class:`FcfsPool`."""
    rng = np.random.default_rng(seed)
    arrivals = np.cumsum(rng.exponential(1 / rate, n)).tolist()
    service = rng.exponential(mean_service_s, n).tolist()
    q = ev.EventQueue()
    pool = FcfsPool(servers, q)
    start = [math.nan] * n
    for r, t in enumerate(arrivals):
        q.push(t, ev.ARRIVAL, r)

    def handle(t: float, code: int, a, b) -> None:
        if code == ev.ARRIVAL:
            if pool.free:
                start[a] = t
            pool.arrive(t, a, service[a])
        else:  # PREFILL_DONE
            nxt = pool.done(b)
            if nxt >= 0:
                start[nxt] = t
                pool.start(t, nxt, b, service[nxt])

    drain(q, handle)
    wait = np.asarray(start) - np.asarray(arrivals)
    return float(np.mean(wait[n // 20 :]))


@pytest.mark.parametrize("servers", [1, 3])
def test_fcfs_pool_matches_erlang_c_mean_wait(servers: int) -> None:
    """M/M/c at utilization 0.7: simulated mean wait within 8% of C(c, a) / (c mu - lambda)."""
    mean_s, util = 1.0, 0.7
    rate = util * servers / mean_s
    pw = queueing.erlang_c(servers, rate * mean_s)
    analytic = pw / (servers / mean_s - rate)
    sim = mmc_mean_wait(servers, rate, mean_s, 100_000, seed=11)
    assert sim == pytest.approx(analytic, rel=0.08)


# ------------------------------------------------------------------------------ PS line


def run_line(flows: list[tuple[float, float]], goodput: float) -> dict[int, float]:
    """End time of each flow ``(start_s, size_bytes)`` on a processor-sharing line."""
    q = ev.EventQueue()
    line = PsLine(goodput, q)
    for i, (t, _) in enumerate(flows):
        q.push(t, ev.WAN_START, i)
    end: dict[int, float] = {}

    def handle(t: float, code: int, a, b) -> None:
        if code == ev.WAN_START:
            line.add(t, a, flows[a][1])
        else:
            for r in line.done(t, a):
                end[r] = t

    drain(q, handle)
    return end


def test_ps_line_single_flow_takes_size_over_goodput() -> None:
    end = run_line([(3.0, 5e9)], goodput=1e10)
    assert end[0] == pytest.approx(3.0 + 0.5, rel=1e-12)


def test_ps_line_shares_equally() -> None:
    # two flows from t=0: the small one ends when each got 1 GB (at half rate), the big one
    # then runs alone for the remaining 2 GB
    end = run_line([(0.0, 1e9), (0.0, 3e9)], goodput=1e9)
    assert end[0] == pytest.approx(2.0, rel=1e-12)
    assert end[1] == pytest.approx(4.0, rel=1e-12)
    # a late flow slows an early one down
    end = run_line([(0.0, 2e9), (1.0, 0.5e9)], goodput=1e9)
    assert end[1] == pytest.approx(2.0, rel=1e-12)
    assert end[0] == pytest.approx(2.5, rel=1e-12)


def test_ps_line_busy_time_counts_only_active_periods() -> None:
    q = ev.EventQueue()
    line = PsLine(1e9, q)
    line.add(0.0, 0, 1e9)
    t, _, _, ver, _ = q.pop()
    assert line.done(t, ver) == [0]
    line.snapshot(5.0)
    assert line.busy_s == pytest.approx(1.0)


# ------------------------------------------------------------------------------ decode pool


def test_step_table_interpolates_decode_step_time(problem) -> None:
    inst = problem.options["MD"][0]
    tab = StepTable(inst, 16, 70_000)
    for b, ctx in [(1, 0.0), (7, 12_345.0), (16, 64_512.0)]:
        assert tab.step_s(b, ctx) == pytest.approx(float(inst.decode_step_s(b, ctx)), rel=2e-3)


def test_decode_pool_batch_runs_at_the_step_time_of_its_batch(problem) -> None:
    inst = problem.options["MD"][0]
    q = ev.EventQueue()
    pool = DecodePool(0, inst, 1, 8, 70_000, q)
    first = [pool.join(0.0, 0, r, 64_512.0, 100.0) for r in range(2)]
    step2 = pool.table.step_s(2, 64_512.0)
    assert first[1] == pytest.approx(step2)
    done: list[int] = []
    while not done:  # the first join's completion event is voided by the second join
        t, _, _, _, (j, ver) = q.pop()
        done = pool.done(t, j, ver)
    assert sorted(done) == [0, 1]
    assert t == pytest.approx(100 * step2, rel=1e-9)


def test_decode_pool_leave_reports_tokens_and_extend_pauses(problem) -> None:
    inst = problem.options["MD"][0]
    q = ev.EventQueue()
    pool = DecodePool(0, inst, 1, 8, 70_000, q)
    pool.join(0.0, 0, 7, 64_512.0, 1000.0)
    s1 = pool.table.step_s(1, 64_512.0)
    _, tokens = pool.leave(10 * s1, 7)
    assert tokens == pytest.approx(10.0)
    # an extend pass holds the batch still for Instance.extend_s
    pool.join(0.0 + 10 * s1, 0, 8, 64_512.0, 50.0)
    pool.extend(10 * s1, 0, 9, 64.0, 64_512.0)
    e = pool.extend_s(64.0, 64_512.0)
    assert e == pytest.approx(float(inst.extend_s(64.0, 64_512.0)))
    assert pool.tokens_of(10 * s1 + e / 2, 8) == pytest.approx(0.0)
    t, _, code, _, j = q.pop()
    while code != ev.EXTEND_DONE:
        t, _, code, _, j = q.pop()
    assert pool.extend_done(t, j) == (9, 64.0)
    assert t == pytest.approx(10 * s1 + e)


def test_decode_pool_picks_the_least_loaded_instance(problem) -> None:
    pool = DecodePool(0, problem.options["MD"][0], 3, 2, 70_000, ev.EventQueue())
    pool.used[:] = [2, 1, 1]
    assert pool.pick() == 1
    pool.used[:] = [2, 2, 2]
    assert pool.pick() == -1


def test_decode_pool_request_slot_takes_one_or_queues(problem) -> None:
    pool = DecodePool(0, problem.options["MD"][0], 2, 1, 70_000, ev.EventQueue())
    assert [pool.request_slot(r) for r in (5, 6)] == [0, 1]
    assert pool.used == [1, 1] and not pool.waitq
    assert pool.request_slot(7) == -1
    assert pool.used == [1, 1] and list(pool.waitq) == [7]
