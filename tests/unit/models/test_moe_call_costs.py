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


def _numbers(reg: Registry, model_name: str, chip_name: str, tp: int):
    model = reg.load("model", model_name).model_copy(update={"speculative": None})
    inst = Instance(reg.load("chip", chip_name), model_numbers(model), tp, 0.9, Layout(tp))
    return inst.step_shape, inst.layout_numbers


def test_profile_values_reach_the_layout_numbers(reg: Registry) -> None:
    _, lay = _numbers(reg, "qwen3-235b-a22b", "h200-sxm", 8)
    assert lay.moe_routing_latency_s == pytest.approx(8.6e-6)
    assert lay.gemm_k_block_latency_s == pytest.approx(0.34e-6)
    _, plain = _numbers(reg, "qwen3-235b-a22b", "gpu-a", 8)
    assert plain.moe_routing_latency_s == 0.0 and plain.gemm_k_block_latency_s == 0.0


def test_k_loop_floor_counts_both_gemms_blocks(reg: Registry) -> None:
    """Qwen3-235B at TP8: gate-up K = 4,096 (32 blocks), down K = 1,536 / 8 = 192 (2 blocks),
    94 MoE layers."""
    shape, lay = _numbers(reg, "qwen3-235b-a22b", "h200-sxm", 8)
    floor = compute.expert_k_loop_floor_s(np.array([0.0, 1.0, 4096.0]), shape, lay)
    blocks = math.ceil(shape.hidden_size / 128) + math.ceil(
        shape.expert_intermediate_size / 8 / 128
    )
    assert blocks == 34
    assert floor[0] == 0.0
    assert floor[1] == floor[2] == pytest.approx(shape.moe_layers * blocks * 0.34e-6)


def test_floor_binds_at_one_token_and_bytes_decide_at_many(reg: Registry) -> None:
    shape, lay = _numbers(reg, "qwen3-235b-a22b", "h200-sxm", 8)
    bare = dataclasses.replace(lay, gemm_k_block_latency_s=0.0)
    floor = float(compute.expert_k_loop_floor_s(1.0, shape, lay))
    _, one = compute.routed_expert_s(1.0, 1.0, shape, lay)
    _, one_bare = compute.routed_expert_s(1.0, 1.0, shape, bare)
    assert float(one_bare) < floor and float(one) == pytest.approx(floor)
    _, many = compute.routed_expert_s(4096.0, 1.0, shape, lay)
    _, many_bare = compute.routed_expert_s(4096.0, 1.0, shape, bare)
    assert float(many) == float(many_bare) > floor


def test_routing_latency_once_per_moe_layer(reg: Registry) -> None:
    shape, lay = _numbers(reg, "deepseek-v3", "h200-sxm", 8)
    bare = dataclasses.replace(lay, moe_routing_latency_s=0.0)
    added = compute.step_latency_s(8.0, shape, lay) - compute.step_latency_s(8.0, shape, bare)
    assert shape.moe_layers == 58 < shape.layers
    assert float(added) == pytest.approx(58 * 8.6e-6)


def test_dense_model_has_neither_term(reg: Registry) -> None:
    shape, lay = _numbers(reg, "llama-3.3-70b", "h200-sxm", 8)
    bare = dataclasses.replace(lay, moe_routing_latency_s=0.0, gemm_k_block_latency_s=0.0)
    assert float(compute.expert_k_loop_floor_s(1.0, shape, lay)) == 0.0
    assert float(compute.step_latency_s(1.0, shape, lay)) == float(
        compute.step_latency_s(1.0, shape, bare)
    )
