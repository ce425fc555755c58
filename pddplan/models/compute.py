"""Compute: prefill (chunked, over a cached prefix), decode steps, and MD's extend pass.

A step's time is a roofline with derates: ``max(compute, memory) + communication + overhead``,
where compute runs at a GEMM efficiency that grows with the tokens in the step. All functions
are pure and broadcast over numpy arrays.

References
----------
.. [1] Williams, Waterman, Patterson, "Roofline: an insightful visual performance model", 2009.
.. [2] Agrawal et al., "Sarathi-Serve: taming throughput-latency tradeoff in LLM inference",
   OSDI 2024 (chunked prefill).
.. [3] Patarasuk and Yuan, "Bandwidth optimal all-reduce algorithms for clusters", 2009:
   a ring all-reduce moves ``2 (n - 1) / n`` of the message over each rank's link.
"""

from __future__ import annotations

import numpy as np

from pddplan.models.architecture import causal_context_sum_tokens
from pddplan.models.collectives import allreduce_time_s as allreduce_time
from pddplan.models.collectives import alltoall_time_s as alltoall_time
from pddplan.models.collectives import low_latency_alltoall_time_s as low_latency_alltoall_time

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


def gemm_efficiency(tokens, compute_efficiency, half_saturation_tokens):
    """Fraction of peak compute reached by a step of ``tokens`` tokens [-].

    Notes
    -----
    ``eta(n) = eta_max * n / (n + n_half)``: small steps (decode, tail chunks) underuse the
    matrix units; large ones approach the measured large-GEMM efficiency ``eta_max``.
    """
    n = np.asarray(tokens, dtype=float)
    return compute_efficiency * n / (n + half_saturation_tokens)


def allreduce_time_s(message_bytes, tensor_parallel, scaleup_bytes_per_s_bidir, scaleup_efficiency):
    """Ring all-reduce time of one message over ``tp`` ranks [s].

    Parameters
    ----------
    message_bytes : [bytes] size of the reduced tensor.
    tensor_parallel : [-] ranks.
    scaleup_bytes_per_s_bidir : [bytes/s] per-chip scale-up bandwidth, both directions added.
    scaleup_efficiency : [-] achieved fraction of the unidirectional bandwidth.

    Notes
    -----
    ``t = 2 (tp - 1) / tp * m / (B_bidir / 2 * eta)`` [3]_; zero for ``tp = 1``.
    """
    tp = np.asarray(tensor_parallel, dtype=float)
    uni = np.asarray(scaleup_bytes_per_s_bidir, dtype=float) / 2.0 * scaleup_efficiency
    return 2.0 * (tp - 1.0) / tp * np.asarray(message_bytes, dtype=float) / uni


def step_time_s(
    tokens,
    context_token_pairs,
    *,
    linear_flops_per_token,
    attention_flops_per_pair,
    weight_read_bytes_per_chip,
    kv_read_bytes_per_chip,
    tensor_parallel,
    peak_flops_per_s,
    compute_efficiency,
    half_saturation_tokens,
    memory_bytes_per_s,
    memory_efficiency,
    comm_bytes_per_token,
    scaleup_bytes_per_s_bidir,
    scaleup_efficiency,
    overhead_s,
):
    """Time of one forward step of an instance [s].

    Parameters
    ----------
    tokens : [tokens] tokens processed in the step (batch for decode, chunk for prefill).
    context_token_pairs : [-] (query, key) pairs attended in the step.
    linear_flops_per_token : [FLOP] ``2 N_active`` (weights times two).
    attention_flops_per_pair : [FLOP] attention FLOPs per (query, key) pair, all layers.
    weight_read_bytes_per_chip : [bytes] weights each chip streams in the step.
    kv_read_bytes_per_chip : [bytes] KV each chip reads in the step.
    tensor_parallel : [-] chips sharing the work.
    peak_flops_per_s : [FLOP/s] dense peak of one chip at the compute dtype.
    compute_efficiency, half_saturation_tokens : GEMM efficiency curve (see
        :func:`gemm_efficiency`).
    memory_bytes_per_s : [bytes/s] one chip's memory bandwidth; ``memory_efficiency`` [-].
    comm_bytes_per_token : [bytes] all-reduced activation bytes per token, all layers.
    scaleup_bytes_per_s_bidir, scaleup_efficiency : see :func:`allreduce_time_s`.
    overhead_s : [s] fixed per-step cost.

    Notes
    -----
    The linear layers (GEMMs over the weights) and attention (over the KV cache) run as
    separate kernels one after the other, so each is its own roofline and the two add:

    ``t = max(F_lin / (tp P eta(n)), W / (B eta_m)) + max(F_att / (tp P eta(n)), K / (B eta_m))
    + AR(n c) + t_0``.
    """
    n = np.asarray(tokens, dtype=float)
    eff = gemm_efficiency(np.maximum(n, 1e-9), compute_efficiency, half_saturation_tokens)
    flops_per_s = tensor_parallel * peak_flops_per_s * eff
    bytes_per_s = memory_bytes_per_s * memory_efficiency
    linear_s = np.maximum(
        n * linear_flops_per_token / flops_per_s, weight_read_bytes_per_chip / bytes_per_s
    )
    attn_flops = np.asarray(context_token_pairs, dtype=float) * attention_flops_per_pair
    attention_s = np.maximum(attn_flops / flops_per_s, kv_read_bytes_per_chip / bytes_per_s)
    comm_s = allreduce_time_s(
        n * comm_bytes_per_token, tensor_parallel, scaleup_bytes_per_s_bidir, scaleup_efficiency
    )
    return linear_s + attention_s + comm_s + overhead_s


def prefill_time_s(
    uncached_tokens,
    cached_tokens,
    chunk_size_tokens,
    *,
    kv_bytes_per_token_per_chip,
    **step,
):
    """Chunked prefill of ``U`` uncached tokens on top of a cached prefix of ``P`` tokens [s].

    Parameters
    ----------
    uncached_tokens : [tokens] ``U``, tokens to compute.
    cached_tokens : [tokens] ``P``, prefix already in the cache (read, not recomputed).
    chunk_size_tokens : [tokens] ``C``, chunked-prefill chunk size.
    kv_bytes_per_token_per_chip : [bytes] KV each chip reads per token of context.
    **step : the keyword arguments of :func:`step_time_s` except the per-step KV read.

    Notes
    -----
    ``U`` runs as ``floor(U / C)`` full chunks and one tail chunk of ``U mod C`` tokens; chunk
    ``j`` attends to ``P + j C`` earlier tokens plus its causal part. Each chunk is one step of
    :func:`step_time_s`, so the tail chunk pays a full weight read and the fixed overhead while
    running at the poor GEMM efficiency of its few tokens: the tail-chunk penalty [2]_.
    """
    u = np.asarray(uncached_tokens, dtype=float)
    p = np.asarray(cached_tokens, dtype=float)
    c = float(chunk_size_tokens)
    u, p = np.broadcast_arrays(u, p)
    full = np.floor(u / c)
    tail = u - full * c
    total = np.zeros(u.shape)
    max_full = int(full.max()) if full.size else 0
    for j in range(max_full):
        active = full > j
        ctx = p + j * c
        t = step_time_s(
            c,
            causal_context_sum_tokens(c, ctx),
            kv_read_bytes_per_chip=(ctx + c) * kv_bytes_per_token_per_chip,
            **step,
        )
        total = total + np.where(active, t, 0.0)
    ctx = p + full * c
    t_tail = step_time_s(
        np.maximum(tail, 1.0),
        causal_context_sum_tokens(tail, ctx),
        kv_read_bytes_per_chip=(ctx + tail) * kv_bytes_per_token_per_chip,
        **step,
    )
    total = total + np.where(tail > 0, t_tail, 0.0)
    return total[()] if total.ndim == 0 else total


def decode_step_time_s(
    batch,
    context_tokens,
    *,
    dense_weight_bytes_per_chip,
    expert_bytes_per_chip,
    experts,
    top_k,
    kv_bytes_per_token_per_chip,
    kv_bytes_per_sequence_per_chip=0.0,
    **step,
):
    """One decode step of ``b`` sequences at context ``c`` [s].

    Parameters
    ----------
    batch : [-] sequences in the step, one new token each.
    context_tokens : [tokens] context length of each sequence.
    dense_weight_bytes_per_chip : [bytes] non-expert weights per chip (read every step).
    expert_bytes_per_chip : [bytes] one routed expert's weights (all MoE layers) per chip.
    experts, top_k : routed experts and experts per token (``experts = 0`` for dense models).
    kv_bytes_per_token_per_chip : [bytes] KV read per context token per chip.
    kv_bytes_per_sequence_per_chip : [bytes] per-sequence constant read each step.

    Notes
    -----
    Weights read: dense part plus the experts the batch touches,
    ``E [1 - (1 - k/E)^b]`` (see :func:`~pddplan.models.architecture.expected_experts_touched`);
    KV read: ``b (c k + s)``; attention pairs ``b c``.
    """
    b = np.asarray(batch, dtype=float)
    c = np.asarray(context_tokens, dtype=float)
    if experts:
        touched = experts * (1.0 - (1.0 - top_k / experts) ** b)
    else:
        touched = 0.0 * b
    weights = dense_weight_bytes_per_chip + touched * expert_bytes_per_chip
    kv = b * (c * kv_bytes_per_token_per_chip + kv_bytes_per_sequence_per_chip)
    return step_time_s(
        b, b * c, weight_read_bytes_per_chip=weights, kv_read_bytes_per_chip=kv, **step
    )


def max_batch_at_step_time(step_time_of_batch, target_s, max_batch):
    """Largest integer batch ``b <= max_batch`` whose step time is within ``target_s`` [-].

    ``step_time_of_batch`` is a callable mapping an array of batches to step times; step time
    must not fall as the batch grows. Returns 0 when even ``b = 1`` misses the target.
    """
    hi = int(max_batch)
    if hi < 1:
        return 0
    b = np.arange(1, hi + 1, dtype=float)
    ok = np.asarray(step_time_of_batch(b)) <= target_s
    if not ok[0]:
        return 0
    return int(np.argmin(ok)) if not ok.all() else hi


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


def layout_step_parts_s(
    tokens,
    lm_head_tokens,
    context_token_pairs,
    kv_read_bytes_per_chip,
    *,
    chips,
    attention_tp,
    expert_parallel,
    ranks_per_node,
    dense_flops_per_token,
    lm_head_flops_per_token,
    dense_weight_bytes,
    expert_flops_per_token,
    expert_weight_bytes,
    experts,
    top_k,
    moe_layers,
    layers,
    hidden_size,
    attention_flops_per_pair,
    linear_peak_flops_per_s,
    linear_efficiency,
    half_saturation_tokens,
    attention_peak_flops_per_s,
    attention_efficiency,
    memory_bytes_per_s,
    activation_bytes,
    dispatch_bytes_per_element,
    combine_bytes_per_element,
    scaleup_bytes_per_s,
    scaleout_bytes_per_s,
    scaleup_latency_s,
    scaleout_latency_s,
    expert_skew,
    layer_latency_s,
    step_overhead_s,
    overlap=False,
    overlap_gain=TWO_BATCH_OVERLAP_GAIN,
    expert_efficiency=None,
    expert_half_saturation_tokens=None,
    low_latency_alltoall=False,
):
    """One forward step of an instance under a parallel layout, split by what bounds it [s].

    Parameters
    ----------
    tokens : [tokens] ``n``, tokens in the step over the whole instance (spread evenly over the
        data-parallel attention groups).
    lm_head_tokens : [tokens] tokens whose logits are computed (every token in decode, the last
        token of each sequence in prefill).
    context_token_pairs : [-] (query, key) pairs attended in the step, whole instance.
    kv_read_bytes_per_chip : [bytes] KV cache each chip reads in the step.
    chips : [-] ``N``, chips in the instance.
    attention_tp : [-] ``t``, tensor-parallel width of attention and the other non-expert
        weights (``N / t`` data-parallel attention groups, each holding those weights).
    expert_parallel : [-] ``e``, ranks the routed experts are spread over (1: every expert is
        sliced ``N`` ways by tensor parallelism).
    ranks_per_node : [-] chips joined by the scale-up fabric.
    dense_flops_per_token : [FLOP] ``2 N_dense`` per token, non-expert weights without the LM
        head (attention projections, dense FFN layers, shared experts, router).
    lm_head_flops_per_token : [FLOP] ``2 V h``.
    dense_weight_bytes : [bytes] non-expert weights read each step, one replica (the input
        embedding table is a lookup and is not read whole).
    expert_flops_per_token : [FLOP] ``2 N_expert``, one routed expert over all MoE layers.
    expert_weight_bytes : [bytes] one routed expert over all MoE layers.
    experts, top_k : routed experts and experts per token (0 and 0 for a dense model).
    moe_layers, layers, hidden_size : model shape.
    attention_flops_per_pair : [FLOP] per (query, key) pair, all layers.
    linear_peak_flops_per_s : [FLOP/s] one chip's dense peak at the weight precision.
    linear_efficiency, half_saturation_tokens : GEMM efficiency curve (:func:`gemm_efficiency`),
        taken at the rows each GEMM sees: tokens per attention group for the non-expert weights,
        tokens per expert for the experts.
    attention_peak_flops_per_s : [FLOP/s] one chip's peak at the attention precision;
        ``attention_efficiency`` [-] the fraction attention kernels reach.
    memory_bytes_per_s : [bytes/s] one chip's achieved memory bandwidth.
    activation_bytes : [bytes] bytes of one activation element (all-reduce payload).
    dispatch_bytes_per_element, combine_bytes_per_element : [bytes] all-to-all payload per
        hidden element (FP8 with block scales for dispatch, BF16 for combine).
    scaleup_bytes_per_s, scaleout_bytes_per_s : [bytes/s] achieved one-direction bandwidths.
    scaleup_latency_s, scaleout_latency_s : [s] alpha of one collective on each fabric.
    expert_skew : [-] see :func:`expert_imbalance`.
    layer_latency_s : [s] kernel-latency floor of one layer; ``step_overhead_s`` [s] per step
        (sampling, scheduling).
    overlap : bool, two-batch overlap: the step runs as two micro-batches of ``n / 2`` whose
        communication hides under each other's compute.
    overlap_gain : [-] the most two-batch overlap speeds a step up over the same step without
        it (:data:`TWO_BATCH_OVERLAP_GAIN`, measured).
    expert_efficiency, expert_half_saturation_tokens : the efficiency curve of the routed
        experts' grouped GEMMs (:func:`gemm_efficiency` at the tokens per expert); None: the
        linear curve.
    low_latency_alltoall : bool, dispatch and combine with DeepEP's low-latency kernels (decode:
        :func:`~pddplan.models.collectives.low_latency_alltoall_time_s`) rather than the normal
        ones (prefill: :func:`~pddplan.models.collectives.alltoall_time_s`).

    Returns
    -------
    dict of arrays [s]: ``compute_s`` and ``memory_s`` (each kernel group counted where its
    roofline is bound), ``communication_s``, ``latency_s`` and ``total_s``.

    Notes
    -----
    Per chip, with ``d = N / t`` attention groups, ``n_d = n / d`` tokens per group, tokens per
    expert ``m = n k / E`` and the busiest expert rank's load factor ``f``
    (:func:`expert_imbalance`):

    - non-expert GEMMs: ``max((n_d F_d + l_d F_lm) / (t P eta(n_d)), W_d / (t B))``;
    - experts: ``max(f n k F_e / (N P eta_e(m)), E (1 - (1 - k/E)^n) W_e / (N B))``, ``eta_e``
      the grouped-GEMM curve;
    - attention: ``max(F_att pairs / (N P_att eta_att), K / B)``;
    - communication: two ring all-reduces per layer over ``t`` (one per layer plus a dispatch
      and a combine all-to-all per MoE layer when ``e > 1``, the busiest rank's traffic ``f``
      times the mean);
    - latency: ``L t_layer + t_0``.

    Without overlap the parts add. With two-batch overlap the micro-batches' compute and
    communication run side by side, ideally in ``2 max(t_cm(n/2), t_x(n/2))`` [5]_; measured
    overlap falls short of that, so the step takes the longer of the ideal and the
    no-overlap step over ``1 + g`` (``g``: the measured gain, :data:`TWO_BATCH_OVERLAP_GAIN`) [6]_.

    References
    ----------
    .. [4] Raab and Steger, "Balls into bins: a simple and tight analysis", RANDOM 1998.
    .. [5] DeepSeek-AI, "Day 6: DeepSeek-V3/R1 inference system overview" (2025): dual
       micro-batch overlap hides the expert-parallel all-to-all under compute.
    .. [6] SGLang team, "Deploying DeepSeek with PD disaggregation and large-scale expert
       parallelism on 96 H100 GPUs", LMSYS blog, 2025-05-05: two-batch overlap raises prefill
       throughput by 27-35%.
    """
    n = np.asarray(tokens, dtype=float)
    lm = np.asarray(lm_head_tokens, dtype=float)
    pairs = np.asarray(context_token_pairs, dtype=float)
    kv = np.asarray(kv_read_bytes_per_chip, dtype=float)
    if overlap:
        args = (n, lm, pairs, kv)
        kw = dict(
            chips=chips,
            attention_tp=attention_tp,
            expert_parallel=expert_parallel,
            ranks_per_node=ranks_per_node,
            dense_flops_per_token=dense_flops_per_token,
            lm_head_flops_per_token=lm_head_flops_per_token,
            dense_weight_bytes=dense_weight_bytes,
            expert_flops_per_token=expert_flops_per_token,
            expert_weight_bytes=expert_weight_bytes,
            experts=experts,
            top_k=top_k,
            moe_layers=moe_layers,
            layers=layers,
            hidden_size=hidden_size,
            attention_flops_per_pair=attention_flops_per_pair,
            linear_peak_flops_per_s=linear_peak_flops_per_s,
            linear_efficiency=linear_efficiency,
            half_saturation_tokens=half_saturation_tokens,
            attention_peak_flops_per_s=attention_peak_flops_per_s,
            attention_efficiency=attention_efficiency,
            memory_bytes_per_s=memory_bytes_per_s,
            activation_bytes=activation_bytes,
            dispatch_bytes_per_element=dispatch_bytes_per_element,
            combine_bytes_per_element=combine_bytes_per_element,
            scaleup_bytes_per_s=scaleup_bytes_per_s,
            scaleout_bytes_per_s=scaleout_bytes_per_s,
            scaleup_latency_s=scaleup_latency_s,
            scaleout_latency_s=scaleout_latency_s,
            expert_skew=expert_skew,
            layer_latency_s=layer_latency_s,
            step_overhead_s=step_overhead_s,
            expert_efficiency=expert_efficiency,
            expert_half_saturation_tokens=expert_half_saturation_tokens,
            low_latency_alltoall=low_latency_alltoall,
        )
        whole = layout_step_parts_s(*args, **kw)
        half = layout_step_parts_s(*(a / 2.0 for a in args), **kw)
        h_work = half["compute_s"] + half["memory_s"]
        ideal = 2.0 * np.maximum(h_work, half["communication_s"])
        w_work = whole["compute_s"] + whole["memory_s"]
        busy = np.maximum(ideal, (w_work + whole["communication_s"]) / (1.0 + overlap_gain))
        scale = busy / np.maximum(w_work + whole["communication_s"], 1e-30)
        out = {k: whole[k] * scale for k in ("compute_s", "memory_s", "communication_s")}
        out["latency_s"] = whole["latency_s"]
        out["total_s"] = out["compute_s"] + out["memory_s"] + out["communication_s"]
        out["total_s"] = out["total_s"] + out["latency_s"]
        return out
    d = chips / attention_tp
    n_d = np.maximum(n / d, 1e-9)
    eff_d = gemm_efficiency(n_d, linear_efficiency, half_saturation_tokens)
    dense_c = (n_d * dense_flops_per_token + lm / d * lm_head_flops_per_token) / (
        attention_tp * linear_peak_flops_per_s * eff_d
    )
    dense_m = dense_weight_bytes / attention_tp / memory_bytes_per_s
    att_c = (
        pairs
        * attention_flops_per_pair
        / (chips * attention_peak_flops_per_s * attention_efficiency)
    )
    att_m = kv / memory_bytes_per_s
    imb = 1.0 + 0.0 * n
    if experts:
        per_expert = np.maximum(n * top_k / experts, 1e-9)
        eff_e = gemm_efficiency(
            per_expert,
            linear_efficiency if expert_efficiency is None else expert_efficiency,
            half_saturation_tokens
            if expert_half_saturation_tokens is None
            else expert_half_saturation_tokens,
        )
        imb = expert_imbalance(n * top_k / expert_parallel, expert_parallel, expert_skew)
        exp_c = imb * n * top_k * expert_flops_per_token / (chips * linear_peak_flops_per_s * eff_e)
        touched = experts * (1.0 - (1.0 - top_k / experts) ** n)
        exp_m = touched * expert_weight_bytes / chips / memory_bytes_per_s
    else:
        exp_c = exp_m = 0.0 * n
    compute_s = (
        np.where(dense_c >= dense_m, dense_c, 0.0)
        + np.where(att_c >= att_m, att_c, 0.0)
        + np.where(exp_c >= exp_m, exp_c, 0.0)
    )
    memory_s = (
        np.where(dense_c < dense_m, dense_m, 0.0)
        + np.where(att_c < att_m, att_m, 0.0)
        + np.where(exp_c < exp_m, exp_m, 0.0)
    )
    if attention_tp > ranks_per_node:
        ring_bw = min(scaleup_bytes_per_s, scaleout_bytes_per_s)
        ar_lat = scaleout_latency_s
    else:
        ring_bw = scaleup_bytes_per_s
        ar_lat = scaleup_latency_s
    if expert_parallel > 1:
        allreduces = layers
        a2a_lat = scaleout_latency_s if chips > ranks_per_node else scaleup_latency_s
        per_rank = n / chips
        a2a_of = low_latency_alltoall_time if low_latency_alltoall else alltoall_time
        a2a = moe_layers * (
            a2a_of(
                per_rank,
                hidden_size * dispatch_bytes_per_element,
                top_k,
                expert_parallel,
                ranks_per_node,
                scaleup_bytes_per_s,
                scaleout_bytes_per_s,
                a2a_lat,
                imb,
            )
            + a2a_of(
                per_rank,
                hidden_size * combine_bytes_per_element,
                top_k,
                expert_parallel,
                ranks_per_node,
                scaleup_bytes_per_s,
                scaleout_bytes_per_s,
                a2a_lat,
                imb,
            )
        )
    else:
        allreduces = ALLREDUCES_PER_LAYER * layers
        a2a = 0.0 * n
    comm_s = (
        allreduces
        * allreduce_time(n_d * hidden_size * activation_bytes, attention_tp, ring_bw, ar_lat)
        + a2a
    )
    latency_s = layers * layer_latency_s + step_overhead_s + 0.0 * n
    total = compute_s + memory_s + comm_s + latency_s
    return {
        "compute_s": compute_s,
        "memory_s": memory_s,
        "communication_s": comm_s,
        "latency_s": latency_s,
        "total_s": total,
    }


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
    As :func:`prefill_time_s`: ``floor(U / C)`` full chunks then a tail of ``U mod C``; only the
    last chunk computes the LM head (one token: the logits of the first output token).
    """
    u = np.asarray(uncached_tokens, dtype=float)
    p = np.asarray(cached_tokens, dtype=float)
    c = float(chunk_size_tokens)
    u, p = np.broadcast_arrays(u, p)
    full = np.floor(u / c)
    tail = u - full * c
    total = np.zeros(u.shape)
    max_full = int(full.max()) if full.size else 0
    for j in range(max_full):
        active = full > j
        ctx = p + j * c
        last = np.where((full == j + 1) & (tail == 0), 1.0, 0.0)
        t = step_time_of(c, last, causal_context_sum_tokens(c, ctx), ctx + c)
        total = total + np.where(active, t, 0.0)
    ctx = p + full * c
    t_tail = step_time_of(
        np.maximum(tail, 1.0), 1.0, causal_context_sum_tokens(tail, ctx), ctx + tail
    )
    total = total + np.where(tail > 0, t_tail, 0.0)
    return total[()] if total.ndim == 0 else total
