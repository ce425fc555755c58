"""Binds a model spec to the numbers the performance models take: parameters, KV bytes, FLOPs."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from pddplan import units
from pddplan.deployment.keys import hash_once
from pddplan.io.memo import IdentityMemo
from pddplan.models import architecture as arch
from pddplan.models import memory
from pddplan.spec import (
    Architecture,
    CompressedAttention,
    GqaAttention,
    MlaAttention,
    Model,
    MoeFfn,
    ParamsOverride,
)


@hash_once
@dataclass(frozen=True)
class ModelNumbers:
    """A model's shape reduced to the numbers the performance models take."""

    name: str
    layers: int
    hidden_size: int
    total_params: float
    active_params: float  # parameters one token multiplies (LM head included, lookup excluded)
    dense_params: float  # non-routed-expert parameters (read every step)
    expert_params: float  # one routed expert, all MoE layers
    experts: int
    top_k: int
    weight_dtype_bytes: float
    kv_dtype_bytes: float
    kv_bytes_per_token: float  # one replica, all layers
    kv_bytes_per_sequence: float  # per-sequence constant, one replica
    attention_flops_per_pair: float
    kv_latent: bool  # True: KV kept whole on every TP rank (MLA, single-head compressed)
    kv_heads: int
    fp8_compute: bool
    heads: int = 1  # attention (query) heads
    moe_layers: int = 0
    input_embedding_params: float = 0.0  # the lookup table (0 when tied to the LM head)
    lm_head_params: float = 0.0
    weight_dtype: str = "bf16"
    attention_dtype_bytes: float = 2.0
    draft_tokens: int = 0  # multi-token prediction / speculative tokens drafted per step
    acceptance_rate: float = 0.0
    #: [FLOP] attention FLOPs per (query, key) pair of a decode step, all layers, where decode
    #: runs attention in another form than prefill (0: the same as ``attention_flops_per_pair``).
    #: MLA decodes in the weight-absorbed form: every query head attends over the whole latent
    #: (``d_c + d_rope`` for the scores, ``d_c`` for the values), see :func:`model_numbers`.
    decode_attention_flops_per_pair: float = 0.0
    #: [-] share of the (token, expert) assignments each routed expert receives under real
    #: routing (sums to one; the profile's ``routing_skew``); None: uniform routing.
    expert_shares: tuple[float, ...] | None = None
    #: [-] one routed expert's intermediate width (0 for a dense model).
    expert_intermediate_size: int = 0

    @property
    def is_moe(self) -> bool:
        return self.experts > 0

    @property
    def tokens_per_decode_step(self) -> float:
        """Expected tokens a sequence emits per decode step [tokens].

        Notes
        -----
        With ``d`` drafted tokens each accepted with probability ``a`` (given the earlier ones
        were), ``1 + a + a^2 + ... + a^d`` (DeepSeek-V3 technical report, section 5.4.3: the
        second token is accepted 85-90% of the time, 1.8x tokens per second).
        """
        a = self.acceptance_rate
        return 1.0 + sum(a**i for i in range(1, self.draft_tokens + 1))

    def kv_replication(self, tensor_parallel: int) -> float:
        if self.kv_latent:
            return float(memory.latent_kv_replication(tensor_parallel))
        return float(memory.gqa_kv_replication(self.kv_heads, tensor_parallel))


@dataclass(frozen=True)
class AttentionNumbers:
    """An attention block's numbers, one replica: what :func:`model_numbers` takes from it."""

    params_per_layer: float
    kv_bytes_per_token: float  # all layers
    kv_bytes_per_sequence: float
    flops_per_pair: float  # all layers
    decode_flops_per_pair: float  # 0: decode runs the same form as prefill
    kv_latent: bool
    kv_heads: int


@dataclass(frozen=True)
class ParamCounts:
    """A model's parameter counts [-]: ``dense`` is read every step, ``expert`` is one routed
    expert over all MoE layers."""

    total: float
    active: float
    dense: float
    expert: float
    experts: int
    top_k: int


def gqa_attention_numbers(a: Architecture, att: GqaAttention, kv_bytes: float) -> AttentionNumbers:
    """Grouped-query attention's numbers (multi-head when ``kv_heads = heads``)."""
    return AttentionNumbers(
        params_per_layer=float(
            arch.gqa_attention_params(a.hidden_size, att.heads, att.kv_heads, att.head_dim)
        ),
        kv_bytes_per_token=float(
            memory.gqa_kv_bytes_per_token(a.layers, att.kv_heads, att.head_dim, kv_bytes)
        ),
        kv_bytes_per_sequence=0.0,
        flops_per_pair=float(
            arch.attention_flops_per_token_per_context(
                a.layers, att.heads, att.head_dim, att.head_dim
            )
        ),
        decode_flops_per_pair=0.0,
        kv_latent=False,
        kv_heads=att.kv_heads,
    )


def mla_attention_numbers(a: Architecture, att: MlaAttention, kv_bytes: float) -> AttentionNumbers:
    """Multi-head latent attention's numbers (DeepSeek-V2/V3).

    Decode absorbs the key and value up-projections into the query and output projections
    (DeepSeek-V2 report, arXiv 2405.04434, section 2.1.2), so each of the H query heads scores
    the d_c + d_rope latent key and sums d_c-wide latent values: FlashMLA's decode kernel does
    2 H (576 + 512) FLOPs per (query, key) pair for DeepSeek-V3 (its tests count
    FLOPS = s_q * total_seqlens * h_q * (d + dv) * 2 with d = 576, dv = 512), 3.4x the
    2 H (192 + 128) of prefill's unabsorbed form.
    """
    return AttentionNumbers(
        params_per_layer=float(
            arch.mla_attention_params(
                a.hidden_size,
                att.heads,
                att.kv_lora_rank,
                att.qk_rope_head_dim,
                att.qk_nope_head_dim,
                att.v_head_dim,
                att.q_lora_rank,
            )
        ),
        kv_bytes_per_token=float(
            memory.mla_kv_bytes_per_token(
                a.layers, att.kv_lora_rank, att.qk_rope_head_dim, kv_bytes
            )
        ),
        kv_bytes_per_sequence=0.0,
        flops_per_pair=float(
            arch.attention_flops_per_token_per_context(
                a.layers, att.heads, att.qk_nope_head_dim + att.qk_rope_head_dim, att.v_head_dim
            )
        ),
        decode_flops_per_pair=float(
            arch.attention_flops_per_token_per_context(
                a.layers, att.heads, att.kv_lora_rank + att.qk_rope_head_dim, att.kv_lora_rank
            )
        ),
        kv_latent=True,
        kv_heads=1,
    )


def compressed_attention_numbers(a: Architecture, att: CompressedAttention) -> AttentionNumbers:
    """A single-head compressed attention's numbers, its KV bytes given by the profile."""
    return AttentionNumbers(
        params_per_layer=float(
            arch.gqa_attention_params(a.hidden_size, att.heads, 1, att.head_dim)
        ),
        kv_bytes_per_token=att.kv_bytes_per_token,
        kv_bytes_per_sequence=att.kv_bytes_per_sequence,
        flops_per_pair=float(
            arch.attention_flops_per_token_per_context(
                a.layers, att.heads, att.head_dim, att.head_dim
            )
        ),
        decode_flops_per_pair=0.0,
        kv_latent=True,
        kv_heads=1,
    )


def attention_numbers(a: Architecture, kv_bytes: float) -> AttentionNumbers:
    """The architecture's attention block in numbers, whichever kind it is."""
    att = a.attention
    if isinstance(att, GqaAttention):
        return gqa_attention_numbers(a, att, kv_bytes)
    if isinstance(att, MlaAttention):
        return mla_attention_numbers(a, att, kv_bytes)
    assert isinstance(att, CompressedAttention)
    return compressed_attention_numbers(a, att)


def param_counts(a: Architecture, attention_params_per_layer: float) -> ParamCounts:
    """Parameter counts from the architecture: the input embedding (a lookup) is in ``total``
    and ``dense`` but not ``active``; the LM head is in ``active``."""
    ffn = a.ffn
    emb = float(arch.embedding_params(a.vocab_size, a.hidden_size, a.tied_embeddings))
    lm_head = float(a.vocab_size * a.hidden_size)
    if isinstance(ffn, MoeFfn):
        moe_layers = a.layers - ffn.dense_layers
        dense_ffn = ffn.dense_layers * float(
            arch.dense_ffn_params(a.hidden_size, ffn.dense_intermediate_size or 0)
        )
        expert = moe_layers * float(
            arch.dense_ffn_params(a.hidden_size, ffn.expert_intermediate_size)
        )
        shared_and_router = moe_layers * (
            ffn.shared_experts
            * float(arch.dense_ffn_params(a.hidden_size, ffn.expert_intermediate_size))
            + a.hidden_size * ffn.experts
        )
        dense = a.layers * attention_params_per_layer + dense_ffn + shared_and_router + emb
        total = dense + ffn.experts * expert
        active = dense - emb + lm_head + ffn.top_k * expert
        return ParamCounts(total, active, dense, expert, ffn.experts, ffn.top_k)
    dense = (
        a.layers
        * (
            attention_params_per_layer
            + float(arch.dense_ffn_params(a.hidden_size, ffn.intermediate_size))
        )
        + emb
    )
    return ParamCounts(dense, dense - emb + lm_head, dense, 0.0, 0, 0)


def overridden_param_counts(counts: ParamCounts, override: ParamsOverride) -> ParamCounts:
    """Published total and active counts in place of the computed ones; the routed experts
    share what total and active leave between them."""
    total, active = override.total_params, override.active_params
    experts, top_k = counts.experts, counts.top_k
    if experts > top_k:
        expert = (total - active) / (experts - top_k)
        return ParamCounts(total, active, total - experts * expert, expert, experts, top_k)
    return ParamCounts(total, active, total, 0.0, experts, top_k)


def model_numbers(m: Model) -> ModelNumbers:
    """A model spec in the numbers the performance models take (memoized on the object)."""
    return _BY_OBJECT.get(m, None, lambda: _model_numbers(m))


_BY_OBJECT = IdentityMemo()


def _model_numbers(m: Model) -> ModelNumbers:
    a = m.architecture
    kvb = units.DTYPE_BYTES[m.dtypes.kv_cache]
    att = attention_numbers(a, kvb)
    counts = param_counts(a, att.params_per_layer)
    if m.params_override is not None:
        counts = overridden_param_counts(counts, m.params_override)
    lm_head = float(a.vocab_size * a.hidden_size)
    return ModelNumbers(
        name=m.name,
        layers=a.layers,
        hidden_size=a.hidden_size,
        total_params=counts.total,
        active_params=counts.active,
        dense_params=counts.dense,
        expert_params=counts.expert,
        experts=counts.experts,
        top_k=counts.top_k,
        weight_dtype_bytes=units.DTYPE_BYTES[m.dtypes.weights],
        kv_dtype_bytes=kvb,
        kv_bytes_per_token=att.kv_bytes_per_token,
        kv_bytes_per_sequence=att.kv_bytes_per_sequence,
        attention_flops_per_pair=att.flops_per_pair,
        decode_attention_flops_per_pair=att.decode_flops_per_pair,
        kv_latent=att.kv_latent,
        kv_heads=att.kv_heads,
        fp8_compute=m.dtypes.weights in ("fp8", "int8", "fp4", "int4"),
        heads=a.attention.heads,
        moe_layers=(a.layers - a.ffn.dense_layers) if isinstance(a.ffn, MoeFfn) else 0,
        input_embedding_params=0.0 if a.tied_embeddings else lm_head,
        lm_head_params=lm_head,
        weight_dtype=m.dtypes.weights,
        attention_dtype_bytes=units.DTYPE_BYTES[m.dtypes.attention],
        draft_tokens=m.speculative.draft_tokens if m.speculative else 0,
        acceptance_rate=m.speculative.acceptance_rate if m.speculative else 0.0,
        expert_shares=expert_shares(a.ffn) if isinstance(a.ffn, MoeFfn) else None,
        expert_intermediate_size=a.ffn.expert_intermediate_size if isinstance(a.ffn, MoeFfn) else 0,
    )


def expert_shares(ffn: MoeFfn) -> tuple[float, ...] | None:
    """The routed experts' shares of the assignments from the profile's ``routing_skew``: the
    measured shares as given, or a power law of that exponent
    (:func:`~pddplan.models.architecture.zipf_expert_shares`); None without one (uniform)."""
    skew = ffn.routing_skew
    if skew is None:
        return None
    if skew.expert_shares is not None:
        return tuple(float(x) for x in skew.expert_shares)
    assert skew.zipf_exponent is not None  # the spec gives exactly one form
    return _zipf_shares(ffn.experts, skew.zipf_exponent)


@lru_cache(maxsize=64)
def _zipf_shares(experts: int, exponent: float) -> tuple[float, ...]:
    """:func:`~pddplan.models.architecture.zipf_expert_shares` as a tuple, made once per
    (experts, exponent): a robust study or a verdict check rebuilds the model's numbers for
    every sample."""
    return tuple(float(x) for x in arch.zipf_expert_shares(experts, exponent))
