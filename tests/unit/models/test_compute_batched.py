"""The batched evaluations of pddplan.models.compute give what one call per item gives.

``chunked_prefill_time_s`` evaluates every full chunk in one step call, and
``max_batch_at_step_time`` narrows a bracket a few dozen batches a call; both must equal, to
the bit, the plain forms they replaced: one step call per chunk, and every batch up to the cap
evaluated at once. ``max_batches_at_step_time`` (which ``max_batch_at_step_time`` calls at one
context) evaluates several contexts' batches in one call: each context's answer must be the
one evaluating every batch of that context gives. Compared here on real instances (an MoE
model with expert-popularity skew, a dense one, every layout), where the step is far from
linear.
"""

from __future__ import annotations

import numpy as np
import pytest

from pddplan.api import load_scenario
from pddplan.models import compute
from pddplan.models.architecture import causal_context_sum_tokens
from pddplan.solver import build_problem
from pddplan.solver.problem import Topology

LAYOUTS = """\
kind: scenario
name: layouts
model: {model}
workload: agent-64k
link: wan-100g-cross-city
rdma: rdma-400g
roles:
  P: {{chips: [h200-sxm, gpu-b, mi300x], chips_per_instance: [4, 8], layouts: [tp, ep, ep-tbo]}}
  RLD: {{chips: [h200-sxm], chips_per_instance: [8], layouts: [tp]}}
  MD: {{chips: [gpu-b, h20], chips_per_instance: [8, 16], layouts: [tp, ep]}}
baseline: {{chip: gpu-a, chips_per_instance: 8}}
sla: {{ttft_p50_s: 5, ttft_p90_s: 10, ttft_p99_s: 20, tpot_ms: 50}}
rate_rps: 2.0
"""


def _one_call_per_chunk(uncached, cached, chunk_size, step_time_of):
    u, p = np.broadcast_arrays(np.asarray(uncached, float), np.asarray(cached, float))
    c = float(chunk_size)
    full = np.floor(u / c)
    tail = u - full * c
    total = np.zeros(u.shape)
    for j in range(int(full.max()) if full.size else 0):
        ctx = p + j * c
        last = np.where((full == j + 1) & (tail == 0), 1.0, 0.0)
        t = step_time_of(c, last, causal_context_sum_tokens(c, ctx), ctx + c)
        total = total + np.where(full > j, t, 0.0)
    ctx = p + full * c
    t_tail = step_time_of(
        np.maximum(tail, 1.0), 1.0, causal_context_sum_tokens(tail, ctx), ctx + tail
    )
    total = total + np.where(tail > 0, t_tail, 0.0)
    return total[()] if total.ndim == 0 else total


def _every_batch(step_time_of_batch, target_s, max_batch):
    b = np.arange(1, int(max_batch) + 1, dtype=float)
    ok = np.asarray(step_time_of_batch(b)) <= target_s
    if not ok[0]:
        return 0
    return int(np.argmin(ok)) if not ok.all() else int(max_batch)


@pytest.fixture(scope="module", params=["qwen3-235b-a22b", "llama-3.1-70b"])
def instances(request, tmp_path_factory):
    path = tmp_path_factory.mktemp("batched") / "layouts.yaml"
    path.write_text(LAYOUTS.format(model=request.param))
    pb = build_problem(
        load_scenario(path).resolved, Topology("pdd", True, True, anomalous_filter=True)
    )
    found = {id(i): i for role in ("P", "RLD", "MD") for i in pb.options[role]}
    assert len(found) >= 8
    return pb, list(found.values())


def test_chunked_prefill_equals_one_step_call_per_chunk(instances) -> None:
    pb, insts = instances
    rng = np.random.default_rng(7)
    cases = [
        (pb.classes.input_tokens * (1 - pb.classes.hit_rate), pb.classes.input_tokens * 0.5),
        (rng.integers(1, 70_000, (4, 6)).astype(float), rng.integers(0, 9_000, (4, 6)) * 1.0),
        (np.array([8192.0, 16384.0, 3.0, 0.0]), 0.0),
        (40_000.0, 1_000.0),
    ]
    for inst in insts:
        for uncached, cached in cases:
            for chunk in (2048, 8192):
                want = _one_call_per_chunk(uncached, cached, chunk, inst._step_s)
                got = compute.chunked_prefill_time_s(uncached, cached, chunk, inst._step_s)
                assert type(got) is type(want) and np.shape(got) == np.shape(want)
                assert np.array_equal(got, want), (inst.chip.name, inst.layout, chunk)


def test_largest_batch_equals_evaluating_every_batch(instances) -> None:
    _pb, insts = instances
    narrowed = 0  # answers strictly inside a cap past one call's batches (the bracket's work)
    for inst in insts:
        for ctx in (300.0, 9_000.0, 40_000.0):
            cap = min(inst.max_batch_memory(ctx), 1 << 16)

            def step(b, ctx=ctx, inst=inst):
                return inst.decode_step_s(b, ctx)

            # _every_batch's step call over batches 1..max_batch, made once for every target
            # (the same call each time)
            every = {m: step(np.arange(1, int(m) + 1, dtype=float)) for m in {cap, 65, 200, 4_097}}
            for tpot_s in (0.005, 0.02, 0.05, 0.3):
                for max_batch in {cap, 65, 200, 4_097}:
                    want = _every_batch(lambda b, t=every[max_batch]: t, tpot_s, max_batch)
                    got = compute.max_batch_at_step_time(step, tpot_s, max_batch)
                    assert got == want, (inst.chip.name, inst.layout, ctx, tpot_s, max_batch)
                    narrowed += max_batch > 64 and 1 < want < max_batch
    assert narrowed >= 10


def test_largest_batches_at_several_contexts_equal_evaluating_every_batch(instances) -> None:
    """Every instance at contexts whose bounds are small (every batch of all of them in one
    call) and larger (all their probes in one call, then all their batches up to a miss), at
    several targets: each answer is the one evaluating every batch of that context gives, and
    so is what ``Instance.max_batches_at_tpot`` keeps (the bounds are held to 4,097 so that
    every batch of each context can be evaluated)."""
    _pb, insts = instances
    rng = np.random.default_rng(11)
    together = probed = 0
    for inst in insts:
        contexts = [1.0, *np.exp(rng.uniform(np.log(50.0), np.log(400_000.0), 9)).tolist()]
        caps = [min(inst.max_batch_memory(c), 4_097) for c in contexts]
        together += sum(1 <= c <= 64 for c in caps)
        probed += sum(c > 64 for c in caps)
        # each context's step over every batch up to its bound, made once for every target
        every = [
            inst.decode_step_s(np.arange(1, cap + 1, dtype=float), c)
            for c, cap in zip(contexts, caps, strict=True)
        ]
        for tpot_s in (0.005, 0.02, 0.05, 0.3):
            want = [
                _every_batch(lambda b, t=t: t, tpot_s, cap) if cap >= 1 else 0
                for t, cap in zip(every, caps, strict=True)
            ]
            calls: list[int] = []

            def step(b, c, inst=inst, calls=calls):
                calls.append(np.size(b))
                return inst.decode_step_s(b, c)

            got = compute.max_batches_at_step_time(step, contexts, tpot_s, caps)
            assert got == want, (inst.chip.name, inst.layout, tpot_s)
            # the probes and batches of every context in at most two calls (a probed
            # context's batches disagreeing with its probes would take a third)
            assert len(calls) <= 2, (inst.chip.name, inst.layout, tpot_s, len(calls))
        # the instance's own, at its own bounds: a context it had not kept is computed with
        # the others, and kept
        fresh = [float(c) * (1.0 + 1e-12) for c in contexts]
        want = [
            compute.max_batches_at_step_time(
                inst.decode_step_s, [c], 0.05, [min(inst.max_batch_memory(c), 1 << 16)]
            )[0]
            for c in fresh
        ]
        assert inst.max_batches_at_tpot([*fresh, fresh[0]], 0.05) == [*want, want[0]]
        assert [inst.max_batch_at_tpot(c, 0.05) for c in fresh] == want
    assert together >= 10 and probed >= 10  # both ways were taken


def test_largest_batches_split_their_calls_at_the_element_cap(instances, monkeypatch) -> None:
    """With a small cap on the elements of one call, the contexts' batches go in several calls,
    none above the cap unless one context's batches alone are more, and every answer is the
    same."""
    _pb, insts = instances
    inst = insts[0]
    contexts = [1.0, 300.0, 9_000.0, 40_000.0, 120_000.0]
    caps = [min(inst.max_batch_memory(c), 4_097) for c in contexts]
    want = compute.max_batches_at_step_time(inst.decode_step_s, contexts, 0.05, caps)
    monkeypatch.setattr(compute, "_ELEMENTS_PER_CALL", 70)
    calls: list[tuple[int, int]] = []  # (elements, distinct contexts) of each call

    def step(b, c):
        calls.append((np.size(b), np.unique(c).size))
        return inst.decode_step_s(b, c)

    assert compute.max_batches_at_step_time(step, contexts, 0.05, caps) == want
    assert len(calls) > 2  # the cap split the calls
    assert all(n <= 70 or k == 1 for n, k in calls), calls  # above it: one context alone
    assert any(k > 1 for _, k in calls)  # contexts still share calls under it


def test_probes_that_disagree_with_the_batches_take_every_batch() -> None:
    """A step whose probes' call finds a miss at batch 207 (its first probe from 200) while
    the batches' call up to it finds none (calls that disagree, which an elementwise step never
    makes): every batch up to the bound is evaluated, in a third call, and the answer is
    theirs."""
    sizes: list[int] = []

    def step(b, c=None):
        b = np.asarray(b, dtype=float)
        sizes.append(b.size)
        t = 0.01 + 1e-5 * b  # batch 500 is the last within 0.015
        return t + np.where(b >= 200.0, 1.0, 0.0) if b.size <= 64 else t  # the probes' call

    assert compute.max_batches_at_step_time(step, [1.0], 0.015, [1_000]) == [500]
    assert sizes == [64, 207, 1_000]
    sizes.clear()
    assert compute.max_batch_at_step_time(step, 0.015, 1_000) == 500  # the same rule
    assert sizes == [64, 207, 1_000]


def test_largest_batch_counts_only_the_leading_run_under_a_dipping_step() -> None:
    """A step time that dips past its first miss (expert-parallel layouts' do, by a few ppm):
    the answer is the leading run of batches within the target, as every batch evaluated."""

    def step(b):
        b = np.asarray(b, dtype=float)
        return 0.01 + 1e-5 * b - np.where((b > 700) & (b < 900), 5e-4, 0.0)

    for target in np.linspace(0.0165, 0.0185, 41):
        for max_batch in (65, 1_000, 5_000, 65_536):
            want = _every_batch(step, float(target), max_batch)
            assert compute.max_batch_at_step_time(step, float(target), max_batch) == want


def test_largest_batch_on_a_real_dipping_step(tmp_path) -> None:
    """gpu-b as 32-chip expert-parallel instances with two-batch overlap: its decode step dips
    past batch 106 at a 1-token context; targets inside the dips give the leading run."""
    path = tmp_path / "ep.yaml"
    path.write_text(
        LAYOUTS.format(model="qwen3-235b-a22b").replace(
            "MD: {chips: [gpu-b, h20], chips_per_instance: [8, 16], layouts: [tp, ep]}",
            "MD: {chips: [gpu-b], chips_per_instance: [32], layouts: [ep-tbo]}",
        )
    )
    pb = build_problem(
        load_scenario(path).resolved, Topology("pdd", True, True, anomalous_filter=True)
    )
    (inst,) = pb.options["MD"]
    cap = min(inst.max_batch_memory(1.0), 1 << 16)

    def step(b):
        return inst.decode_step_s(b, 1.0)

    t = np.asarray(step(np.arange(1, 600, dtype=float)))
    dips = np.flatnonzero(np.diff(t) < 0)
    assert dips.size  # the step this test is about
    # _every_batch's one step call over batches 1..cap, made once: it is the same for every
    # target (20 calls of 65,536 batches took about 20 s of the suite)
    every = np.asarray(step(np.arange(1, int(cap) + 1, dtype=float)))
    for i in dips[:20]:
        target = float(0.5 * (t[i] + t[i + 1]))  # batch i + 1 misses, batch i + 2 meets
        want = _every_batch(lambda b: every, target, cap)
        assert compute.max_batch_at_step_time(step, target, cap) == want
