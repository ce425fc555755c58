"""Binds specs to model calls: the only module that knows both the specs and the models.

It turns a chip + model + instance size into the numbers the models take (SI units), and a
workload into request classes (hit rate x input length x output length, with weights).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from pddplan import units
from pddplan.models import architecture as arch
from pddplan.models import compute, memory, network
from pddplan.spec import (
    Chip,
    CompressedAttention,
    EmpiricalLength,
    FixedLength,
    GqaAttention,
    HitRateDist,
    LengthDist,
    Link,
    LognormalLength,
    MlaAttention,
    Model,
    MoeFfn,
    Workload,
)

#: Bytes of one handed-over token: int64 token ID + fp32 log-probability + int32 position.
#: An assumed wire layout (estimate); the brief measures ~1.5 KB for 100 tokens.
TOKEN_ID_BYTES_PER_TOKEN = 16.0
#: Extend-pass chunk: MD extends all handed-over tokens in one step.
EXTEND_CHUNK_TOKENS = 1 << 30


# ------------------------------------------------------------------------------------ links


@dataclass(frozen=True)
class LinkNumbers:
    """A link (WAN line or RDMA fabric) in SI numbers: the only form the timing sees.

    ``tcp`` is False for an RDMA fabric: no slow start, no window or loss ceiling.
    """

    name: str
    bandwidth_gbit_per_s: float
    goodput_bytes_per_s: float
    rtt_s: float
    setup_rtts: float  # [-] set-up round trips on a cold connection
    jitter_cv: float
    price_usd_per_hour: float
    tcp: bool = True
    connection_reuse: bool = True
    slow_start_after_idle: bool = True
    per_transfer_latency_s: float = 0.0
    initial_window_segments: int = 10
    mss_bytes: float = 1448.0
    max_window_bytes: float = 4_194_304.0
    loss_rate: float = 0.0
    streams_per_transfer: int = 1

    @classmethod
    def of(cls, link: Link, bandwidth_scale: float = 1.0) -> LinkNumbers:
        bw = link.bandwidth_gbit_per_s * bandwidth_scale
        return cls(
            name=link.name,
            bandwidth_gbit_per_s=bw,
            goodput_bytes_per_s=float(
                network.link_goodput_bytes_per_s(
                    units.gbit_per_s_to_bytes_per_s(bw), link.efficiency
                )
            ),
            rtt_s=units.ms_to_s(link.rtt_ms),
            setup_rtts=link.setup_rtts,
            jitter_cv=link.jitter_cv,
            price_usd_per_hour=units.usd_per_month_to_usd_per_hour(link.price_usd_per_month),
            tcp=link.type == "wan",
            connection_reuse=link.connection_reuse,
            slow_start_after_idle=link.slow_start_after_idle,
            per_transfer_latency_s=units.ms_to_s(link.per_transfer_latency_ms),
            initial_window_segments=link.initial_window_segments,
            mss_bytes=float(link.mss_bytes),
            max_window_bytes=float(link.max_window_bytes),
            loss_rate=link.loss_rate,
            streams_per_transfer=link.streams_per_transfer,
        )

    @property
    def handshake_rtts(self) -> float:
        """Set-up round trips a transfer pays: none on a pooled connection [-]."""
        return 0.0 if self.connection_reuse else self.setup_rtts

    @property
    def slow_starts(self) -> bool:
        """Whether a transfer starts from the initial window.

        A TCP transfer slow-starts on a new connection, and on a pooled one when slow start
        after idle is on (the Linux default; transfers of one pair of hosts are seconds apart,
        well past the retransmission timeout, so the window has collapsed to the initial one).
        """
        return self.tcp and (not self.connection_reuse or self.slow_start_after_idle)

    @property
    def initial_window_bytes(self) -> float:
        """Initial window of all streams of one transfer [bytes] (``inf``: no slow start)."""
        if not self.slow_starts:
            return math.inf
        return float(self.streams_per_transfer * self.initial_window_segments * self.mss_bytes)

    def transfer_params(self) -> dict[str, float]:
        """Keyword arguments of :func:`pddplan.models.network.transfer_phases` for this link."""
        if not self.tcp:
            return {
                "goodput_bytes_per_s": self.goodput_bytes_per_s,
                "rtt_s": self.rtt_s,
                "handshake_rtts": self.handshake_rtts,
                "latency_s": self.per_transfer_latency_s,
            }
        return {
            "goodput_bytes_per_s": self.goodput_bytes_per_s,
            "rtt_s": self.rtt_s,
            "handshake_rtts": self.handshake_rtts,
            "latency_s": self.per_transfer_latency_s,
            "initial_window_bytes": self.initial_window_bytes,
            "max_window_bytes": self.max_window_bytes,
            "mss_bytes": self.mss_bytes,
            "loss_rate": self.loss_rate,
            "streams": float(self.streams_per_transfer),
        }

    @property
    def rate_cap_bytes_per_s(self) -> float:
        """The most one transfer can take of the idle link [bytes/s]."""
        if not self.tcp:
            return self.goodput_bytes_per_s
        return float(
            network.transfer_rate_cap_bytes_per_s(
                self.goodput_bytes_per_s,
                self.rtt_s,
                self.max_window_bytes,
                self.mss_bytes,
                self.loss_rate,
                self.streams_per_transfer,
            )
        )

    @property
    def line_efficiency(self) -> float:
        """Goodput over line rate [-]."""
        return self.goodput_bytes_per_s / units.gbit_per_s_to_bytes_per_s(self.bandwidth_gbit_per_s)


# ------------------------------------------------------------------------------------ model


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


def model_numbers(m: Model) -> ModelNumbers:
    a = m.architecture
    att = a.attention
    kvb = units.DTYPE_BYTES[m.dtypes.kv_cache]
    if isinstance(att, GqaAttention):
        att_params = float(
            arch.gqa_attention_params(a.hidden_size, att.heads, att.kv_heads, att.head_dim)
        )
        kv_tok = float(memory.gqa_kv_bytes_per_token(a.layers, att.kv_heads, att.head_dim, kvb))
        kv_seq = 0.0
        pair = float(
            arch.attention_flops_per_token_per_context(
                a.layers, att.heads, att.head_dim, att.head_dim
            )
        )
        decode_pair = 0.0
        latent, kv_heads = False, att.kv_heads
    elif isinstance(att, MlaAttention):
        att_params = float(
            arch.mla_attention_params(
                a.hidden_size,
                att.heads,
                att.kv_lora_rank,
                att.qk_rope_head_dim,
                att.qk_nope_head_dim,
                att.v_head_dim,
                att.q_lora_rank,
            )
        )
        kv_tok = float(
            memory.mla_kv_bytes_per_token(a.layers, att.kv_lora_rank, att.qk_rope_head_dim, kvb)
        )
        kv_seq = 0.0
        pair = float(
            arch.attention_flops_per_token_per_context(
                a.layers, att.heads, att.qk_nope_head_dim + att.qk_rope_head_dim, att.v_head_dim
            )
        )
        # Decode absorbs the key and value up-projections into the query and output projections
        # (DeepSeek-V2 report, arXiv 2405.04434, section 2.1.2), so each of the H query heads
        # scores the d_c + d_rope latent key and sums d_c-wide latent values: FlashMLA's decode
        # kernel does 2 H (576 + 512) FLOPs per (query, key) pair for DeepSeek-V3 (its tests count
        # FLOPS = s_q * total_seqlens * h_q * (d + dv) * 2 with d = 576, dv = 512), 3.4x the
        # 2 H (192 + 128) of prefill's unabsorbed form.
        decode_pair = float(
            arch.attention_flops_per_token_per_context(
                a.layers, att.heads, att.kv_lora_rank + att.qk_rope_head_dim, att.kv_lora_rank
            )
        )
        latent, kv_heads = True, 1
    else:
        assert isinstance(att, CompressedAttention)
        att_params = float(arch.gqa_attention_params(a.hidden_size, att.heads, 1, att.head_dim))
        kv_tok = att.kv_bytes_per_token
        kv_seq = att.kv_bytes_per_sequence
        pair = float(
            arch.attention_flops_per_token_per_context(
                a.layers, att.heads, att.head_dim, att.head_dim
            )
        )
        decode_pair = 0.0
        latent, kv_heads = True, 1

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
        dense = a.layers * att_params + dense_ffn + shared_and_router + emb
        total = dense + ffn.experts * expert
        active = dense - emb + lm_head + ffn.top_k * expert
        experts, top_k = ffn.experts, ffn.top_k
    else:
        dense = (
            a.layers
            * (att_params + float(arch.dense_ffn_params(a.hidden_size, ffn.intermediate_size)))
            + emb
        )
        total = dense
        active = dense - emb + lm_head
        expert, experts, top_k = 0.0, 0, 0
    if m.params_override is not None:
        total = m.params_override.total_params
        active = m.params_override.active_params
        if experts > top_k:
            expert = (total - active) / (experts - top_k)
            dense = total - experts * expert
        else:
            dense, expert = total, 0.0
    return ModelNumbers(
        name=m.name,
        layers=a.layers,
        hidden_size=a.hidden_size,
        total_params=total,
        active_params=active,
        dense_params=dense,
        expert_params=expert,
        experts=experts,
        top_k=top_k,
        weight_dtype_bytes=units.DTYPE_BYTES[m.dtypes.weights],
        kv_dtype_bytes=kvb,
        kv_bytes_per_token=kv_tok,
        kv_bytes_per_sequence=kv_seq,
        attention_flops_per_pair=pair,
        decode_attention_flops_per_pair=decode_pair,
        kv_latent=latent,
        kv_heads=kv_heads,
        fp8_compute=m.dtypes.weights in ("fp8", "int8", "fp4", "int4"),
        heads=att.heads,
        moe_layers=(a.layers - ffn.dense_layers) if isinstance(ffn, MoeFfn) else 0,
        input_embedding_params=0.0 if a.tied_embeddings else lm_head,
        lm_head_params=lm_head,
        weight_dtype=m.dtypes.weights,
        attention_dtype_bytes=units.DTYPE_BYTES[m.dtypes.attention],
        draft_tokens=m.speculative.draft_tokens if m.speculative else 0,
        acceptance_rate=m.speculative.acceptance_rate if m.speculative else 0.0,
    )


# ----------------------------------------------------------------------------------- layout

#: Bytes per hidden element of an MoE dispatch in FP8 with one FP32 scale per 128 elements
#: (DeepSeek-V3 technical report, section 3.3.2: 1x128 activation tiles; DeepEP dispatches FP8).
FP8_BLOCK_SCALED_BYTES = 1.0 + 4.0 / 128.0
#: Bytes per hidden element of an MoE combine (DeepEP combines in BF16).
COMBINE_BYTES = 2.0


@dataclass(frozen=True)
class Layout:
    """How an instance's chips share the model: tensor, data-parallel attention, expert parallel.

    ``tensor_parallel`` (``t``) slices attention and the other non-expert weights inside each of
    ``data_parallel`` (``d``) attention groups, so the instance has ``t d`` chips; the routed
    experts are spread over ``expert_parallel`` (``e``) ranks (``e = 1``: every expert is sliced
    over all chips, plain tensor parallelism). ``overlap`` runs two micro-batches whose
    communication hides under each other's compute; ``balancer`` places experts by load (EPLB).
    """

    tensor_parallel: int
    data_parallel: int = 1
    expert_parallel: int = 1
    overlap: bool = False
    balancer: bool = True

    @property
    def chips(self) -> int:
        return self.tensor_parallel * self.data_parallel

    @property
    def is_pure_tp(self) -> bool:
        return self.data_parallel == 1 and self.expert_parallel == 1 and not self.overlap

    @property
    def label(self) -> str:
        if self.is_pure_tp:
            return f"tp{self.tensor_parallel}"
        parts = [f"tp{self.tensor_parallel}"]
        if self.data_parallel > 1:
            parts.append(f"dp{self.data_parallel}")
        if self.expert_parallel > 1:
            parts.append(f"ep{self.expert_parallel}")
        if self.overlap:
            parts.append("tbo")
        return "-".join(parts)

    def problems(self, model: ModelNumbers) -> list[str]:
        """Why this layout cannot run ``model`` (empty when it can), one line each."""
        out: list[str] = []
        t, d, e = self.tensor_parallel, self.data_parallel, self.expert_parallel
        if min(t, d, e) < 1:
            return [f"layout tp={t} dp={d} ep={e}: every size must be at least 1"]
        n = self.chips
        if model.heads % t:
            out.append(f"tp={t} does not divide the model's {model.heads} attention heads")
        if e > 1 and not model.is_moe:
            out.append(f"ep={e} needs a mixture-of-experts model; {model.name} has no experts")
        if e > 1 and n % e:
            out.append(f"ep={e} does not divide the instance's {n} chips (tp={t} x dp={d})")
        if e > 1 and model.is_moe and model.experts % e:
            out.append(f"ep={e} does not divide the model's {model.experts} routed experts")
        return out


def layouts_for(chip: Chip, model: ModelNumbers, chips_per_instance: int) -> list[Layout]:
    """The valid layouts of ``chips_per_instance`` chips of ``chip`` for ``model``.

    Pure tensor parallelism when the heads allow it; for a mixture-of-experts model also expert
    parallelism over all chips with data-parallel attention (``tp = 1``, ``dp = ep = N``, as
    DeepSeek and SGLang serve), with and without two-batch overlap. An instance larger than a
    node needs a scale-out NIC in the chip profile. Layouts that do not fit in memory are kept:
    :attr:`Instance.fits` says which.
    """
    n = int(chips_per_instance)
    ds = chip.datasheet
    if n > ds.chips_per_node and ds.scaleout_bandwidth_gbit_per_s is None:
        return []
    out = [Layout(n)] if not Layout(n).problems(model) else []
    if model.is_moe and n > 1:
        for overlap in (False, True):
            lay = Layout(1, n, n, overlap=overlap)
            if not lay.problems(model):
                out.append(lay)
    return out


# --------------------------------------------------------------------------------- instance


@dataclass(frozen=True)
class Instance:
    """One serving instance: ``tensor_parallel`` chips of one kind running one model replica.

    ``tensor_parallel`` is the number of chips in the instance; ``layout`` says how they share
    the model (default: pure tensor parallelism over all of them).
    """

    chip: Chip
    model: ModelNumbers
    tensor_parallel: int
    memory_utilization: float = 0.9
    layout: Layout | None = None

    def __post_init__(self) -> None:
        if self.layout is None:
            object.__setattr__(self, "layout", Layout(self.tensor_parallel))
        elif self.lay.chips != self.tensor_parallel:
            raise ValueError(
                f"layout {self.lay.label} has {self.lay.chips} chips, "
                f"the instance {self.tensor_parallel}"
            )

    @property
    def lay(self) -> Layout:
        assert self.layout is not None
        return self.layout

    @property
    def label(self) -> str:
        base = f"{self.chip.name}x{self.tensor_parallel}"
        return base if self.lay.is_pure_tp else f"{base}:{self.lay.label}"

    @property
    def price_usd_per_hour(self) -> float:
        return self.chip.price.rental_usd_per_hour * self.tensor_parallel

    @cached_property
    def low_precision(self) -> bool:
        """Whether the GEMMs run at the chip's FP8 (or FP4) rate."""
        return self.model.fp8_compute and self.chip.datasheet.fp8_tflops is not None

    @cached_property
    def peak_flops_per_s(self) -> float:
        """Dense peak of one chip at the weights' precision [FLOP/s]."""
        ds = self.chip.datasheet
        if self.model.weight_dtype in ("fp4", "int4") and ds.fp4_tflops:
            tflops = ds.fp4_tflops
        elif self.low_precision:
            assert ds.fp8_tflops is not None
            tflops = ds.fp8_tflops
        else:
            tflops = ds.bf16_tflops
        return units.tflops_to_flops_per_s(tflops)

    @cached_property
    def attention_peak_flops_per_s(self) -> float:
        """Dense peak of one chip at the attention precision [FLOP/s] (BF16 unless FP8)."""
        ds = self.chip.datasheet
        if self.model.attention_dtype_bytes <= 1.0 and ds.fp8_tflops:
            return units.tflops_to_flops_per_s(ds.fp8_tflops)
        return units.tflops_to_flops_per_s(ds.bf16_tflops)

    @cached_property
    def memory_bytes_per_chip(self) -> float:
        return units.gb_to_bytes(self.chip.datasheet.memory_gb)

    @cached_property
    def weight_bytes_per_chip(self) -> float:
        """Weights resident on each chip [bytes]: non-expert weights sliced ``t`` ways (one copy
        per attention group), routed experts spread over all chips."""
        m = self.model
        expert_total = m.experts * m.expert_params
        dense = m.total_params - expert_total
        return float(
            memory.weight_bytes_per_chip(dense, m.weight_dtype_bytes, self.lay.tensor_parallel)
            + memory.weight_bytes_per_chip(expert_total, m.weight_dtype_bytes, self.tensor_parallel)
        )

    @cached_property
    def kv_bytes_per_token_per_instance(self) -> float:
        """KV per token over the instance [bytes]: replicated only inside an attention group
        (an MLA latent cache is partitioned across data-parallel groups, not copied)."""
        return self.model.kv_bytes_per_token * self.model.kv_replication(self.lay.tensor_parallel)

    @cached_property
    def kv_bytes_per_sequence_per_instance(self) -> float:
        return self.model.kv_bytes_per_sequence * self.model.kv_replication(
            self.lay.tensor_parallel
        )

    @property
    def fits(self) -> bool:
        return not self.why_not() and (
            self.weight_bytes_per_chip < self.memory_bytes_per_chip * self.memory_utilization
        )

    def why_not(self) -> str:
        """Why the instance cannot run, or the empty string (memory aside: see :attr:`fits`)."""
        probs = self.lay.problems(self.model)
        ds = self.chip.datasheet
        if self.tensor_parallel > ds.chips_per_node and ds.scaleout_bandwidth_gbit_per_s is None:
            probs.append(
                f"{self.tensor_parallel} chips span more than one {ds.chips_per_node}-chip node "
                f"and {self.chip.name} has no scale-out bandwidth in its profile"
            )
        return "; ".join(probs)

    @cached_property
    def step_shape(self) -> compute.ModelShape:
        """The model's numbers a layout step takes (:class:`pddplan.models.compute.ModelShape`)."""
        m = self.model
        wb = m.weight_dtype_bytes
        return compute.ModelShape(
            dense_flops_per_token=2.0
            * (m.active_params - m.lm_head_params - m.top_k * m.expert_params),
            lm_head_flops_per_token=2.0 * m.lm_head_params,
            dense_weight_bytes=(m.dense_params - m.input_embedding_params) * wb,
            expert_flops_per_token=2.0 * m.expert_params,
            expert_weight_bytes=m.expert_params * wb,
            experts=m.experts,
            top_k=m.top_k,
            moe_layers=m.moe_layers,
            layers=m.layers,
            hidden_size=m.hidden_size,
            attention_flops_per_pair=m.attention_flops_per_pair,
        )

    @cached_property
    def decode_step_shape(self) -> compute.ModelShape:
        """:attr:`step_shape` with decode's attention FLOPs per pair, where decode runs
        attention in its own form (:attr:`ModelNumbers.decode_attention_flops_per_pair`)."""
        pair = self.model.decode_attention_flops_per_pair
        if not pair:
            return self.step_shape
        return dataclasses.replace(self.step_shape, attention_flops_per_pair=pair)

    @cached_property
    def layout_numbers(self) -> compute.LayoutNumbers:
        """The chips' and the layout's numbers a layout step takes
        (:class:`pddplan.models.compute.LayoutNumbers`)."""
        d = self.chip.derates
        ds = self.chip.datasheet
        lay = self.lay
        eff = d.compute_efficiency
        if self.low_precision and d.fp8_compute_efficiency is not None:
            eff = d.fp8_compute_efficiency
        scaleout = ds.scaleout_bandwidth_gbit_per_s
        up_bytes_per_s = (
            units.gb_per_s_to_bytes_per_s(ds.scaleup_bandwidth_gb_per_s)
            / 2.0
            * d.scaleup_efficiency
        )
        out_bytes_per_s = (
            units.gbit_per_s_to_bytes_per_s(scaleout) * d.scaleout_efficiency
            if scaleout
            else up_bytes_per_s
        )
        # the routed experts' grouped GEMMs run on their own curve where the chip has one
        expert_eff, expert_half = eff, d.compute_half_saturation_tokens
        if self.low_precision and d.fp8_grouped_gemm_efficiency is not None:
            expert_eff = d.fp8_grouped_gemm_efficiency
            if d.fp8_grouped_gemm_half_saturation_tokens is not None:
                expert_half = d.fp8_grouped_gemm_half_saturation_tokens
        skew = compute.EPLB_RESIDUAL_SKEW
        if not lay.balancer:
            skew *= compute.NO_BALANCER_SKEW_FACTOR
        return compute.LayoutNumbers(
            chips=self.tensor_parallel,
            attention_tp=lay.tensor_parallel,
            expert_parallel=lay.expert_parallel,
            ranks_per_node=min(ds.chips_per_node, self.tensor_parallel),
            linear_peak_flops_per_s=self.peak_flops_per_s,
            linear_efficiency=eff,
            half_saturation_tokens=d.compute_half_saturation_tokens,
            expert_efficiency=expert_eff,
            expert_half_saturation_tokens=expert_half,
            attention_peak_flops_per_s=self.attention_peak_flops_per_s,
            attention_efficiency=d.attention_compute_efficiency or d.compute_efficiency,
            memory_bytes_per_s=units.tb_per_s_to_bytes_per_s(ds.memory_bandwidth_tb_per_s)
            * d.memory_bandwidth_efficiency,
            activation_bytes=units.DTYPE_BYTES["bf16"],
            dispatch_bytes_per_element=FP8_BLOCK_SCALED_BYTES
            if self.low_precision
            else units.DTYPE_BYTES["bf16"],
            combine_bytes_per_element=COMBINE_BYTES,
            scaleup_bytes_per_s=up_bytes_per_s,
            scaleout_bytes_per_s=out_bytes_per_s,
            scaleup_latency_s=d.scaleup_latency_us * 1e-6,
            scaleout_latency_s=d.scaleout_latency_us * 1e-6,
            expert_skew=skew,
            layer_latency_s=d.layer_latency_us * 1e-6,
            step_overhead_s=units.ms_to_s(d.step_overhead_ms),
            overlap=lay.overlap,
        )

    @cached_property
    def kv_bytes_per_token_per_chip(self) -> float:
        return self.kv_bytes_per_token_per_instance / self.tensor_parallel

    def step_parts(
        self, tokens, lm_head_tokens, context_token_pairs, context_tokens_read, decode=False
    ):
        """One forward step split by what bounds it (see
        :func:`pddplan.models.compute.layout_step_parts_s`) [s]. ``context_tokens_read`` is the
        total context (tokens of KV) the step reads over the instance; ``decode`` says the step
        is a decode step, whose expert-parallel all-to-all runs on DeepEP's low-latency kernels
        (as DeepSeek's and SGLang's decode instances do) rather than the normal ones, and whose
        attention counts the model's decode form
        (:attr:`ModelNumbers.decode_attention_flops_per_pair`: MLA's weight-absorbed form)."""
        kv = np.asarray(context_tokens_read, dtype=float) * self.kv_bytes_per_token_per_chip
        parts = compute.layout_step_parts_s(
            tokens,
            lm_head_tokens,
            context_token_pairs,
            kv,
            self.decode_step_shape if decode else self.step_shape,
            self.layout_numbers,
            low_latency_alltoall=bool(decode),
        )
        return {
            "compute_s": parts.compute_s,
            "memory_s": parts.memory_s,
            "communication_s": parts.communication_s,
            "latency_s": parts.latency_s,
            "total_s": parts.total_s,
        }

    def _step_s(self, tokens, lm_head_tokens, pairs, context_tokens_read):
        return self.step_parts(tokens, lm_head_tokens, pairs, context_tokens_read)["total_s"]

    def prefill_s(self, uncached_tokens, cached_tokens, chunk_size_tokens: int):
        """Prefill time [s] of ``uncached_tokens`` over a cached prefix (arrays broadcast).

        Chunks are spread over the data-parallel attention groups, so with ``d > 1`` this is the
        instance time per request at full load, not one request's latency alone."""
        return compute.chunked_prefill_time_s(
            uncached_tokens, cached_tokens, chunk_size_tokens, self._step_s
        )

    def decode_parts(self, batch, context_tokens):
        """One decode step of ``batch`` sequences at ``context_tokens``, split by what bounds it
        [s] (a step verifies the drafted tokens too when the model drafts)."""
        b = np.asarray(batch, dtype=float)
        c = np.asarray(context_tokens, dtype=float)
        s = 1.0 + self.model.draft_tokens
        seq_kv = self.kv_bytes_per_sequence_per_instance / self.tensor_parallel
        parts = self.step_parts(b * s, b * s, b * s * c, b * c, decode=True)
        if seq_kv:
            extra = (
                b
                * seq_kv
                / (
                    units.tb_per_s_to_bytes_per_s(self.chip.datasheet.memory_bandwidth_tb_per_s)
                    * self.chip.derates.memory_bandwidth_efficiency
                )
            )
            parts = dict(parts)
            parts["memory_s"] = parts["memory_s"] + extra
            parts["total_s"] = parts["total_s"] + extra
        return parts

    def decode_step_s(self, batch, context_tokens):
        """Decode time per output token of each of ``batch`` sequences at ``context_tokens`` [s]:
        the step time over the tokens a step emits (1 without multi-token prediction)."""
        return (
            self.decode_parts(batch, context_tokens)["total_s"] / self.model.tokens_per_decode_step
        )

    def extend_s(self, tokens, context_tokens):
        """MD's extend pass [s]: rebuild the KV of ``tokens`` handed-over tokens in one step."""
        return self.prefill_s(tokens, context_tokens, EXTEND_CHUNK_TOKENS)

    def extend_affine(self, context_tokens: float) -> tuple[float, float]:
        """``e(k) ~ e_0 + e_1 k`` fitted through k = 1 and k = 256 [s], [s/token]."""
        key = float(context_tokens)
        cache = self._extend_cache
        if key not in cache:
            e1, e256 = (float(v) for v in self.extend_s(np.array([1.0, 256.0]), context_tokens))
            slope = (e256 - e1) / 255.0
            cache[key] = (e1 - slope, slope)
        return cache[key]

    @cached_property
    def _extend_cache(self) -> dict[float, tuple[float, float]]:
        return _physics_cache(self.physics_key, "extend")

    def max_batch_memory(self, context_tokens: float) -> int:
        """Largest number of sequences at ``context_tokens`` whose KV fits [-] (at least one
        token of context per sequence is assumed; capped at 2^20)."""
        b = memory.max_batch_in_memory(
            max(float(context_tokens), 1.0),
            self.memory_bytes_per_chip,
            self.tensor_parallel,
            self.memory_utilization,
            self.weight_bytes_per_chip,
            self.kv_bytes_per_token_per_instance,
            self.kv_bytes_per_sequence_per_instance,
        )
        return int(min(float(b), float(1 << 20)))

    def max_batch_at_tpot(self, context_tokens: float, tpot_s: float) -> int:
        """Largest batch that fits in memory and steps within ``tpot_s`` at a context [-]."""
        key = (float(context_tokens), float(tpot_s))
        cache = self._batch_cache
        if key not in cache:
            b_mem = self.max_batch_memory(context_tokens)
            cache[key] = compute.max_batch_at_step_time(
                lambda b: self.decode_step_s(b, context_tokens), tpot_s, min(b_mem, 1 << 16)
            )
        return cache[key]

    @cached_property
    def _batch_cache(self) -> dict[tuple[float, float], int]:
        return _physics_cache(self.physics_key, "batch")

    @cached_property
    def physics_key(self) -> tuple[Any, ...]:
        """What the instance's timings depend on: not the price. Equal keys share caches."""
        return (
            self.chip.datasheet.model_dump_json(exclude={"source", "estimated"}),
            self.chip.derates.model_dump_json(exclude={"source", "estimated"}),
            self.model,
            self.tensor_parallel,
            self.memory_utilization,
            self.layout,
        )

    def cache(self, name: str) -> dict[Any, Any]:
        """A memo table shared by every instance of the same physics (see :attr:`physics_key`)."""
        return _physics_cache(self.physics_key, name)

    def offline_output_tokens_per_s_per_chip(
        self,
        input_tokens: float,
        output_tokens: float,
        max_batch: int = 2048,
        chunk_size_tokens: int = 8192,
    ) -> float:
        """Offline (max-throughput) output tokens/s per chip, prefill and decode on the same chips.

        Notes
        -----
        The batch is the largest that fits in memory at the mean context ``I + O/2`` (capped at
        the engine's ``max_batch``); each request costs its prefill plus ``O`` decode steps shared
        with ``B - 1`` others: ``T = t_prefill(I) + O t_step(B, I + O/2) / B`` instance-seconds,
        so the throughput per chip is ``O / (T tp)``. This is how published offline benchmarks
        (in-flight batching, all requests queued at once) are set up.
        """
        ctx = input_tokens + output_tokens / 2.0
        b = min(self.max_batch_memory(ctx), max_batch)
        if b < 1:
            return 0.0
        per_request_s = (
            float(self.prefill_s(input_tokens, 0.0, chunk_size_tokens))
            + output_tokens * float(self.decode_step_s(b, ctx)) / b
        )
        return output_tokens / per_request_s / self.tensor_parallel


_PHYSICS: dict[tuple[Any, ...], dict[str, dict[Any, Any]]] = {}
_PHYSICS_MAX = 4096


def _physics_cache(key: tuple[Any, ...], name: str) -> dict[Any, Any]:
    """Memo tables keyed by an instance's physics, so that what-if points that change only
    prices (or nothing the instance sees) reuse its timings."""
    tables = _PHYSICS.get(key)
    if tables is None:
        if len(_PHYSICS) >= _PHYSICS_MAX:
            _PHYSICS.clear()
        tables = _PHYSICS[key] = {}
    return tables.setdefault(name, {})


# ---------------------------------------------------------------------------------- workload


@dataclass(frozen=True)
class RequestClasses:
    """A workload discretized into classes; arrays of equal length, weights summing to 1."""

    hit_rate: np.ndarray
    input_tokens: np.ndarray
    output_tokens: np.ndarray
    weight: np.ndarray
    anomalous: np.ndarray  # bool
    routing_edges: np.ndarray | None = None  # hit-rate bin edges, where the workload has bins

    @property
    def cached_tokens(self) -> np.ndarray:
        """Prefix tokens served from the cache; the last input token is always computed (its
        logits give the first output token)."""
        return cached_prefix_tokens(self.input_tokens, self.hit_rate)

    @property
    def uncached_tokens(self) -> np.ndarray:
        return self.input_tokens - self.cached_tokens

    def __len__(self) -> int:
        return len(self.weight)

    @cached_property
    def key(self) -> tuple[bytes, ...]:
        """Content key of the classes (for memo tables)."""
        return (
            self.hit_rate.tobytes(),
            self.input_tokens.tobytes(),
            self.output_tokens.tobytes(),
            self.weight.tobytes(),
            self.anomalous.tobytes(),
        )


def cached_prefix_tokens(input_tokens, hit_rate):
    """Cached prefix of a request [tokens]: ``min(floor(L h), L - 1)``."""
    li = np.asarray(input_tokens, dtype=float)
    return np.minimum(np.floor(li * np.asarray(hit_rate, dtype=float)), li - 1.0)


def length_points(dist: LengthDist, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Discretize a length distribution into at most ``n`` equal-probability points."""
    if isinstance(dist, FixedLength):
        return np.array([float(dist.fixed)]), np.ones(1)
    if isinstance(dist, LognormalLength):
        p = dist.lognormal
        sigma = np.sqrt(np.log1p(p.cv**2))
        # each of n equal-probability slices is represented by its conditional mean, so the
        # discretized mean equals the distribution's: E[X | slice i] = n m (Phi(z_{i+1} - s) -
        # Phi(z_i - s)) with z the slice's standard-normal bounds
        z = np.concatenate([[-np.inf], network.normal_ppf(np.arange(1, n) / n), [np.inf]])
        vals = n * p.mean * np.diff(network.normal_cdf(z - sigma))
        vals = np.clip(np.round(vals), p.min, p.max if p.max is not None else np.inf)
        return vals, np.full(n, 1.0 / n)
    assert isinstance(dist, EmpiricalLength)
    vals = np.asarray(dist.empirical.values, dtype=float)
    w = np.asarray(
        dist.empirical.weights if dist.empirical.weights else np.ones(len(vals)), dtype=float
    )
    v, wv = _compress(vals, w / w.sum(), n)
    return np.round(v), wv


def _compress(values: np.ndarray, weights: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Reduce a weighted sample to ``n`` points: the weighted mean of each probability slice."""
    order = np.argsort(values)
    v, w = values[order], weights[order]
    if len(v) <= n:
        return v, w
    cum = np.cumsum(w)
    idx = np.minimum((cum - w / 2) * n, n - 1).astype(int)
    out_v = np.array(
        [
            np.average(v[idx == i], weights=w[idx == i]) if np.any(idx == i) else np.nan
            for i in range(n)
        ]
    )
    out_w = np.array([w[idx == i].sum() for i in range(n)])
    keep = out_w > 0
    return out_v[keep], out_w[keep]


def hit_rate_points(
    dist: HitRateDist, points_per_bin: int, n_continuous: int = 24
) -> tuple[np.ndarray, np.ndarray]:
    """Discretize a hit-rate distribution into (hit rates, weights), transforms applied."""
    if dist.bins is not None:
        e = np.asarray(dist.bins.edges, dtype=float)
        pr = np.asarray(dist.bins.probabilities, dtype=float)
        sub = (np.arange(points_per_bin) + 0.5) / points_per_bin
        h = (e[:-1, None] + (e[1:] - e[:-1])[:, None] * sub[None, :]).ravel()
        w = np.repeat(pr / points_per_bin, points_per_bin)
    elif dist.beta is not None:
        q = (np.arange(n_continuous) + 0.5) / n_continuous
        from scipy import special  # only beta workloads pay for the import

        h = special.betaincinv(dist.beta.a, dist.beta.b, q)
        w = np.full(n_continuous, 1.0 / n_continuous)
    else:
        s = np.asarray(dist.samples, dtype=float)
        h, w = _compress(s, np.full(len(s), 1.0 / len(s)), n_continuous)
    h = np.clip((h + dist.shift) * dist.scale, 0.0, 1.0)
    if dist.mix_with is not None and dist.mix_weight > 0:
        h2, w2 = hit_rate_points(dist.mix_with, points_per_bin, n_continuous)
        h = np.concatenate([h, h2])
        w = np.concatenate([w * (1 - dist.mix_weight), w2 * dist.mix_weight])
    keep = w > 0
    return h[keep], w[keep] / w[keep].sum()


def request_classes(
    wl: Workload, points_per_bin: int = 3, n_length: int = 3, anomalous_filter: bool = True
) -> RequestClasses:
    """The workload as weighted classes; anomalous requests are flagged (and kept) separately.

    Memoized on the workload's content (the arrays are shared: callers must not modify them).
    """
    key = (
        wl.model_dump_json(exclude={"source", "notes"}),
        points_per_bin,
        n_length,
        anomalous_filter,
    )
    hit = _CLASSES.get(key)
    if hit is None:
        if len(_CLASSES) > 256:
            _CLASSES.clear()
        hit = _CLASSES[key] = _request_classes(wl, points_per_bin, n_length, anomalous_filter)
    return hit


_CLASSES: dict[tuple[Any, ...], RequestClasses] = {}


def _request_classes(
    wl: Workload, points_per_bin: int, n_length: int, anomalous_filter: bool
) -> RequestClasses:
    h, wh = hit_rate_points(wl.hit_rate, points_per_bin)
    li, wi = length_points(wl.input_tokens, n_length)
    lo, wo = length_points(wl.output_tokens, n_length)
    H, LI, LO = np.meshgrid(h, li, lo, indexing="ij")
    W = wh[:, None, None] * wi[None, :, None] * wo[None, None, :]
    share = wl.anomalous.share if wl.anomalous is not None else 0.0
    hit = [H.ravel()]
    inp = [LI.ravel()]
    out = [LO.ravel()]
    wts = [W.ravel() * (1 - share)]
    anom = [np.zeros(W.size, dtype=bool)]
    if wl.anomalous is not None and share > 0:
        ai, awi = length_points(wl.anomalous.input_tokens, n_length)
        ao, awo = length_points(wl.anomalous.output_tokens, n_length)
        AI, AO = np.meshgrid(ai, ao, indexing="ij")
        AW = awi[:, None] * awo[None, :] * share
        hit.append(np.full(AI.size, wl.anomalous.hit_rate))
        inp.append(AI.ravel())
        out.append(AO.ravel())
        wts.append(AW.ravel())
        anom.append(np.full(AI.size, anomalous_filter))
    edges = None
    if wl.hit_rate.bins is not None and wl.hit_rate.mix_with is None:
        e = np.asarray(wl.hit_rate.bins.edges, dtype=float)
        edges = np.unique(np.clip((e + wl.hit_rate.shift) * wl.hit_rate.scale, 0.0, 1.0))
    return RequestClasses(
        routing_edges=edges,
        hit_rate=np.concatenate(hit),
        input_tokens=np.concatenate(inp),
        output_tokens=np.concatenate(out),
        weight=np.concatenate(wts),
        anomalous=np.concatenate(anom),
    )
