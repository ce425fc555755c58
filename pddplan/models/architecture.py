"""Parameter counts and FLOPs per token derived from a transformer's shape.

All functions are pure and broadcast over numpy arrays. Norm and bias parameters are ignored
(well under 0.1% of any model here).

References
----------
.. [1] Kaplan et al., "Scaling Laws for Neural Language Models", 2020: forward FLOPs per token
   ~ 2 N for N non-embedding parameters, plus attention terms linear in context length.
.. [2] DeepSeek-AI, "DeepSeek-V2/V3 technical reports": multi-head latent attention shapes.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

SWIGLU_MATRICES = 3  # gate, up and down projections of a SwiGLU FFN


def gqa_attention_params(hidden_size, heads, kv_heads, head_dim):
    """Parameters of one GQA attention block.

    Notes
    -----
    ``Q: h * H d``, ``K, V: h * H_kv d`` each, ``O: H d * h``.
    """
    h = np.asarray(hidden_size, dtype=float)
    return h * heads * head_dim * 2 + 2 * h * kv_heads * head_dim


def mla_attention_params(
    hidden_size, heads, kv_lora_rank, qk_rope_head_dim, qk_nope_head_dim, v_head_dim, q_lora_rank
):
    """Parameters of one multi-head latent attention block [2]_.

    Notes
    -----
    Query: ``h r_q + r_q H (d_nope + d_rope)`` with a low-rank query (``h H (d_nope+d_rope)``
    without one); KV down-projection ``h (r_kv + d_rope)``; KV up-projection
    ``r_kv H (d_nope + d_v)``; output ``H d_v h``.
    """
    h = np.asarray(hidden_size, dtype=float)
    qk = qk_nope_head_dim + qk_rope_head_dim
    if q_lora_rank:
        q = h * q_lora_rank + q_lora_rank * heads * qk
    else:
        q = h * heads * qk
    kv = h * (kv_lora_rank + qk_rope_head_dim) + kv_lora_rank * heads * (
        qk_nope_head_dim + v_head_dim
    )
    o = heads * v_head_dim * h
    return q + kv + o


def dense_ffn_params(hidden_size, intermediate_size):
    """SwiGLU FFN parameters: ``3 h i``."""
    return SWIGLU_MATRICES * np.asarray(hidden_size, dtype=float) * intermediate_size


def embedding_params(vocab_size, hidden_size, tied_embeddings):
    """Input embedding plus LM head (one matrix when tied)."""
    return np.asarray(vocab_size, dtype=float) * hidden_size * (1 if tied_embeddings else 2)


def zipf_expert_shares(experts: int, exponent: float) -> np.ndarray:
    """Share of the (token, expert) assignments each routed expert receives under a power law.

    Notes
    -----
    ``p_i = i^-s / sum_j j^-s`` for the experts ranked by popularity ``i = 1..E``; ``s = 0`` is
    uniform routing. Sums to one.
    """
    p = np.arange(1, int(experts) + 1, dtype=float) ** -float(exponent)
    return p / p.sum()


def expected_experts_touched(tokens: ArrayLike, experts, top_k, shares=None):
    """Expected number of distinct routed experts a step of ``tokens`` tokens touches.

    Parameters
    ----------
    tokens : [tokens] tokens in the step (array).
    experts, top_k : [-] routed experts and experts per token.
    shares : [-] optional share of the assignments each expert receives (sums to one; see
        :func:`zipf_expert_shares`); None: uniform.

    Notes
    -----
    Each token picks ``k`` of ``E`` experts; expert ``i`` is picked by one token with probability
    ``q_i = min(k p_i, 1)`` and missed by all ``n`` with ``(1 - q_i)^n``, so
    ``sum_i [1 - (1 - q_i)^n]`` are touched: ``E [1 - (1 - k/E)^n]`` when uniform.
    """
    n = np.asarray(tokens, dtype=float)
    if shares is None:
        return experts * (1.0 - (1.0 - np.asarray(top_k, dtype=float) / experts) ** n)
    q = np.minimum(float(top_k) * np.asarray(shares, dtype=float), 1.0)
    # a step a row, the experts along it: each row is summed on its own, contiguous (numpy's
    # pairwise sum), so a step's value is the same however many steps one call evaluates (a
    # sum down a column of several, strided, adds the experts one by one: its last bits differ)
    missed = (1.0 - q)[None, :] ** n.reshape(-1)[:, None]
    return (q.size - missed.sum(axis=1)).reshape(n.shape)


def attention_flops_per_token_per_context(layers, heads, qk_head_dim, v_head_dim):
    """Attention-score and value FLOPs per new token per token of context [FLOP].

    Notes
    -----
    ``QK^T`` costs ``2 H d_qk`` and ``AV`` costs ``2 H d_v`` per (query, key) pair per layer.
    """
    return 2.0 * np.asarray(layers, dtype=float) * heads * (qk_head_dim + v_head_dim)


def causal_context_sum_tokens(new_tokens, cached_tokens):
    """Sum over the new tokens of the context each attends to (cached prefix + causal part).

    Notes
    -----
    ``sum_{i=1..U} (P + i) = U P + U (U + 1) / 2``.
    """
    u = np.asarray(new_tokens, dtype=float)
    return u * np.asarray(cached_tokens, dtype=float) + u * (u + 1.0) / 2.0
