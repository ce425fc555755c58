"""The model profile: architecture (attention and FFN kinds), dtypes, parameter overrides and
speculative decoding."""

from typing import Annotated, Literal

from pydantic import Field, StrictBool, model_validator
from typing_extensions import Self

from pddplan.spec.base import Dim, Dtype, Fraction, Source, Sourced, Strict


class GqaAttention(Strict):
    type: Literal["gqa"]
    heads: Dim
    kv_heads: Dim
    head_dim: Dim

    @model_validator(mode="after")
    def _kv_divides(self) -> Self:
        if self.heads % self.kv_heads:
            raise ValueError("heads must be a multiple of kv_heads")
        return self


class MlaAttention(Strict):
    type: Literal["mla"]
    heads: Dim
    kv_lora_rank: Dim
    qk_rope_head_dim: Dim
    qk_nope_head_dim: Dim
    v_head_dim: Dim
    q_lora_rank: Dim | None = None


class CompressedAttention(Strict):
    """Compressed KV (DeepSeek-V4 class): per-token and per-sequence sizes given explicitly."""

    type: Literal["compressed"]
    heads: Dim
    head_dim: Dim = Field(description="attention head dim used for attention FLOPs")
    kv_bytes_per_token: Annotated[float, Field(gt=0, le=1e9)] = Field(
        description="all layers, at the model's KV dtype"
    )
    kv_bytes_per_sequence: Annotated[float, Field(ge=0, le=1e12)] = Field(
        description="per-sequence constant (sliding window, compressor state)"
    )
    source: Source


Attention = Annotated[
    GqaAttention | MlaAttention | CompressedAttention, Field(discriminator="type")
]


class DenseFfn(Strict):
    type: Literal["dense"]
    intermediate_size: Dim


#: Tolerance on the sum of a routing distribution's shares [-].
SHARES_SUM_TOLERANCE = 1e-6


class RoutingSkew(Sourced):
    """How unevenly the router spreads tokens over the routed experts: a Zipf (power-law) exponent
    over the experts ranked by popularity, or the measured share of each expert."""

    zipf_exponent: Annotated[float, Field(ge=0.0, le=3.0)] | None = Field(
        default=None,
        description="s of the power law p_i ~ i^-s over the experts ranked by popularity "
        "(0: uniform routing)",
    )
    expert_shares: list[Annotated[float, Field(ge=0.0, le=1.0)]] | None = Field(
        default=None,
        description="measured fraction of the (token, expert) assignments each routed expert "
        "receives, one per expert; they sum to one",
    )

    @model_validator(mode="after")
    def _one_form(self) -> Self:
        if (self.zipf_exponent is None) == (self.expert_shares is None):
            raise ValueError("give exactly one of zipf_exponent and expert_shares")
        if self.expert_shares is not None:
            total = sum(self.expert_shares)
            if abs(total - 1.0) > SHARES_SUM_TOLERANCE:
                raise ValueError(f"expert_shares must sum to 1, not {total:.6g}")
        return self


class MoeFfn(Strict):
    type: Literal["moe"]
    experts: Dim
    top_k: Dim
    shared_experts: Annotated[int, Field(ge=0, le=10**6)] = 0
    expert_intermediate_size: Dim
    dense_layers: Annotated[int, Field(ge=0, le=10**6)] = Field(
        default=0, description="leading layers with a dense FFN"
    )
    dense_intermediate_size: Dim | None = None
    routing_skew: RoutingSkew | None = Field(
        default=None, description="uneven expert popularity of real routing; null: uniform"
    )

    @model_validator(mode="after")
    def _check(self) -> Self:
        if self.top_k > self.experts:
            raise ValueError("top_k cannot exceed experts")
        shares = self.routing_skew.expert_shares if self.routing_skew else None
        if shares is not None and len(shares) != self.experts:
            raise ValueError(
                f"routing_skew.expert_shares has {len(shares)} shares for {self.experts} experts"
            )
        if self.dense_layers and self.dense_intermediate_size is None:
            raise ValueError("dense_layers > 0 needs dense_intermediate_size")
        return self


Ffn = Annotated[DenseFfn | MoeFfn, Field(discriminator="type")]


class Architecture(Strict):
    layers: Annotated[int, Field(ge=1, le=10_000)]
    hidden_size: Annotated[int, Field(ge=1, le=10**6)]
    vocab_size: Annotated[int, Field(ge=1, le=10**8)]
    tied_embeddings: StrictBool = False
    attention: Attention
    ffn: Ffn


class ParamsOverride(Sourced):
    """Parameter counts for models whose layer shapes are not all published."""

    total_params: Annotated[float, Field(ge=1, le=1e15)]
    active_params: Annotated[float, Field(ge=1, le=1e15)]

    @model_validator(mode="after")
    def _active_le_total(self) -> Self:
        if self.active_params > self.total_params:
            raise ValueError("active_params cannot exceed total_params")
        return self


class ModelDtypes(Strict):
    weights: Dtype
    kv_cache: Dtype
    attention: Dtype = Field(
        default="bf16",
        description="precision attention kernels compute in (FlashAttention / FlashMLA: BF16), "
        "apart from the weights' precision",
    )


class Speculative(Sourced):
    """Multi-token prediction or speculative decoding: extra tokens drafted per decode step."""

    draft_tokens: Annotated[int, Field(ge=1, le=64)] = Field(
        description="tokens drafted per step beyond the first"
    )
    acceptance_rate: Fraction = Field(description="probability each drafted token is accepted")


class Model(Strict):
    kind: Literal["model"] = "model"
    name: str
    display_name: str
    source: Source
    notes: str = ""
    architecture: Architecture
    dtypes: ModelDtypes
    params_override: ParamsOverride | None = None
    speculative: Speculative | None = None
