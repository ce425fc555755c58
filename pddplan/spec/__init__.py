"""Typed, frozen specs: what the loader turns YAML into and what nothing downstream sees as dicts.

Profile keys carry the unit people think in (``bf16_tflops``, ``memory_gb``,
``bandwidth_gbit_per_s``); :mod:`pddplan.deployment` converts them to SI once through
:mod:`pddplan.units`. Every group of numbers carries a ``source`` and may list the keys that are
estimates in ``estimated``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    StrictBool,
    Tag,
    ValidationError,
    model_validator,
)
from typing_extensions import Self

from pddplan import defaults

# Every number is finite (``allow_inf_nan=False`` on every model) and inside a physically sane
# range, so that nothing accepted can hang the search or overflow: the bounds are generous (a
# chip from 1 GFLOPS to 1 EFLOPS, a line from 1 Mbit/s to 1 Pbit/s) and documented in
# docs/limits.md. Names say what each range is for.
#: Any count or size that must be positive (tokens, chips, layers): at most 10^9.
MAX_COUNT = 10**9
#: Token lengths of a request: at most 10^8 tokens.
MAX_TOKENS = 10**8
#: Least utilization cap or efficiency factor: below 1% a plan is not a plan.
MIN_EFFICIENCY = 0.01
#: Largest money figure [USD] (prices per hour, per month, capex, budgets).
MAX_USD = 1e9

PositiveFloat = Annotated[float, Field(gt=0, le=1e12)]
NonNegFloat = Annotated[float, Field(ge=0, le=1e12)]
Fraction = Annotated[float, Field(ge=0, le=1)]
OpenFraction = Annotated[float, Field(gt=0, le=1)]
Efficiency = Annotated[float, Field(ge=MIN_EFFICIENCY, le=1)]
PositiveInt = Annotated[int, Field(gt=0, le=MAX_COUNT)]
NonNegInt = Annotated[int, Field(ge=0, le=MAX_COUNT)]
Tokens = Annotated[int, Field(gt=0, le=MAX_TOKENS)]
#: A model dimension (heads, head size, ranks, intermediate sizes, experts).
Dim = Annotated[int, Field(ge=1, le=10**7)]
Usd = Annotated[float, Field(ge=0, le=MAX_USD)]
PositiveUsd = Annotated[float, Field(ge=1e-6, le=MAX_USD)]
Tflops = Annotated[float, Field(ge=1e-3, le=1e6, description="1 GFLOPS to 1 EFLOPS")]
Gb = Annotated[float, Field(ge=1e-3, le=1e6)]
TbPerS = Annotated[float, Field(ge=1e-3, le=1e3)]
GbPerS = Annotated[float, Field(ge=1e-3, le=1e7)]
Gbit = Annotated[float, Field(ge=1e-3, le=1e6, description="1 Mbit/s to 1 Pbit/s")]
Micros = Annotated[float, Field(ge=0, le=1e6)]
Millis = Annotated[float, Field(ge=0, le=1e5)]
Rate = Annotated[float, Field(ge=1e-6, le=1e6, description="requests per second")]
Seconds = Annotated[float, Field(ge=1e-3, le=86_400.0)]
Source = Annotated[str, Field(min_length=3, description="where the numbers come from")]
Dtype = Literal["fp32", "bf16", "fp16", "fp8", "int8", "fp4", "int4"]


class Strict(BaseModel):
    model_config = ConfigDict(
        extra="forbid", frozen=True, populate_by_name=False, allow_inf_nan=False
    )

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """A copy; with ``update``, validated like a file (pydantic's own copy skips validation).

        Raises :class:`~pddplan.errors.ProfileError` naming the key and the allowed range.
        """
        if not update:
            return super().model_copy(deep=deep)
        data = {k: getattr(self, k) for k in self.model_fields_set}
        data.update(update)
        try:
            return self.model_validate(data)
        except ValidationError as exc:
            from pddplan.spec.validation import YamlDoc, validation_to_profile_error

            raise validation_to_profile_error(
                exc, type(self), YamlDoc(data, {}, f"{type(self).__name__} copy")
            ) from None


class Sourced(Strict):
    source: Source
    estimated: list[str] = Field(
        default_factory=list, description="keys of this group that are estimates, not measured"
    )

    @model_validator(mode="after")
    def _estimated_keys_exist(self) -> Sourced:
        fields = set(type(self).model_fields) - {"source", "estimated"}
        for key in self.estimated:
            if key not in fields:
                raise ValueError(f"estimated names unknown key {key!r}; allowed: {sorted(fields)}")
        return self


# --------------------------------------------------------------------------------------- chips


class ChipDatasheet(Sourced):
    """Dense peaks from the vendor's datasheet (never sparse peaks)."""

    bf16_tflops: Tflops
    fp8_tflops: Tflops | None = Field(
        default=None, description="dense FP8 peak; null where the chip has no FP8 (BF16 rate used)"
    )
    memory_gb: Gb
    memory_bandwidth_tb_per_s: TbPerS
    scaleup_bandwidth_gb_per_s: GbPerS = Field(
        description="per-chip scale-up interconnect, bidirectional (both directions added)"
    )
    fp4_tflops: Tflops | None = Field(
        default=None, description="dense FP4 peak; null where the chip has no FP4 (FP8 rate used)"
    )
    chips_per_node: Annotated[int, Field(ge=1, le=100_000)] = Field(
        default=8, description="chips joined by the scale-up fabric (an HGX node, an NVL72 rack)"
    )
    scaleout_bandwidth_gbit_per_s: Gbit | None = Field(
        default=None,
        description="scale-out (RDMA NIC) bandwidth per chip, one direction, in Gbit/s; null "
        "where the profile names none (instances then stay within one node)",
    )


class ChipPrice(Sourced):
    rental_usd_per_hour: PositiveUsd
    capex_usd: PositiveUsd | None = None


class ChipDerates(Sourced):
    """Empirical efficiency factors, kept apart from the datasheet numbers."""

    compute_efficiency: Efficiency = Field(
        description="fraction of dense peak reached by large GEMMs"
    )
    compute_half_saturation_tokens: Annotated[float, Field(ge=1e-3, le=1e7)] = Field(
        description="tokens per step at which GEMM efficiency is half its large-shape value"
    )
    memory_bandwidth_efficiency: Efficiency
    scaleup_efficiency: Efficiency
    step_overhead_ms: Millis = Field(description="fixed per-step cost (launch, scheduling)")
    fp8_compute_efficiency: Efficiency | None = Field(
        default=None,
        description="fraction of the FP8 (and FP4) peak reached by large low-precision GEMMs; "
        "null: compute_efficiency",
    )
    fp8_grouped_gemm_efficiency: Efficiency | None = Field(
        default=None,
        description="large-shape fraction of the FP8 peak reached by the routed experts' "
        "block-scaled grouped GEMMs (MoE); null: the linear-layer curve",
    )
    fp8_grouped_gemm_half_saturation_tokens: Annotated[float, Field(ge=1e-3, le=1e7)] | None = (
        Field(
            default=None,
            description="tokens per expert at which the grouped-GEMM efficiency is half its "
            "large-shape value; null: compute_half_saturation_tokens",
        )
    )
    attention_compute_efficiency: Efficiency | None = Field(
        default=None,
        description="fraction of the attention-precision peak reached by attention kernels; "
        "null: compute_efficiency",
    )
    layer_latency_us: Micros = Field(
        default=0.0, description="kernel-latency floor of one transformer layer, in microseconds"
    )
    scaleup_latency_us: Micros = Field(
        default=0.0, description="fixed cost (alpha) of one scale-up collective, in microseconds"
    )
    scaleout_efficiency: Efficiency = Field(
        default=1.0, description="achieved fraction of the scale-out NIC bandwidth"
    )
    scaleout_latency_us: Micros = Field(
        default=0.0, description="fixed cost (alpha) of one scale-out collective, in microseconds"
    )


class Chip(Strict):
    kind: Literal["chip"] = "chip"
    name: str
    display_name: str
    vendor: str
    notes: str = ""
    datasheet: ChipDatasheet
    price: ChipPrice
    derates: ChipDerates


# -------------------------------------------------------------------------------------- models


class GqaAttention(Strict):
    type: Literal["gqa"]
    heads: Dim
    kv_heads: Dim
    head_dim: Dim

    @model_validator(mode="after")
    def _kv_divides(self) -> GqaAttention:
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

    @model_validator(mode="after")
    def _check(self) -> MoeFfn:
        if self.top_k > self.experts:
            raise ValueError("top_k cannot exceed experts")
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
    def _active_le_total(self) -> ParamsOverride:
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


# --------------------------------------------------------------------------------------- links


class Link(Strict):
    """A WAN line (TCP) or an RDMA fabric. docs/links.md explains every key and its source.

    The TCP keys (``initial_window_segments`` to ``slow_start_after_idle``) apply to ``wan``
    links only; an ``rdma`` link starts at its goodput (no slow start, no window ceiling).
    """

    kind: Literal["link"] = "link"
    name: str
    type: Literal["wan", "rdma"]
    notes: str = ""
    bandwidth_gbit_per_s: Gbit = Field(description="line rate, one direction, in Gbit/s")
    rtt_ms: Annotated[float, Field(ge=0, le=10_000)] = Field(
        description="round-trip time in ms (at most 10 s: a geostationary hop is ~0.6 s)"
    )
    efficiency: Efficiency = Field(
        description="goodput / line rate: protocol headers and framing only (slow start, "
        "windows and loss are modelled separately)"
    )
    jitter_cv: Annotated[float, Field(ge=0, le=10)] = Field(
        default=0.0, description="coefficient of variation of the payload factor (lognormal)"
    )
    setup_rtts: Annotated[float, Field(ge=0, le=10)] = Field(
        default=1.0,
        description="round trips of connection set-up before the first data byte on a cold "
        "connection (TCP handshake 1, RFC 9293; +1 for TLS 1.3); paid only without "
        "connection_reuse",
    )
    connection_reuse: StrictBool = Field(
        default=True,
        description="transfers use pooled, already-open connections (no set-up round trips)",
    )
    per_transfer_latency_ms: Annotated[float, Field(ge=0, le=10_000)] = Field(
        default=0.0,
        description="fixed time per transfer besides the round trips (posting work requests, "
        "completion), in ms",
    )
    initial_window_segments: Annotated[int, Field(ge=1, le=1000)] = Field(
        default=10, description="TCP initial congestion window in segments (RFC 6928: 10)"
    )
    mss_bytes: Annotated[int, Field(ge=536, le=65_495)] = Field(
        default=1448,
        description="TCP maximum segment size in bytes (1500-byte MTU minus IP, TCP and "
        "timestamp headers: 1448)",
    )
    max_window_bytes: Annotated[float, Field(ge=1_000, le=2**30)] = Field(
        default=4_194_304,
        description="largest window of one TCP stream in bytes (socket buffer ceiling; Linux "
        "tcp_wmem max 4 MiB; at most 2^30 with window scaling, RFC 7323)",
    )
    loss_rate: Annotated[float, Field(ge=0, lt=0.5)] = Field(
        default=0.0,
        description="TCP segment loss probability; sets the Mathis et al. 1997 ceiling "
        "MSS / RTT * sqrt(3/2) / sqrt(p) (0: no loss ceiling)",
    )
    streams_per_transfer: Annotated[int, Field(ge=1, le=1024)] = Field(
        default=1, description="parallel TCP streams one transfer is striped over"
    )
    slow_start_after_idle: StrictBool = Field(
        default=True,
        description="a pooled connection idle past its retransmission timeout restarts slow "
        "start (RFC 2861; Linux net.ipv4.tcp_slow_start_after_idle, default 1)",
    )
    price_usd_per_month: Usd = 0.0
    source: Source
    estimated: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _estimated_keys_exist(self) -> Link:
        keys = set(type(self).model_fields) - {
            "kind",
            "name",
            "type",
            "notes",
            "source",
            "estimated",
        }
        for key in self.estimated:
            if key not in keys:
                raise ValueError(f"estimated names unknown key {key!r}; allowed: {sorted(keys)}")
        return self


# ----------------------------------------------------------------------------------- workloads


class FixedLength(Strict):
    fixed: Tokens


class LognormalLength(Strict):
    lognormal: LognormalParams


class LognormalParams(Strict):
    mean: Annotated[float, Field(ge=1, le=MAX_TOKENS)]
    cv: Annotated[float, Field(gt=0, le=100)]
    min: Tokens = 1
    max: Tokens | None = None

    @model_validator(mode="after")
    def _bounds(self) -> LognormalParams:
        if self.max is not None and self.min > self.max:
            raise ValueError(f"min ({self.min}) must not exceed max ({self.max})")
        if self.mean < self.min or (self.max is not None and self.mean > self.max):
            raise ValueError(
                f"mean ({self.mean:g}) must lie between min ({self.min}) and max "
                f"({self.max if self.max is not None else 'none'}): otherwise most lengths "
                "would be clamped"
            )
        return self


class EmpiricalLength(Strict):
    empirical: EmpiricalParams


class EmpiricalParams(Strict):
    values: list[Tokens] = Field(min_length=1, max_length=1_000_000)
    weights: list[PositiveFloat] | None = Field(default=None, max_length=1_000_000)

    @model_validator(mode="after")
    def _same_length(self) -> EmpiricalParams:
        if self.weights is not None and len(self.weights) != len(self.values):
            raise ValueError("weights must have as many entries as values")
        return self


def _length_kind(v: Any) -> str | None:
    if isinstance(v, dict):
        for key, tag in (
            ("fixed", "FixedLength"),
            ("lognormal", "LognormalLength"),
            ("empirical", "EmpiricalLength"),
        ):
            if key in v:
                return tag
        return None
    return (
        type(v).__name__ if isinstance(v, FixedLength | LognormalLength | EmpiricalLength) else None
    )


LengthDist = Annotated[
    Annotated[FixedLength, Tag("FixedLength")]
    | Annotated[LognormalLength, Tag("LognormalLength")]
    | Annotated[EmpiricalLength, Tag("EmpiricalLength")],
    Discriminator(
        _length_kind,
        custom_error_type="length_kind",
        custom_error_message="a length distribution is a mapping with one of the keys fixed, "
        "lognormal or empirical",
    ),
]


class HitRateBins(Strict):
    edges: list[Fraction] = Field(min_length=2, max_length=10_001)
    probabilities: list[Fraction] = Field(min_length=1, max_length=10_000)

    @model_validator(mode="after")
    def _check(self) -> HitRateBins:
        e = self.edges
        if len(self.probabilities) != len(e) - 1:
            raise ValueError(
                f"{len(e)} edges make {len(e) - 1} bins but {len(self.probabilities)} "
                "probabilities were given"
            )
        if any(b <= a for a, b in zip(e, e[1:], strict=False)):
            raise ValueError("edges must increase strictly")
        total = sum(self.probabilities)
        if abs(total - 1.0) > 1e-6:
            raise ValueError(f"probabilities must sum to 1, they sum to {total:.6g}")
        return self


class HitRateBeta(Strict):
    a: Annotated[float, Field(ge=1e-3, le=1e3)]
    b: Annotated[float, Field(ge=1e-3, le=1e3)]


class HitRateDist(Strict):
    bins: HitRateBins | None = None
    beta: HitRateBeta | None = None
    samples: list[Fraction] | None = Field(default=None, max_length=1_000_000)
    shift: Annotated[float, Field(ge=-1, le=1)] = 0.0
    scale: Annotated[float, Field(ge=0, le=100)] = 1.0
    mix_weight: Fraction = 0.0
    mix_with: HitRateDist | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> HitRateDist:
        given = [k for k in ("bins", "beta", "samples") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError(
                "give exactly one of bins, beta, samples" + (f" (got {given})" if given else "")
            )
        if self.samples is not None and not self.samples:
            raise ValueError("samples must not be empty")
        if self.mix_weight > 0 and self.mix_with is None:
            raise ValueError("mix_weight > 0 needs mix_with")
        return self


#: [tokens] A request whose input reaches this and whose output stays below
#: :data:`DEFAULT_ANOMALOUS_OUTPUT_TOKENS` is anomalous (long input, short output: RLD finishes
#: it locally rather than send its KV over the line); ``hitrate`` classifies traces by it.
DEFAULT_ANOMALOUS_INPUT_TOKENS = defaults.ANOMALOUS_INPUT_TOKENS
#: [tokens] Output below this (with a long input) marks a request anomalous.
DEFAULT_ANOMALOUS_OUTPUT_TOKENS = defaults.ANOMALOUS_OUTPUT_TOKENS


class Anomalous(Strict):
    """Long-input / short-output requests that RLD finishes locally (no WAN transfer)."""

    share: Fraction
    input_tokens: LengthDist
    output_tokens: LengthDist
    hit_rate: Fraction = 0.0
    output_threshold_tokens: Tokens = Field(
        default=DEFAULT_ANOMALOUS_OUTPUT_TOKENS,
        description="output below this (with a long input) marks a request anomalous",
    )


class Workload(Strict):
    kind: Literal["workload"] = "workload"
    name: str
    source: Source
    notes: str = ""
    input_tokens: LengthDist
    output_tokens: LengthDist
    hit_rate: HitRateDist
    anomalous: Anomalous | None = None
    rate_rps: Rate | None = Field(
        default=None, description="observed arrival rate, requests per second (from a trace)"
    )


# ----------------------------------------------------------------------------------- scenarios


#: Parallel layouts of an instance the solver searches (see deployment.layouts_for).
LayoutKind = Literal["tp", "ep", "ep-tbo"]
LAYOUT_KINDS: tuple[LayoutKind, ...] = ("tp", "ep", "ep-tbo")
#: Searched unless a scenario lists others: tp, the layout the step model validates for.
DEFAULT_LAYOUTS: tuple[LayoutKind, ...] = ("tp",)


class RoleChoice(Strict):
    chips: list[str] = Field(
        min_length=1, max_length=1000, description="chip profile names, or ['*'] for all"
    )
    chips_per_instance: list[Annotated[int, Field(ge=1, le=4096)]] = Field(
        default_factory=lambda: [8],
        min_length=1,
        max_length=64,
        description="instance size options (chips per instance)",
    )
    layouts: list[LayoutKind] = Field(
        default_factory=lambda: list(DEFAULT_LAYOUTS),
        min_length=1,
        description="parallel layouts the solver may use: tp (tensor parallel), ep (expert "
        "parallel over all chips with data-parallel attention, MoE models), ep-tbo (ep with "
        "two-batch overlap); default tp only, since the ep step model is still 37-108% "
        "optimistic against published MoE throughputs (README, Validation)",
    )


class Roles(Strict):
    P: RoleChoice
    RLD: RoleChoice
    MD: RoleChoice


class Sla(Strict):
    ttft_p50_s: Seconds
    ttft_p90_s: Seconds
    ttft_p99_s: Seconds
    tpot_ms: Annotated[float, Field(ge=0.1, le=60_000)]

    @model_validator(mode="after")
    def _ordered(self) -> Sla:
        if not self.ttft_p50_s <= self.ttft_p90_s <= self.ttft_p99_s:
            raise ValueError("TTFT targets must satisfy p50 <= p90 <= p99")
        return self


#: Chunked-prefill chunk [tokens] where a scenario or a command names none: the scenario's
#: ``serving.chunk_size_tokens``, the chunk of an engine a calibration measured and of an
#: offline-throughput estimate. A serving-engine setting (vLLM's ``max_num_batched_tokens``,
#: SGLang's ``--chunked-prefill-size``), not a physical constant: scenarios set their own.
DEFAULT_CHUNK_SIZE_TOKENS = defaults.CHUNK_SIZE_TOKENS
#: [-] Decode pools are sized so that a request finds every slot taken with at most this
#: probability (the level at which docs/simulate.md found the closed forms within 10%).
DEFAULT_DECODE_SLOT_WAIT_PROBABILITY_CAP = defaults.DECODE_SLOT_WAIT_PROBABILITY_CAP
#: Fraction of a chip's memory the engine may fill with weights and KV cache [-] where a
#: scenario or a command names none: vLLM's default ``gpu_memory_utilization`` (0.9); the rest
#: holds activations, the CUDA context and fragmentation.
DEFAULT_MEMORY_UTILIZATION = defaults.MEMORY_UTILIZATION
#: Points each hit-rate bin and each length distribution are discretized into [-] where a
#: scenario names none (``serving.hit_rate_points_per_bin``, ``serving.length_points``): a
#: numerical setting (more points, finer classes, slower solves), not a measured figure.
DEFAULT_HIT_RATE_POINTS_PER_BIN = 3
DEFAULT_LENGTH_POINTS = 3


class Serving(Strict):
    chunk_size_tokens: Annotated[int, Field(ge=16, le=10**7)] = DEFAULT_CHUNK_SIZE_TOKENS
    prefill_utilization_cap: Efficiency = 0.85
    decode_memory_utilization: Efficiency = DEFAULT_MEMORY_UTILIZATION
    link_utilization_cap: Efficiency = 0.8
    decode_slot_wait_probability_cap: Annotated[float, Field(gt=0, le=1)] = Field(
        default=DEFAULT_DECODE_SLOT_WAIT_PROBABILITY_CAP,
        description="MD and RLD are sized so that a request finds every decode slot taken "
        "(Erlang C over the pool's slots) with at most this probability; 1 sizes them for "
        "capacity only (docs/solve.md)",
    )
    handover: Literal["auto", "one-shot", "catch-up"] = "auto"
    catch_up_threshold_tokens: Tokens = 64
    anomalous_filter: StrictBool = True
    routing: Literal["optimize", "all-relay", "no-relay"] = "optimize"
    hit_rate_points_per_bin: Annotated[int, Field(ge=1, le=50)] = DEFAULT_HIT_RATE_POINTS_PER_BIN
    length_points: Annotated[int, Field(ge=1, le=50)] = DEFAULT_LENGTH_POINTS


class Baseline(Strict):
    chip: str
    chips_per_instance: Annotated[int, Field(ge=1, le=4096)] = 8
    layouts: list[LayoutKind] = Field(
        default_factory=lambda: list(DEFAULT_LAYOUTS),
        min_length=1,
        description="parallel layouts the baseline may use (as roles.*.layouts)",
    )


class Revenue(Strict):
    """API prices: the revenue side of the bathtub."""

    uncached_input_usd_per_mtok: Annotated[float, Field(ge=0, le=1e6)]
    cached_input_price_fraction: Fraction = Field(
        description="cached-token price as a fraction of the uncached price (10-25% today)"
    )
    output_usd_per_mtok: Annotated[float, Field(ge=0, le=1e6)]
    source: Source


class Limits(Strict):
    max_chips: dict[str, Annotated[int, Field(ge=1, le=10**7)]] = Field(default_factory=dict)
    budget_usd_per_hour: PositiveUsd | None = None
    max_rate_rps: Rate | None = None


# --------------------------------------------------------------------------------- uncertainty


class Uniform(Strict):
    low: float
    high: float

    @model_validator(mode="after")
    def _ordered(self) -> Uniform:
        if self.high < self.low:
            raise ValueError(f"bounds reversed: low {self.low:g} > high {self.high:g}")
        return self


class Triangular(Strict):
    low: float
    mode: float
    high: float

    @model_validator(mode="after")
    def _ordered(self) -> Triangular:
        if not self.low <= self.mode <= self.high:
            raise ValueError(
                f"needs low <= mode <= high (got {self.low:g}, {self.mode:g}, {self.high:g})"
            )
        return self


class Normal(Strict):
    sd: NonNegFloat = Field(description="standard deviation, in the input's unit")
    mean: float | None = Field(default=None, description="null: the scenario's value")
    low: float | None = Field(default=None, description="clip draws below this")
    high: float | None = Field(default=None, description="clip draws above this")

    @model_validator(mode="after")
    def _ordered(self) -> Normal:
        if self.low is not None and self.high is not None and self.high < self.low:
            raise ValueError(f"bounds reversed: low {self.low:g} > high {self.high:g}")
        return self


class Lognormal(Strict):
    cv: NonNegFloat = Field(
        description="coefficient of variation; the mean is the scenario's value"
    )


class Relative(Strict):
    """A factor on the scenario's value, triangular between ``low`` and ``high``."""

    low: PositiveFloat
    mode: PositiveFloat = 1.0
    high: PositiveFloat

    @model_validator(mode="after")
    def _ordered(self) -> Relative:
        if not self.low <= self.mode <= self.high:
            raise ValueError(
                f"needs low <= mode <= high (got {self.low:g}, {self.mode:g}, {self.high:g})"
            )
        return self


class LogUniform(Strict):
    low: PositiveFloat
    high: PositiveFloat

    @model_validator(mode="after")
    def _ordered(self) -> LogUniform:
        if self.high < self.low:
            raise ValueError(f"bounds reversed: low {self.low:g} > high {self.high:g}")
        return self


class Distribution(Strict):
    """One uncertain input: exactly one of the kinds, or ``fixed: true`` (not sampled)."""

    uniform: Uniform | None = None
    triangular: Triangular | None = None
    normal: Normal | None = None
    lognormal: Lognormal | None = None
    relative: Relative | None = None
    log_uniform: LogUniform | None = None
    fixed: StrictBool = False

    @model_validator(mode="after")
    def _exactly_one(self) -> Distribution:
        kinds = [k for k in DISTRIBUTION_KINDS if getattr(self, k) is not None]
        if self.fixed and kinds:
            raise ValueError(f"fixed: true takes no distribution (got {kinds})")
        if not self.fixed and len(kinds) != 1:
            raise ValueError(
                f"give exactly one of {', '.join(DISTRIBUTION_KINDS)} or fixed: true"
                + (f" (got {kinds})" if kinds else "")
            )
        return self


DISTRIBUTION_KINDS = ("uniform", "triangular", "normal", "lognormal", "relative", "log_uniform")


class Uncertainty(Strict):
    """What ``pddplan robust`` samples: defaults per kind of estimate, and explicit inputs.

    Keys of ``inputs`` are override PATHs (``chips.gpu-b.price_usd_per_hour``, ``rate_rps``,
    ``workload.hit_rate.shift``); they are checked against the scenario when it is sampled.
    """

    source: Source = Field(default="pddplan defaults (docs/robust.md)")
    defaults: StrictBool = Field(
        default=True,
        description="sample every key listed under estimated: with the default of its kind, "
        "plus the rate and the hit-rate shift (docs/robust.md)",
    )
    inputs: dict[str, Distribution] = Field(default_factory=dict)


class Inventory(Strict):
    """Chips already owned, and how they and any further chips are priced."""

    owned: dict[str, NonNegInt] = Field(
        default_factory=dict, description="chip profile name -> chips owned; used first"
    )
    owned_cost: Literal["amortized", "sunk"] = Field(
        default="amortized",
        description="amortized: an owned chip costs its price.capex_usd spread over "
        "amortization_years (plus opex); sunk: only the opex",
    )
    amortization_years: PositiveFloat = Field(
        default=4.0, description="years over which a purchased chip's capex is spread"
    )
    opex_usd_per_chip_hour: NonNegFloat = Field(
        default=0.0, description="power, cooling and hosting of an owned or bought chip [USD/h]"
    )
    additional: Literal["rent", "buy"] = Field(
        default="rent",
        description="chips beyond the owned ones: rented (rental_usd_per_hour) or bought "
        "(amortized capex_usd plus opex; reported as new purchases)",
    )


class Scenario(Strict):
    kind: Literal["scenario"] = "scenario"
    name: str
    description: str = ""
    model: str
    workload: Annotated[
        Annotated[str, Tag("Name")] | Annotated[Workload, Tag("Workload")],
        Discriminator(
            lambda v: "Workload" if isinstance(v, dict | Workload) else "Name",
        ),
    ] = Field(description="a workload profile's name, or a workload given inline")
    link: str = Field(description="WAN link profile between datacenter A and B")
    rdma: str = Field(description="intra-datacenter RDMA link profile")
    roles: Roles
    baseline: Baseline | None = None
    sla: Sla
    serving: Serving = Field(default_factory=Serving)
    rate_rps: Rate | None = Field(default=None, description="target request rate")
    limits: Limits = Field(default_factory=Limits)
    inventory: Inventory = Field(default_factory=Inventory)
    revenue: Revenue | None = None
    overrides: dict[str, dict[str, dict[str, object]]] = Field(
        default_factory=dict,
        description="kind -> profile name -> fields to replace (deep-merged before validation)",
    )
    uncertainty: Uncertainty | None = Field(
        default=None, description="input distributions for `pddplan robust` (docs/robust.md)"
    )


KINDS: dict[str, type[Strict]] = {
    "chip": Chip,
    "model": Model,
    "link": Link,
    "workload": Workload,
    "scenario": Scenario,
}
KIND_DIRS = {"chip": "chips", "model": "models", "link": "links", "workload": "workloads"}


for _cls in (LognormalLength, EmpiricalLength, HitRateDist, Anomalous, Workload, Scenario):
    _cls.model_rebuild()
