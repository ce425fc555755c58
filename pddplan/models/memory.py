"""Memory: weight bytes, KV-cache bytes per token and per sequence, and the largest batch.

Pure functions of numbers; they broadcast over numpy arrays.

References
----------
.. [1] Kwon et al., "Efficient Memory Management for LLM Serving with PagedAttention", 2023.
.. [2] shared/reference/models.md: GQA heads replicate when TP exceeds the KV heads; MLA's
   latent KV is not split by tensor parallelism.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike


def gqa_kv_bytes_per_token(layers, kv_heads, head_dim, kv_dtype_bytes):
    """KV bytes per token of one model replica with grouped-query attention [bytes].

    Notes
    -----
    ``2 (K and V) * H_kv * d * L * bytes``.
    """
    return 2.0 * np.asarray(layers, dtype=float) * kv_heads * head_dim * kv_dtype_bytes


def mla_kv_bytes_per_token(layers, kv_lora_rank, qk_rope_head_dim, kv_dtype_bytes):
    """KV bytes per token of one replica with multi-head latent attention [bytes].

    Notes
    -----
    The latent ``c_kv`` (rank ``r``) and the shared rope key (``d_rope``) per layer:
    ``(r + d_rope) * L * bytes``.
    """
    return np.asarray(layers, dtype=float) * (kv_lora_rank + qk_rope_head_dim) * kv_dtype_bytes


def gqa_kv_replication(kv_heads, tensor_parallel):
    """How many times an instance stores each KV head under tensor parallelism [-].

    Notes
    -----
    Each of ``tp`` ranks holds ``ceil(H_kv / tp)`` heads, so the instance holds
    ``tp * ceil(H_kv / tp) / H_kv`` copies: 1 while ``tp <= H_kv`` and ``tp | H_kv``.
    """
    tp = np.asarray(tensor_parallel, dtype=float)
    return tp * np.ceil(kv_heads / tp) / kv_heads


def latent_kv_replication(tensor_parallel):
    """MLA / single-head compressed KV is kept whole on every rank: ``tp`` copies [-]."""
    return np.asarray(tensor_parallel, dtype=float)


def weight_bytes_per_chip(total_params, weight_dtype_bytes, tensor_parallel):
    """Weights held by each chip of an instance that shards them ``tp`` ways [bytes]."""
    return np.asarray(total_params, dtype=float) * weight_dtype_bytes / tensor_parallel


def kv_bytes_per_sequence(context_tokens, kv_bytes_per_token, kv_bytes_per_sequence_const=0.0):
    """KV bytes of one sequence at a context length [bytes]: linear plus a per-sequence constant."""
    return (
        np.asarray(context_tokens, dtype=float) * kv_bytes_per_token + kv_bytes_per_sequence_const
    )


def max_batch_in_memory(
    context_tokens: ArrayLike,
    memory_bytes_per_chip,
    chips,
    memory_utilization,
    weight_bytes_per_chip_,
    kv_bytes_per_token_per_instance,
    kv_bytes_per_sequence_per_instance=0.0,
):
    """Largest number of sequences of a context length whose KV fits in an instance [-].

    Parameters
    ----------
    context_tokens : [tokens] context length of each sequence.
    memory_bytes_per_chip : [bytes] memory capacity of one chip.
    chips : [-] chips in the instance.
    memory_utilization : [-] fraction of memory the engine may use.
    weight_bytes_per_chip_ : [bytes] weights resident on each chip.
    kv_bytes_per_token_per_instance : [bytes] KV per token summed over the instance's ranks
        (replication included).
    kv_bytes_per_sequence_per_instance : [bytes] per-sequence constant over the instance.

    Notes
    -----
    ``b = floor((n M u - n W) / (c k + s))``, clipped at 0.
    """
    free = chips * (
        np.asarray(memory_bytes_per_chip, dtype=float) * memory_utilization - weight_bytes_per_chip_
    )
    per_seq = kv_bytes_per_sequence(
        context_tokens, kv_bytes_per_token_per_instance, kv_bytes_per_sequence_per_instance
    )
    return np.maximum(np.floor(free / per_seq), 0.0)
