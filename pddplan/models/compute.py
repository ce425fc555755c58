"""Compute: prefill (chunked, over a cached prefix), decode steps, and MD's extend pass.

A step's time (:func:`layout_step_parts_s`, the one step model, which
:class:`pddplan.deployment.Instance` evaluates for every role) is a roofline with derates
[1]_ per kernel (``max(compute, memory)``), plus communication and a latency floor, where
compute runs at a GEMM efficiency that grows with the tokens in the step; a prefill is a run of
such steps (:func:`chunked_prefill_time_s`). All functions are pure and broadcast over numpy
arrays.

References
----------
.. [1] Williams, Waterman, Patterson, "Roofline: an insightful visual performance model", 2009.
.. [2] Agrawal et al., "Sarathi-Serve: taming throughput-latency tradeoff in LLM inference",
   OSDI 2024 (chunked prefill).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

from pddplan.models.architecture import causal_context_sum_tokens, expected_experts_touched
from pddplan.models.collectives import allreduce_time_s as allreduce_time
from pddplan.models.collectives import alltoall_time_s as alltoall_time
from pddplan.models.collectives import low_latency_alltoall_time_s as low_latency_alltoall_time
from pddplan.models.collectives import ring_link_bytes_per_s

_T = TypeVar("_T")

ALLREDUCES_PER_LAYER = 2  # after attention and after the FFN (Megatron-style TP)

#: Throughput gain of two-batch overlap over the same layout without it [-]. SGLang's large-scale
#: EP deployment of DeepSeek-V3 on H100 (LMSYS blog, "Deploying DeepSeek with PD disaggregation
#: and large-scale expert parallelism on 96 H100 GPUs", 2025-05-05, two-batch overlap section)
#: measures a 27-35% prefill throughput gain from TBO; 0.31 is the middle. The ideal overlap
#: (communication fully hidden) would give far more where communication is a large share of the
#: step: the split micro-batches run smaller GEMMs, DeepEP's kernels take SMs from compute, and
#: the two halves' phases do not line up. The prefill figure is applied to decode too (no
#: published decode measurement at hand: an assumption).
TWO_BATCH_OVERLAP_GAIN = 0.31

#: Max/mean load of the busiest expert-parallel rank that an expert-placement balancer (EPLB)
#: leaves under real routing, beyond the random fluctuation of :func:`expert_imbalance` [-].
#: SGLang's profile of DeepSeek-V3 prefill on 32 H100 (EP32, 16,384 tokens per GPU, 4,096-token
#: prompts; LMSYS blog 2025-05-05, "Profile Results" table) measures 50,302 input tokens/s per node
#: with its EPLB placement under the real expert distribution and 59,337 with simulated perfect
#: balance (random experts under group-limited routing, what the balls-into-bins term already
#: models), a ratio of 1.180; the blog traces it to longer communication kernels and compute
#: bubbles from expert imbalance. Only the expert GEMMs and the all-to-all wait for the busiest
#: rank, so the whole step slowing by 1.18 means a max/mean of at least 1.18: 1.18 is a lower
#: bound. It is applied to decode as well (an assumption: decode's smaller batches fluctuate more,
#: SGLang's decode case study shows throughput tracking balancedness but gives no number).
EPLB_RESIDUAL_SKEW = 1.18
#: Extra imbalance without a balancer [-]: SGLang measures EPLB speeding prefill up 1.49x (and
#: decode 2.54x) at large scale (same blog, "Ablation Study: EPLB"); the prefill figure is taken
#: for both phases (the smaller: a lower bound for decode).
NO_BALANCER_SKEW_FACTOR = 1.49

#: Reduction depths ``K`` of the two grouped GEMMs at which the chip profiles' grouped-GEMM
#: curves (``fp8_grouped_gemm_efficiency`` and ``_half_saturation_tokens``) were measured
#: [elements]: DeepGEMM's README tables use DeepSeek-V3's expert shapes without tensor
#: parallelism, gate-up ``N = 4096, K = 7168`` (the hidden size) and down ``N = 7168, K = 2048``
#: (the expert's intermediate size) (deepseek-ai/DeepGEMM README, "Grouped GEMMs for MoE models",
#: H800). :func:`expert_depth_factors` takes the depth effect relative to them, so a GEMM of those
#: shapes runs on the curve as measured.
GROUPED_CURVE_GATE_UP_DEPTH_ELEMENTS = 7168.0
GROUPED_CURVE_DOWN_DEPTH_ELEMENTS = 2048.0


def gemm_efficiency(tokens, compute_efficiency, half_saturation_tokens):
    """Fraction of peak compute reached by a step of ``tokens`` tokens [-].

    Notes
    -----
    ``eta(n) = eta_max * n / (n + n_half)``: small steps (decode, tail chunks) underuse the
    matrix units; large ones approach the measured large-GEMM efficiency ``eta_max``.
    """
    n = np.asarray(tokens, dtype=float)
    return compute_efficiency * n / (n + half_saturation_tokens)


def gemm_depth_efficiency(depth_elements, half_depth_elements):
    """Fraction of its deep-``K`` efficiency a GEMM of reduction depth ``K`` reaches [-].

    Parameters
    ----------
    depth_elements : [elements] ``K``, the reduction (inner) dimension of the GEMM.
    half_depth_elements : [elements] ``K_half``, the depth at which the GEMM reaches half its
        deep-``K`` efficiency; 0: no depth effect (1 at every ``K``).

    Notes
    -----
    A tiled GEMM streams ``K`` along each output tile's main loop and pays a fixed cost per tile
    (filling the pipeline, the epilogue that scales and writes the tile), worth ``K_half``
    elements of the main loop, so

    ``d(K) = K / (K + K_half)``.

    DeepGEMM's FP8 dense GEMMs on H800 show it at fixed ``M`` (deepseek-ai/DeepGEMM README,
    2025-02-25, "Normal GEMMs for dense models"): at ``M = 4096`` (compute-bound) ``K`` = 512 /
    1,536 / 2,048 / 7,168 / 16,384 reach 590 / 990 / 1,025 / 1,304 / 1,358 TFLOPS, at ``M = 64``
    (weight-read-bound) 2,143 / 2,455 / 2,470 / 2,320 / 2,668 GB/s (see the chip profiles'
    ``fp8_grouped_gemm_*half_depth_elements`` for the fits).
    """
    k = np.asarray(depth_elements, dtype=float)
    if not half_depth_elements:
        return 1.0 + 0.0 * k
    return k / (k + half_depth_elements)


#: Batches :func:`max_batch_at_step_time` evaluates in one call of the step time [-].
_BATCH_PROBES = 64


def max_batch_at_step_time(step_time_of_batch, target_s, max_batch):
    """Largest integer batch ``b <= max_batch`` such that every batch up to ``b`` steps within
    ``target_s`` [-] (the step time grows with the batch, but an expert-parallel layout's can
    dip by a few ppm past a point: a batch beyond the first that misses does not count).

    ``step_time_of_batch`` is a callable mapping an array of batches to step times, elementwise.
    Returns 0 when even ``b = 1`` misses the target. :func:`max_batches_at_step_time` at one
    context (the rule's one home).
    """
    return max_batches_at_step_time(
        lambda b, _context: step_time_of_batch(b), [0.0], target_s, [max_batch]
    )[0]


def _last_before_miss(ok: np.ndarray, hi: int) -> int:
    """The largest batch before the first that misses its target (``ok[b - 1]``: whether batch
    ``b`` meets it), ``hi`` where none of them misses [-]."""
    return int(np.argmin(ok)) if not ok.all() else hi


def max_batches_at_step_time(step_time_of, contexts_tokens, target_s, max_batches) -> list[int]:
    """:func:`max_batch_at_step_time` at several contexts (``contexts_tokens`` [tokens]): for
    each context, the largest integer batch ``b <= max_batch`` such that every batch up to
    ``b`` steps within ``target_s`` at that context (0 when even ``b = 1`` misses) [-].

    ``step_time_of`` is a callable mapping arrays of batches and contexts to step times,
    elementwise. Each context's batches are evaluated in up to three stages: every batch up to
    its ``max_batch`` where that is at most :data:`_BATCH_PROBES`, else that many probes, then
    the batches up to the first probe that misses (a failing probe bounds the first failing
    batch, which decides the answer), then every batch where those and the probes disagree.
    Each stage's batches of every context go in one call, a (context, batch) pair an element:
    the step is elementwise, so each element's time is the one a call over that context's
    batches alone gives, and a step that dips past its first miss, as expert-parallel layouts'
    can, gives the same answer.
    """
    his = [int(h) for h in max_batches]
    out: list[int] = [0] * len(his)
    first: dict[int, np.ndarray] = {}  # each context's batches of the first stage
    for i, hi in enumerate(his):
        if hi >= 1:
            if hi > _BATCH_PROBES:
                first[i] = np.unique(np.round(np.linspace(1.0, float(hi), _BATCH_PROBES)))
            else:
                first[i] = np.arange(1, hi + 1, dtype=float)
    second: dict[int, np.ndarray] = {}  # the probed contexts' batches up to a miss
    for i, ok in _within_target(step_time_of, contexts_tokens, target_s, first).items():
        hi = his[i]
        if hi <= _BATCH_PROBES:
            out[i] = _last_before_miss(ok, hi)
        elif ok[0]:
            top = hi if ok.all() else int(first[i][int(np.argmin(ok))])
            second[i] = np.arange(1, top + 1, dtype=float)
    third: dict[int, np.ndarray] = {}  # the probes' and the batches' answers disagree
    for i, ok in _within_target(step_time_of, contexts_tokens, target_s, second).items():
        hi = his[i]
        if ok.all() and ok.size < hi:
            third[i] = np.arange(1, hi + 1, dtype=float)
        else:
            out[i] = _last_before_miss(ok, hi)
    for i, ok in _within_target(step_time_of, contexts_tokens, target_s, third).items():
        out[i] = _last_before_miss(ok, his[i])
    return out


def _within_target(step_time_of, contexts_tokens, target_s, batches: dict[int, np.ndarray]):
    """Whether each batch of ``batches`` (by context index) steps within ``target_s`` at its
    context, the contexts' batches in as few calls of ``step_time_of`` as hold at most
    :data:`_ELEMENTS_PER_CALL` of them (one context's batches whole, in their own call where
    they are more): the step's arrays, some of them a row per routed expert, stay as large as
    one context's alone."""
    out: dict[int, np.ndarray] = {}
    group: list[int] = []
    size = 0
    for i in [*batches, None]:
        if group and (i is None or size + batches[i].size > _ELEMENTS_PER_CALL):
            b = np.concatenate([batches[j] for j in group])
            c = np.concatenate([np.full(batches[j].size, float(contexts_tokens[j])) for j in group])
            ok = np.asarray(step_time_of(b, c)) <= target_s
            ends = np.cumsum([batches[j].size for j in group])
            out.update(zip(group, np.split(ok, ends[:-1]), strict=True))
            group, size = [], 0
        if i is not None:
            group.append(i)
            size += batches[i].size
    return out


#: Most (context, batch) elements :func:`max_batches_at_step_time` evaluates in one call: the
#: most one context's batches can be (``max_batch`` is at most 2^16 where the instances ask).
_ELEMENTS_PER_CALL = 1 << 16


# ------------------------------------------------------------------- layouts (TP, EP, DP)


def expert_imbalance(assignments_per_rank, ranks, skew=1.0):
    """Load of the busiest expert-parallel rank over the mean load [-].

    Parameters
    ----------
    assignments_per_rank : [-] mean (token, expert) assignments a rank receives in a step.
    ranks : [-] expert-parallel ranks; 1 gives 1 (every rank holds a slice of every expert).
    skew : [-] extra max/mean factor of uneven expert popularity that no balancer removed
        (:data:`EPLB_RESIDUAL_SKEW` with an expert-placement balancer such as EPLB; 1 for
        random, perfectly balanced routing).

    Notes
    -----
    With assignments landing independently and uniformly on ``e`` ranks at mean ``lambda`` each,
    the fullest rank holds about ``lambda + sqrt(2 lambda ln e)`` [4]_, so

    ``f = s (1 + sqrt(2 ln e / lambda))``, capped at ``e`` (one rank cannot take more than all).
    """
    lam = np.maximum(np.asarray(assignments_per_rank, dtype=float), 1e-9)
    e = np.asarray(ranks, dtype=float)
    f = skew * (1.0 + np.sqrt(2.0 * np.log(np.maximum(e, 1.0)) / lam))
    return np.where(e > 1.0, np.minimum(f, e), 1.0)


@dataclass(frozen=True)
class ModelShape:
    """A model's numbers that a layout step takes, one replica, all layers.

    Attributes
    ----------
    dense_flops_per_token : [FLOP] ``2 N_dense`` per token, non-expert weights without the LM
        head (attention projections, dense FFN layers, shared experts, router).
    lm_head_flops_per_token : [FLOP] ``2 V h``.
    dense_weight_bytes : [bytes] non-expert weights read each step (the input embedding table is
        a lookup and is not read whole).
    expert_flops_per_token : [FLOP] ``2 N_expert``, one routed expert over all MoE layers.
    expert_weight_bytes : [bytes] one routed expert over all MoE layers.
    experts, top_k : [-] routed experts and experts per token (0 and 0 for a dense model).
    moe_layers, layers, hidden_size : [-] model shape.
    attention_flops_per_pair : [FLOP] per (query, key) pair, all layers.
    expert_shares : [-] share of the (token, expert) assignments each routed expert receives
        under real routing (sums to one; :func:`~pddplan.models.architecture.zipf_expert_shares`);
        None: uniform routing.
    expert_intermediate_size : [-] ``I``, one routed expert's intermediate width (the gate and
        up projections are ``h x I`` each, the down projection ``I x h``); 0: no activation
        traffic is counted for the routed experts (:func:`expert_activation_bytes`).
    """

    dense_flops_per_token: float
    lm_head_flops_per_token: float
    dense_weight_bytes: float
    expert_flops_per_token: float
    expert_weight_bytes: float
    experts: int
    top_k: int
    moe_layers: int
    layers: int
    hidden_size: int
    attention_flops_per_pair: float
    expert_shares: tuple[float, ...] | None = None
    expert_intermediate_size: int = 0


@dataclass(frozen=True)
class LayoutNumbers:
    """An instance's chips and parallel layout, in the numbers a layout step takes.

    Attributes
    ----------
    chips : [-] ``N``, chips in the instance.
    attention_tp : [-] ``t``, tensor-parallel width of attention and the other non-expert
        weights (``N / t`` data-parallel attention groups, each holding those weights).
    expert_parallel : [-] ``e``, ranks the routed experts are spread over (1: every expert is
        sliced ``N`` ways by tensor parallelism).
    ranks_per_node : [-] chips joined by the scale-up fabric.
    linear_peak_flops_per_s : [FLOP/s] one chip's dense peak at the weight precision.
    linear_efficiency, half_saturation_tokens : [-], [tokens] GEMM efficiency curve
        (:func:`gemm_efficiency`), taken at the rows each GEMM sees: tokens per attention group.
    expert_efficiency, expert_half_saturation_tokens : [-], [tokens] the efficiency curve of
        the routed experts' grouped GEMMs, taken at the tokens per expert (the linear curve's
        numbers where the chip has no grouped-GEMM curve).
    attention_peak_flops_per_s : [FLOP/s] one chip's peak at the attention precision;
        ``attention_efficiency`` [-] the fraction attention kernels reach.
    memory_bytes_per_s : [bytes/s] one chip's achieved memory bandwidth.
    activation_bytes : [bytes] bytes of one activation element (all-reduce payload).
    dispatch_bytes_per_element, combine_bytes_per_element : [bytes] all-to-all payload per
        hidden element (FP8 with block scales for dispatch, BF16 for combine).
    expert_input_bytes_per_element : [bytes] one element of a routed expert GEMM's input (FP8
        with block scales where the GEMMs run in FP8, else BF16); their outputs are
        ``activation_bytes`` wide (BF16).
    expert_half_depth_elements, expert_memory_half_depth_elements : [elements] ``K_half`` of the
        routed experts' grouped GEMMs when compute-bound and when weight-read-bound
        (:func:`gemm_depth_efficiency`, :func:`expert_depth_factors`); 0: no depth effect.
    scaleup_bytes_per_s, scaleout_bytes_per_s : [bytes/s] achieved one-direction bandwidths.
    scaleup_latency_s, scaleout_latency_s : [s] alpha of one collective on each fabric.
    scaleup_step_latency_s : [s] latency of one ring step of a bulk-protocol scale-up
        all-reduce (:func:`~pddplan.models.collectives.allreduce_time_s`).
    expert_skew : [-] see :func:`expert_imbalance`.
    layer_latency_s : [s] kernel-latency floor of one layer; ``step_overhead_s`` [s] per step
        (sampling, scheduling).
    moe_routing_latency_s : [s] the kernels of one fused-MoE call that a dense FFN does not run
        (routing top-k, alignment, sum over the ``k`` experts), once per MoE layer
        (:func:`step_latency_s`); 0: not modelled.
    gemm_k_block_latency_s : [s] one 128-deep K block of a latency-bound grouped GEMM's tile
        loop (:func:`expert_k_loop_floor_s`); 0: no floor.
    overlap : bool, two-batch overlap: the step runs as two micro-batches of ``n / 2`` whose
        communication hides under each other's compute.
    overlap_gain : [-] the most two-batch overlap speeds a step up over the same step without
        it (:data:`TWO_BATCH_OVERLAP_GAIN`, measured).
    """

    chips: int
    attention_tp: int
    expert_parallel: int
    ranks_per_node: int
    linear_peak_flops_per_s: float
    linear_efficiency: float
    half_saturation_tokens: float
    expert_efficiency: float
    expert_half_saturation_tokens: float
    attention_peak_flops_per_s: float
    attention_efficiency: float
    memory_bytes_per_s: float
    activation_bytes: float
    dispatch_bytes_per_element: float
    combine_bytes_per_element: float
    scaleup_bytes_per_s: float
    scaleout_bytes_per_s: float
    scaleup_latency_s: float
    scaleout_latency_s: float
    expert_skew: float
    layer_latency_s: float
    step_overhead_s: float
    overlap: bool = False
    overlap_gain: float = TWO_BATCH_OVERLAP_GAIN
    scaleup_step_latency_s: float = 0.0
    expert_input_bytes_per_element: float = 2.0
    expert_half_depth_elements: float = 0.0
    expert_memory_half_depth_elements: float = 0.0
    moe_routing_latency_s: float = 0.0
    gemm_k_block_latency_s: float = 0.0


@dataclass(frozen=True)
class StepParts:
    """One forward step split by what bounds it [s] (arrays broadcast over the step's tokens).

    ``compute_s`` and ``memory_s`` count each kernel group where its roofline is bound.
    """

    compute_s: np.ndarray
    memory_s: np.ndarray
    communication_s: np.ndarray
    latency_s: np.ndarray

    @property
    def total_s(self) -> np.ndarray:
        """The parts added [s]."""
        return self.compute_s + self.memory_s + self.communication_s + self.latency_s


def tokens_per_attention_group(tokens, lay: LayoutNumbers):
    """Tokens each data-parallel attention group runs, ``n_d = n t / N`` [tokens] (floored at
    1e-9 so that an empty step keeps finite efficiencies)."""
    return np.maximum(np.asarray(tokens, dtype=float) / (lay.chips / lay.attention_tp), 1e-9)


def dense_gemm_s(tokens, lm_head_tokens, shape: ModelShape, lay: LayoutNumbers):
    """The non-expert GEMMs (LM head included) of one step: (compute, memory) per chip [s].

    Notes
    -----
    With ``d = N / t`` attention groups and ``n_d = n / d`` tokens per group:
    ``t_c = (n_d F_d + l_d F_lm) / (t P eta(n_d))``, ``t_m = W_d / (t B)``.
    """
    d = lay.chips / lay.attention_tp
    n_d = tokens_per_attention_group(tokens, lay)
    lm = np.asarray(lm_head_tokens, dtype=float)
    eff_d = gemm_efficiency(n_d, lay.linear_efficiency, lay.half_saturation_tokens)
    compute_s = (n_d * shape.dense_flops_per_token + lm / d * shape.lm_head_flops_per_token) / (
        lay.attention_tp * lay.linear_peak_flops_per_s * eff_d
    )
    memory_s = shape.dense_weight_bytes / lay.attention_tp / lay.memory_bytes_per_s
    return compute_s, memory_s


def attention_s(context_token_pairs, kv_read_bytes_per_chip, shape: ModelShape, lay: LayoutNumbers):
    """Attention over the KV cache of one step: (compute, memory) per chip [s].

    Notes
    -----
    ``t_c = F_att pairs / (N P_att eta_att)``, ``t_m = K / B``.
    """
    pairs = np.asarray(context_token_pairs, dtype=float)
    compute_s = (
        pairs
        * shape.attention_flops_per_pair
        / (lay.chips * lay.attention_peak_flops_per_s * lay.attention_efficiency)
    )
    memory_s = np.asarray(kv_read_bytes_per_chip, dtype=float) / lay.memory_bytes_per_s
    return compute_s, memory_s


def expert_load_factor(tokens, shape: ModelShape, lay: LayoutNumbers):
    """Load of the busiest expert-parallel rank over the mean in a step of ``tokens`` [-]
    (:func:`expert_imbalance` at ``n k / e`` assignments per rank; 1 for a dense model)."""
    n = np.asarray(tokens, dtype=float)
    if not shape.experts:
        return 1.0 + 0.0 * n
    return expert_imbalance(
        n * shape.top_k / lay.expert_parallel, lay.expert_parallel, lay.expert_skew
    )


def sliced_intermediate(shape: ModelShape, lay: LayoutNumbers) -> float:
    """[elements] ``I_s = I e / N``: one routed expert's intermediate width on a rank, which
    tensor parallelism slices ``N / e`` ways (the down GEMM's reduction depth)."""
    return shape.expert_intermediate_size * lay.expert_parallel / lay.chips


def _per_layout(
    fn: Callable[[ModelShape, LayoutNumbers], _T],
) -> Callable[[ModelShape, LayoutNumbers], _T]:
    """``fn(shape, lay)`` memoized on the two objects (by identity, the objects kept so that no
    other meets their ``id``): a pure function of an instance's model and layout numbers, which
    every step of the instance asks for again (an instance's shape and layout numbers are the
    same objects from step to step)."""
    memo: dict[tuple[int, int], tuple[ModelShape, LayoutNumbers, _T]] = {}

    @functools.wraps(fn)
    def kept(shape: ModelShape, lay: LayoutNumbers) -> _T:
        entry = memo.get((id(shape), id(lay)))
        if entry is not None and entry[0] is shape and entry[1] is lay:
            return entry[2]
        value = fn(shape, lay)
        if len(memo) >= _PER_LAYOUT_ENTRIES:
            memo.clear()
        memo[(id(shape), id(lay))] = (shape, lay, value)
        return value

    return kept


#: Most (shape, layout) pairs each :func:`_per_layout` memo keeps before it starts again.
_PER_LAYOUT_ENTRIES = 256


@_per_layout
def expert_depth_factors(shape: ModelShape, lay: LayoutNumbers):
    """How much longer the routed experts' grouped GEMMs take for their reduction depths than
    on the profile's curve: ``(compute, weight read)`` multipliers [-].

    Parameters
    ----------
    shape, lay : the model's and the layout's numbers.

    Notes
    -----
    An expert's gate-up GEMM reduces over the hidden size ``h`` and carries 2/3 of its FLOPs and
    weights; its down GEMM reduces over its intermediate width on the rank, ``I_s = I e / N``
    (tensor parallelism slices it ``N / e`` ways), and carries 1/3. With
    ``d(K) = K / (K + K_half)`` (:func:`gemm_depth_efficiency`):

    ``c = (2 / 3 d(h) + 1 / 3 d(I_s)) / (2 / 3 d(K_gu) + 1 / 3 d(K_dn))``,
    ``m = 2 / 3 d_m(h) + 1 / 3 d_m(I_s)`` (reciprocals of ``d`` inside the sums),

    where ``K_gu``, ``K_dn`` are the depths the grouped curve was measured at
    (:data:`GROUPED_CURVE_GATE_UP_DEPTH_ELEMENTS`, :data:`GROUPED_CURVE_DOWN_DEPTH_ELEMENTS`):
    the compute multiplier is relative to the curve (1 for DeepSeek-V3 without tensor
    parallelism over its experts), the weight-read one to the chip's memory efficiency, measured
    on deep weight-streaming kernels. At tensor parallelism 8 DeepSeek-V3's down GEMM has
    ``K = 256``, which is what makes the sliced experts slow. ``(1, 1)`` for a dense model,
    without ``I`` or without the chip's depth numbers. Memoized on the two objects
    (:func:`_per_layout`).
    """
    if not shape.experts or not shape.expert_intermediate_size:
        return 1.0, 1.0
    h = float(shape.hidden_size)
    i_s = sliced_intermediate(shape, lay)

    def inverse_mean(half, gate_up_depth, down_depth):
        return float(
            2.0 / 3.0 / gemm_depth_efficiency(gate_up_depth, half)
            + 1.0 / 3.0 / gemm_depth_efficiency(down_depth, half)
        )

    k_c = lay.expert_half_depth_elements
    compute = inverse_mean(k_c, h, i_s) / inverse_mean(
        k_c, GROUPED_CURVE_GATE_UP_DEPTH_ELEMENTS, GROUPED_CURVE_DOWN_DEPTH_ELEMENTS
    )
    weight_read = inverse_mean(lay.expert_memory_half_depth_elements, h, i_s)
    return compute, weight_read


def routed_expert_s(tokens, load_factor, shape: ModelShape, lay: LayoutNumbers):
    """The routed experts' grouped GEMMs of one step: (compute, memory) per chip [s].

    Parameters
    ----------
    tokens : [tokens] ``n``, tokens in the step over the whole instance.
    load_factor : [-] ``f``, the busiest expert-parallel rank's assignments over the mean
        (:func:`expert_load_factor`; 1 under tensor parallelism, where every rank runs a slice of
        every expert).
    shape, lay : the model's and the layout's numbers.

    Notes
    -----
    Each expert's GEMM runs at the efficiency of its own token count ``x_i``, never at the mean:
    with ``eta(x) = eta_max x / (x + h)`` (:func:`gemm_efficiency`), expert ``i`` costs
    ``x_i / eta(x_i) = (x_i + h) / eta_max`` token-equivalents when it is touched and nothing when
    no token picks it. Taking the expectation over routing (``sum_i x_i = n k``; expert ``i``
    touched with probability ``1 - (1 - q_i)^n``, ``q_i = k p_i`` for the shares ``p_i`` of
    :attr:`ModelShape.expert_shares`, uniform when None) gives exactly

    ``t_c = c f (n k + h T(n)) F_e / (N P eta_max)``, ``t_m = (m T(n) W_e / N + A_g) / B``,

    where ``T(n)`` is the expected number of experts touched
    (:func:`~pddplan.models.architecture.expected_experts_touched`), ``A_g`` the GEMMs' own
    activation bytes on the rank (:func:`expert_activation_bytes`) and ``c``, ``m`` the GEMMs'
    reduction-depth multipliers (:func:`expert_depth_factors`; 1 at the curve's shapes). At small steps only the
    touched experts run, each with its few tokens (no extrapolation of the curve below one token
    per expert), and the step is bound by reading their weights; at large steps ``T -> E`` and
    uneven routing costs nothing more than uniform routing under this curve (the sum is linear in
    the ``x_i``). ``f`` scales the whole expert term, fixed part included, as it did when it was
    measured: :data:`EPLB_RESIDUAL_SKEW` is a whole-step slowdown taken as a lower bound of the
    busiest rank's max/mean, with no separate measurement of how the per-expert fixed part splits
    over ranks. Taking ``f`` off the fixed part (``f n k + h T``) moves four TensorRT-LLM DEP
    throughput rows of tests/validation/test_qwen3_throughput.py from +13-20% to +31-43%: the
    measured factor is then too small, which a lower bound allows. Zero for a dense model.
    """
    n = np.asarray(tokens, dtype=float)
    if not shape.experts:
        return 0.0 * n, 0.0 * n
    touched = expected_experts_touched(n, shape.experts, shape.top_k, shape.expert_shares)
    token_equivalents = load_factor * (
        n * shape.top_k + lay.expert_half_saturation_tokens * touched
    )
    depth_compute, depth_weight_read = expert_depth_factors(shape, lay)
    compute_s = (
        depth_compute
        * token_equivalents
        * shape.expert_flops_per_token
        / (lay.chips * lay.linear_peak_flops_per_s * lay.expert_efficiency)
    )
    weight_bytes = touched * shape.expert_weight_bytes / lay.chips
    if not lay.gemm_k_block_latency_s:
        gemm_bytes, _ = expert_activation_bytes(n, load_factor, shape, lay)
        memory_s = (depth_weight_read * weight_bytes + gemm_bytes) / lay.memory_bytes_per_s
        return compute_s, memory_s
    # each GEMM's weight read and rows against its own K loop (expert_k_loop_floor_s); where
    # neither floor binds the sum is the expression above
    gate_up_bytes, down_bytes, _ = expert_activation_bytes(n, load_factor, shape, lay, split=True)
    depth_gate_up, depth_down = _expert_weight_read_depths(shape, lay)
    floor_gate_up, floor_down = expert_k_loop_floor_s(n, shape, lay)
    memory_s = np.maximum(
        (2.0 / 3.0 * depth_gate_up * weight_bytes + gate_up_bytes) / lay.memory_bytes_per_s,
        floor_gate_up,
    ) + np.maximum(
        (1.0 / 3.0 * depth_down * weight_bytes + down_bytes) / lay.memory_bytes_per_s,
        floor_down,
    )
    return compute_s, memory_s


@_per_layout
def _expert_weight_read_depths(shape: ModelShape, lay: LayoutNumbers) -> tuple[float, float]:
    """The gate-up and down GEMMs' weight-read multipliers for their depths, ``1 / d_m(h)`` and
    ``1 / d_m(I_s)`` (:func:`expert_depth_factors` weighs them 2 : 1 into one) [-]; memoized
    on the two objects (:func:`_per_layout`)."""
    h = float(shape.hidden_size)
    i_s = sliced_intermediate(shape, lay)
    half = lay.expert_memory_half_depth_elements
    return 1.0 / gemm_depth_efficiency(h, half), 1.0 / gemm_depth_efficiency(i_s, half)


#: [elements] depth of one K block of the fused-MoE kernels' tile loop: the 128 x 128 blocks of
#: block-scaled FP8 and the Triton configs' ``BLOCK_SIZE_K`` (SGLang's and vLLM's ``fused_moe``).
GEMM_K_BLOCK_ELEMENTS = 128


def expert_k_loop_floor_s(tokens, shape: ModelShape, lay: LayoutNumbers):
    """The least time each of the routed experts' two grouped GEMMs takes in a step, whatever
    its bytes, as ``(gate-up, down)``: each runs its K loop block after block [s].

    Notes
    -----
    A tile of a grouped GEMM walks its reduction dimension ``K`` in blocks of
    :data:`GEMM_K_BLOCK_ELEMENTS`; at decode sizes few tiles are in flight (at one token, the
    ``k`` touched experts times a few column tiles, against 132 SMs on Hopper) and each block
    waits on its loads, so a GEMM takes ``ceil(K / 128) t_b`` however few bytes it reads: the
    gate-up GEMM reduces over the hidden size ``h``, the down GEMM over the sliced intermediate
    ``I_s``, once per MoE layer. ``t_b`` is :attr:`LayoutNumbers.gemm_k_block_latency_s`
    (measured: benchmarks/gpu_fused_moe.py, FP8 blocks; a BF16 block, twice the bytes, is
    taken at the same latency). Each bounds its GEMM's weight read and rows from below
    (:func:`routed_expert_s`: where the bytes take longer, they decide); more tiles than SMs
    (several waves) are not counted, since the bytes decide there. Under two-batch overlap each
    micro-batch runs its own GEMMs and pays it (the step's latency floor, by contrast, is paid
    once). Zeros without tokens, for a dense model or without a measured ``t_b``.
    """
    n = np.asarray(tokens, dtype=float)
    if not shape.experts or not shape.expert_intermediate_size or not lay.gemm_k_block_latency_s:
        return 0.0 * n, 0.0 * n
    i_s = sliced_intermediate(shape, lay)
    per_block = np.where(n > 0, shape.moe_layers * lay.gemm_k_block_latency_s, 0.0)
    return (
        math.ceil(shape.hidden_size / GEMM_K_BLOCK_ELEMENTS) * per_block,
        math.ceil(i_s / GEMM_K_BLOCK_ELEMENTS) * per_block,
    )


def expert_activation_bytes(
    tokens, load_factor, shape: ModelShape, lay: LayoutNumbers, split: bool = False
):
    """Activation bytes the routed experts move through one chip's memory in a step, all MoE
    layers: ``(in the two grouped GEMMs, in the kernels between and after them)`` [bytes].

    Parameters
    ----------
    tokens : [tokens] ``n``, tokens in the step over the whole instance.
    load_factor : [-] ``f``, the busiest expert-parallel rank's assignments over the mean.
    shape, lay : the model's and the layout's numbers.

    Notes
    -----
    Each rank runs ``a = f n k / e`` (token, expert) assignments, each expert sliced ``s = N / e``
    ways by tensor parallelism, so an expert's intermediate is ``I_s = I / s`` wide on a rank.
    Per assignment and layer the fused-MoE pipeline (as SGLang's and vLLM's ``fused_moe``: gate-up
    grouped GEMM, SiLU-and-multiply, down grouped GEMM writing one ``h``-row per assignment, then
    a sum over the ``k`` experts of each token) reads and writes at least:

    - gate-up GEMM: its input row ``h b_in`` and its output ``2 I_s b_o``;
    - down GEMM: its input ``I_s b_in`` and its output ``h b_o``;
    - between and after them: the activation reads ``2 I_s b_o`` and writes ``I_s b_in``, the sum
      reads ``h b_o`` per assignment and writes ``h b_o`` per token of the rank's attention group.

    ``b_in`` is :attr:`LayoutNumbers.expert_input_bytes_per_element`, ``b_o`` the BF16
    ``activation_bytes``. This is compulsory traffic (every byte once; a cache can only hold a
    step's rows when they are small, where the weight read dominates anyway), with no fitted
    constant. With ``split`` the GEMMs' bytes come as the gate-up's and the down's:
    ``(gate-up, down, between)``. Tensor parallelism slices the weights and FLOPs ``s`` ways but not the ``h``-wide
    rows: every rank reads and writes the whole hidden state of every assignment, so at ``s = 8``
    the rows' bytes are comparable to the FLOPs (arithmetic intensity about
    ``6 h I_s / (h (b_in + 3 b_o) + ...)`` falls under the chip's ridge point), which is why the
    expert term grows with the slicing. The GEMMs' bytes share a roofline with their FLOPs
    (:func:`routed_expert_s`); the others are memory-bound kernels of their own
    (:func:`expert_elementwise_s`). Zero for a dense model or without ``I``.
    """
    n = np.asarray(tokens, dtype=float)
    if not shape.experts or not shape.expert_intermediate_size:
        return (0.0 * n, 0.0 * n, 0.0 * n) if split else (0.0 * n, 0.0 * n)
    b_in = lay.expert_input_bytes_per_element
    b_o = lay.activation_bytes
    h = float(shape.hidden_size)
    i_s = sliced_intermediate(shape, lay)
    a = load_factor * n * shape.top_k / lay.expert_parallel
    between = (
        a * (i_s * (2.0 * b_o + b_in) + h * b_o) + tokens_per_attention_group(n, lay) * h * b_o
    )
    if split:
        gate_up, down = a * (h * b_in + 2.0 * i_s * b_o), a * (i_s * b_in + h * b_o)
        return shape.moe_layers * gate_up, shape.moe_layers * down, shape.moe_layers * between
    gemm = a * (h * (b_in + b_o) + i_s * (2.0 * b_o + b_in))
    return shape.moe_layers * gemm, shape.moe_layers * between


def expert_elementwise_s(tokens, load_factor, shape: ModelShape, lay: LayoutNumbers):
    """The routed experts' memory-bound kernels between and after the grouped GEMMs
    (activation, sum over the ``k`` experts): ``(0, memory)`` per chip [s]
    (:func:`expert_activation_bytes`)."""
    _, between = expert_activation_bytes(tokens, load_factor, shape, lay)
    return 0.0 * between, between / lay.memory_bytes_per_s


def roofline_split(*kernels):
    """Sum kernel groups' ``(compute, memory)`` times where each roofline is bound [s].

    Returns ``(compute_s, memory_s)``: each group adds its compute time to the first when it is
    compute-bound (``t_c >= t_m``), its memory time to the second otherwise. Several groups of
    scalars (one step, a decode step's working batch, say) are picked without arrays: the same
    values added in the same order, as numpy's scalars.
    """
    scalars = len(kernels) > 1
    for c, m in kernels:
        if getattr(c, "ndim", 0) or getattr(m, "ndim", 0):
            scalars = False
            break
    if scalars:
        compute_s = memory_s = None
        for c, m in kernels:
            cb, mb = (c, 0.0) if c >= m else (0.0, m if c < m else 0.0)
            compute_s = cb if compute_s is None else compute_s + cb
            memory_s = mb if memory_s is None else memory_s + mb
        return np.float64(compute_s), np.float64(memory_s)
    compute_s = memory_s = None
    for c, m in kernels:
        cb = np.where(c >= m, c, 0.0)
        mb = np.where(c < m, m, 0.0)
        compute_s = cb if compute_s is None else compute_s + cb
        memory_s = mb if memory_s is None else memory_s + mb
    return compute_s, memory_s


def tensor_parallel_allreduce_s(tokens, shape: ModelShape, lay: LayoutNumbers):
    """The step's tensor-parallel all-reduces over the attention group's ``t`` ranks [s].

    Notes
    -----
    Two ring all-reduces per layer (after attention and after the FFN, Megatron-style), one per
    layer when the experts are expert-parallel (the FFN's reduction is the combine all-to-all);
    a ring that spans nodes runs at its NIC hops and pays the scale-out alpha
    (:func:`~pddplan.models.collectives.ring_link_bytes_per_s`); inside a node each of the bulk
    protocol's ``2 (t - 1)`` ring steps pays the scale-up step latency (none is modelled for a
    ring that spans nodes).
    """
    n_d = tokens_per_attention_group(tokens, lay)
    ring_bw = ring_link_bytes_per_s(
        lay.attention_tp, lay.ranks_per_node, lay.scaleup_bytes_per_s, lay.scaleout_bytes_per_s
    )
    spans = lay.attention_tp > lay.ranks_per_node
    latency_s = lay.scaleout_latency_s if spans else lay.scaleup_latency_s
    step_s = 0.0 if spans else lay.scaleup_step_latency_s
    allreduces = shape.layers if lay.expert_parallel > 1 else ALLREDUCES_PER_LAYER * shape.layers
    message_bytes = n_d * shape.hidden_size * lay.activation_bytes
    return allreduces * allreduce_time(message_bytes, lay.attention_tp, ring_bw, latency_s, step_s)


def expert_alltoall_s(
    tokens, load_factor, shape: ModelShape, lay: LayoutNumbers, low_latency=False
):
    """The step's expert-parallel dispatch and combine all-to-alls, all MoE layers [s].

    Parameters
    ----------
    tokens : [tokens] tokens in the step over the whole instance.
    load_factor : [-] the busiest rank's traffic over the mean (:func:`expert_load_factor`).
    shape, lay : the model's and the layout's numbers.
    low_latency : bool, DeepEP's low-latency kernels (decode:
        :func:`~pddplan.models.collectives.low_latency_alltoall_time_s`) rather than the normal
        ones (prefill: :func:`~pddplan.models.collectives.alltoall_time_s`).

    Notes
    -----
    One dispatch and one combine per MoE layer when ``e > 1``, zero otherwise; the alpha is the
    scale-out one when the instance spans nodes.
    """
    n = np.asarray(tokens, dtype=float)
    if lay.expert_parallel <= 1:
        return 0.0 * n
    spans = lay.chips > lay.ranks_per_node
    latency_s = lay.scaleout_latency_s if spans else lay.scaleup_latency_s
    a2a_of = low_latency_alltoall_time if low_latency else alltoall_time

    def one(bytes_per_element):
        return a2a_of(
            n / lay.chips,
            shape.hidden_size * bytes_per_element,
            shape.top_k,
            lay.expert_parallel,
            lay.ranks_per_node,
            lay.scaleup_bytes_per_s,
            lay.scaleout_bytes_per_s,
            latency_s,
            load_factor,
        )

    return shape.moe_layers * (
        one(lay.dispatch_bytes_per_element) + one(lay.combine_bytes_per_element)
    )


def step_latency_s(tokens, shape: ModelShape, lay: LayoutNumbers):
    """Kernel-latency floor and fixed overhead of one step, ``L t_layer + L_moe t_r + t_0`` [s].

    ``t_layer`` is a layer's kernels' floor, ``t_r`` the kernels a fused-MoE call runs beyond a
    dense FFN's (routing top-k, alignment, sum over the experts; its GEMMs, quantization and
    activation take the dense FFN's place in ``t_layer``), once per MoE layer ``L_moe`` where
    the experts are not expert-parallel: under expert parallelism the dispatch and combine
    kernels take the alignment's and the sum's place, with their own fixed cost
    (:func:`expert_alltoall_s`). Paid once a step, under two-batch overlap too.
    """
    n = np.asarray(tokens, dtype=float)
    fused = shape.experts and lay.expert_parallel == 1
    moe = shape.moe_layers * lay.moe_routing_latency_s if fused else 0.0
    return shape.layers * lay.layer_latency_s + moe + lay.step_overhead_s + 0.0 * n


def two_batch_overlap(whole: StepParts, half: StepParts, overlap_gain) -> StepParts:
    """The step under two-batch overlap, from the step without it and its half-batch step [s].

    Parameters
    ----------
    whole : the step of ``n`` tokens without overlap.
    half : the step of ``n / 2`` tokens without overlap (one micro-batch).
    overlap_gain : [-] ``g``, the most overlap speeds the step up (:data:`TWO_BATCH_OVERLAP_GAIN`).

    Notes
    -----
    The micro-batches' compute and communication run side by side, ideally in
    ``2 max(t_cm(n/2), t_x(n/2))`` [5]_; measured overlap falls short of that, so the busy time
    is the longer of the ideal and the no-overlap busy time over ``1 + g`` [6]_. Compute, memory
    and communication are scaled alike to it; the latency floor stays.
    """
    h_work = half.compute_s + half.memory_s
    ideal = 2.0 * np.maximum(h_work, half.communication_s)
    w_work = whole.compute_s + whole.memory_s
    busy = np.maximum(ideal, (w_work + whole.communication_s) / (1.0 + overlap_gain))
    scale = busy / np.maximum(w_work + whole.communication_s, 1e-30)
    return StepParts(
        compute_s=whole.compute_s * scale,
        memory_s=whole.memory_s * scale,
        communication_s=whole.communication_s * scale,
        latency_s=whole.latency_s,
    )


def layout_step_parts_s(
    tokens,
    lm_head_tokens,
    context_token_pairs,
    kv_read_bytes_per_chip,
    shape: ModelShape,
    lay: LayoutNumbers,
    low_latency_alltoall=False,
) -> StepParts:
    """One forward step of an instance under a parallel layout, split by what bounds it [s].

    Parameters
    ----------
    tokens : [tokens] ``n``, tokens in the step over the whole instance (spread evenly over the
        data-parallel attention groups).
    lm_head_tokens : [tokens] tokens whose logits are computed (every token in decode, the last
        token of each sequence in prefill).
    context_token_pairs : [-] (query, key) pairs attended in the step, whole instance.
    kv_read_bytes_per_chip : [bytes] KV cache each chip reads in the step.
    shape : the model's numbers (:class:`ModelShape`).
    lay : the chips' and the layout's numbers (:class:`LayoutNumbers`).
    low_latency_alltoall : bool, see :func:`expert_alltoall_s`.

    Returns
    -------
    StepParts

    Notes
    -----
    The non-expert GEMMs (:func:`dense_gemm_s`), attention (:func:`attention_s`), the routed
    experts' grouped GEMMs (:func:`routed_expert_s`) and their memory-bound kernels between and
    after them (:func:`expert_elementwise_s`) are each their own roofline (:func:`roofline_split`);
    communication is the tensor-parallel all-reduces (:func:`tensor_parallel_allreduce_s`) plus
    the expert-parallel all-to-alls (:func:`expert_alltoall_s`), both carrying the busiest
    expert rank's load factor ``f`` (:func:`expert_load_factor`) where it applies; latency is
    :func:`step_latency_s`. Without overlap the parts add; with it, :func:`two_batch_overlap`.

    References
    ----------
    .. [4] Raab and Steger, "Balls into bins: a simple and tight analysis", RANDOM 1998.
    .. [5] DeepSeek-AI, "Day 6: DeepSeek-V3/R1 inference system overview" (2025): dual
       micro-batch overlap hides the expert-parallel all-to-all under compute.
    .. [6] SGLang team, "Deploying DeepSeek with PD disaggregation and large-scale expert
       parallelism on 96 H100 GPUs", LMSYS blog, 2025-05-05: two-batch overlap raises prefill
       throughput by 27-35%.
    """
    n, lm, pairs, kv = (
        np.asarray(a, dtype=float)
        for a in (tokens, lm_head_tokens, context_token_pairs, kv_read_bytes_per_chip)
    )
    if lay.overlap:
        whole = _step_parts_s(n, lm, pairs, kv, shape, lay, low_latency_alltoall)
        half = _step_parts_s(
            n / 2.0, lm / 2.0, pairs / 2.0, kv / 2.0, shape, lay, low_latency_alltoall
        )
        return two_batch_overlap(whole, half, lay.overlap_gain)
    return _step_parts_s(n, lm, pairs, kv, shape, lay, low_latency_alltoall)


def _step_parts_s(n, lm, pairs, kv, shape, lay, low_latency_alltoall) -> StepParts:
    """:func:`layout_step_parts_s` without two-batch overlap: the parts add."""
    load_factor = expert_load_factor(n, shape, lay)
    compute_s, memory_s = roofline_split(
        dense_gemm_s(n, lm, shape, lay),
        attention_s(pairs, kv, shape, lay),
        routed_expert_s(n, load_factor, shape, lay),
        expert_elementwise_s(n, load_factor, shape, lay),
    )
    communication_s = tensor_parallel_allreduce_s(n, shape, lay) + expert_alltoall_s(
        n, load_factor, shape, lay, low_latency_alltoall
    )
    return StepParts(compute_s, memory_s, communication_s, step_latency_s(n, shape, lay))


def chunked_prefill_time_s(uncached_tokens, cached_tokens, chunk_size_tokens, step_time_of):
    """Chunked prefill of ``U`` uncached tokens over a cached prefix of ``P`` tokens [s].

    Parameters
    ----------
    uncached_tokens, cached_tokens : [tokens] ``U`` and ``P`` (arrays broadcast).
    chunk_size_tokens : [tokens] ``C``.
    step_time_of : callable ``(tokens, lm_head_tokens, pairs, context_tokens) -> [s]``, the time
        of one step of ``tokens`` new tokens attending ``pairs`` (query, key) pairs over a context
        of ``context_tokens`` (KV read), with ``lm_head_tokens`` logits computed.

    Notes
    -----
    ``U`` runs as ``floor(U / C)`` full chunks and one tail chunk of ``U mod C`` tokens; chunk
    ``j`` attends to ``P + j C`` earlier tokens plus its causal part, and only the last chunk
    computes the LM head (one token: the logits of the first output token). Each chunk is one
    step, so the tail chunk pays a full weight read and the fixed overhead while running at the
    poor GEMM efficiency of its few tokens: the tail-chunk penalty [2]_.
    """
    u = np.asarray(uncached_tokens, dtype=float)
    p = np.asarray(cached_tokens, dtype=float)
    c = float(chunk_size_tokens)
    u, p = np.broadcast_arrays(u, p)
    full = np.floor(u / c)
    tail = u - full * c
    total = np.zeros(u.shape)
    max_full = int(full.max()) if full.size else 0
    if max_full:
        # every full chunk j in one step call, chunks on a leading axis: the step is elementwise
        # in its arrays (its token count, c, is the same scalar), so each chunk's time is the
        # one a call of its own gives; the sum keeps the chunks' order
        j = np.arange(max_full, dtype=float).reshape((max_full,) + (1,) * u.ndim)
        ctx = p + j * c
        last = np.where((full == j + 1.0) & (tail == 0), 1.0, 0.0)
        t = np.broadcast_to(
            step_time_of(c, last, causal_context_sum_tokens(c, ctx), ctx + c), ctx.shape
        )
        for k in range(max_full):
            total = total + np.where(full > k, t[k], 0.0)
    ctx = p + full * c
    t_tail = step_time_of(
        np.maximum(tail, 1.0), 1.0, causal_context_sum_tokens(tail, ctx), ctx + tail
    )
    total = total + np.where(tail > 0, t_tail, 0.0)
    return total[()] if total.ndim == 0 else total
