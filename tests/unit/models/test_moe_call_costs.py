"""The fused-MoE call's measured fixed costs in the step model (models/compute.py):
the routing kernels once per MoE layer (``step_latency_s``) and the grouped GEMMs' K-loop floor
under the experts' weight read (``expert_k_loop_floor_s``), from the chip profile's
``moe_routing_latency_us`` and ``gemm_k_block_latency_us`` (benchmarks/gpu_fused_moe.py)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from pddplan.deployment import Instance, Layout, model_numbers
from pddplan.io.loader import Registry
from pddplan.models import compute


@pytest.fixture(scope="module")
def reg() -> Registry:
    return Registry.default()


def _numbers(reg: Registry, model_name: str, chip_name: str, tp: int, layout: Layout | None = None):
    model = reg.load("model", model_name).model_copy(update={"speculative": None})
    lay = layout or Layout(tp)
    inst = Instance(reg.load("chip", chip_name), model_numbers(model), tp, 0.9, lay)
    return inst.step_shape, inst.layout_numbers


def test_profile_values_reach_the_layout_numbers(reg: Registry) -> None:
    _, lay = _numbers(reg, "qwen3-235b-a22b", "h200-sxm", 8)
    assert lay.moe_routing_latency_s == pytest.approx(8.6e-6)
    assert lay.gemm_k_block_latency_s == pytest.approx(0.36e-6)
    _, plain = _numbers(reg, "qwen3-235b-a22b", "mi300x", 8)
    assert plain.moe_routing_latency_s == 0.0 and plain.gemm_k_block_latency_s == 0.0


def test_k_loop_floor_counts_both_gemms_blocks(reg: Registry) -> None:
    """Qwen3-235B at TP8: gate-up K = 4,096 (32 blocks), down K = 1,536 / 8 = 192 (2 blocks),
    94 MoE layers."""
    shape, lay = _numbers(reg, "qwen3-235b-a22b", "h200-sxm", 8)
    gate_up, down = compute.expert_k_loop_floor_s(np.array([0.0, 1.0, 4096.0]), shape, lay)
    assert math.ceil(shape.hidden_size / 128) == 32
    assert math.ceil(shape.expert_intermediate_size / 8 / 128) == 2
    assert gate_up[0] == down[0] == 0.0
    assert gate_up[1] == gate_up[2] == pytest.approx(shape.moe_layers * 32 * 0.36e-6)
    assert down[1] == down[2] == pytest.approx(shape.moe_layers * 2 * 0.36e-6)


def test_expert_parallel_floor_reduces_over_the_whole_intermediate(reg: Registry) -> None:
    """Under expert parallelism an expert is not sliced: its down GEMM reduces over all of I."""
    shape, lay = _numbers(reg, "qwen3-235b-a22b", "h200-sxm", 8, Layout(8, 1, 8))
    _, down = compute.expert_k_loop_floor_s(1.0, shape, lay)
    blocks = math.ceil(shape.expert_intermediate_size / 128)
    assert blocks == 12
    assert float(down) == pytest.approx(shape.moe_layers * blocks * 0.36e-6)


def test_floor_binds_at_one_token_and_bytes_decide_at_many(reg: Registry) -> None:
    shape, lay = _numbers(reg, "qwen3-235b-a22b", "h200-sxm", 8)
    bare = dataclasses.replace(lay, gemm_k_block_latency_s=0.0)
    gate_up, down = (float(f) for f in compute.expert_k_loop_floor_s(1.0, shape, lay))
    _, one = compute.routed_expert_s(1.0, 1.0, shape, lay)
    _, one_bare = compute.routed_expert_s(1.0, 1.0, shape, bare)
    # at one token the gate-up GEMM's 32 blocks bind, the down GEMM's 2 do not
    assert float(one_bare) < gate_up < float(one) < gate_up + float(one_bare)
    _, many = compute.routed_expert_s(np.array([4096.0, 8192.0]), 1.0, shape, lay)
    _, many_bare = compute.routed_expert_s(np.array([4096.0, 8192.0]), 1.0, shape, bare)
    assert many == pytest.approx(many_bare, rel=1e-12) and min(many) > gate_up + down


def test_routing_latency_not_under_expert_parallelism(reg: Registry) -> None:
    """With experts spread over ranks the dispatch and combine kernels replace the alignment
    and the sum (their cost is the all-to-all's)."""
    shape, lay = _numbers(reg, "deepseek-v3", "h200-sxm", 8, Layout(8, 1, 8))
    bare = dataclasses.replace(lay, moe_routing_latency_s=0.0)
    assert float(compute.step_latency_s(8.0, shape, lay)) == float(
        compute.step_latency_s(8.0, shape, bare)
    )


def test_under_overlap_each_micro_batch_pays_the_floor(reg: Registry) -> None:
    """Two-batch overlap runs each half's GEMMs: the K-loop floor (in the memory part) counts
    per micro-batch; the routing latency stays in the step's floor, once."""
    shape, lay = _numbers(reg, "deepseek-v3", "h200-sxm", 8)
    over = dataclasses.replace(lay, overlap=True)
    bare = dataclasses.replace(over, gemm_k_block_latency_s=0.0)
    args = (np.array([2.0]), np.array([2.0]), np.array([2.0 * 1024]), np.array([1e8]))
    with_floor = compute.layout_step_parts_s(*args, shape, over)
    without = compute.layout_step_parts_s(*args, shape, bare)
    assert float(with_floor.latency_s[0]) == float(without.latency_s[0])
    assert float(with_floor.total_s[0]) > float(without.total_s[0])


def test_routing_latency_once_per_moe_layer(reg: Registry) -> None:
    shape, lay = _numbers(reg, "deepseek-v3", "h200-sxm", 8)
    bare = dataclasses.replace(lay, moe_routing_latency_s=0.0)
    added = compute.step_latency_s(8.0, shape, lay) - compute.step_latency_s(8.0, shape, bare)
    assert shape.moe_layers == 58 < shape.layers
    assert float(added) == pytest.approx(58 * 8.6e-6)


def test_dense_model_has_neither_term(reg: Registry) -> None:
    shape, lay = _numbers(reg, "llama-3.3-70b", "h200-sxm", 8)
    bare = dataclasses.replace(lay, moe_routing_latency_s=0.0, gemm_k_block_latency_s=0.0)
    assert all(float(f) == 0.0 for f in compute.expert_k_loop_floor_s(1.0, shape, lay))
    assert float(compute.step_latency_s(1.0, shape, lay)) == float(
        compute.step_latency_s(1.0, shape, bare)
    )
