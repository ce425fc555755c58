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

ALLREDUCES_PER_LAYER = 2  # after attention and after the FFN (Megatron-style TP)


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
