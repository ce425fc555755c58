"""The chip profile: datasheet peaks, prices and empirical derates, each group sourced."""

from typing import Annotated, Literal

from pydantic import Field

from pddplan.spec.base import (
    Efficiency,
    Gb,
    Gbit,
    GbPerS,
    Micros,
    Millis,
    PositiveUsd,
    Sourced,
    Strict,
    TbPerS,
    Tflops,
)


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
    memory_bandwidth_efficiency: Efficiency = Field(
        description="share of the memory bandwidth that decode's weight and KV streaming reaches"
    )
    scaleup_efficiency: Efficiency = Field(
        description="share of the scale-up bandwidth that collectives reach"
    )
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
    fp8_grouped_gemm_half_depth_elements: Annotated[float, Field(ge=0.0, le=1e6)] | None = Field(
        default=None,
        description="reduction depth K (elements) at which a compute-bound FP8 grouped GEMM "
        "reaches half its deep-K efficiency (a fixed cost per output tile); null: no depth effect",
    )
    fp8_grouped_gemm_memory_half_depth_elements: Annotated[float, Field(ge=0.0, le=1e6)] | None = (
        Field(
            default=None,
            description="reduction depth K (elements) at which a weight-read-bound FP8 grouped GEMM "
            "streams its weights at half its deep-K bandwidth; null: no depth effect",
        )
    )
    bf16_grouped_gemm_efficiency: Efficiency | None = Field(
        default=None,
        description="large-shape fraction of the BF16 peak reached by the routed experts' "
        "grouped GEMMs (MoE) with BF16 weights; null: the linear-layer curve",
    )
    bf16_grouped_gemm_half_saturation_tokens: Annotated[float, Field(ge=1e-3, le=1e7)] | None = (
        Field(
            default=None,
            description="tokens per expert at which the BF16 grouped-GEMM efficiency is half its "
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
    moe_routing_latency_us: Micros = Field(
        default=0.0,
        description="kernels of one fused-MoE call that a dense FFN does not run (routing "
        "top-k, token-to-expert alignment, sum over the k experts) under CUDA-graph replay at "
        "decode sizes (1-32 tokens), in microseconds, once per MoE layer of a step whose "
        "experts are not expert-parallel; 0: not modelled",
    )
    gemm_k_block_latency_us: Micros = Field(
        default=0.0,
        description="time of one 128-deep K block of a grouped GEMM's tile loop when latency "
        "binds it (decode-sized expert GEMMs, few tiles in flight), in microseconds: each of "
        "the routed experts' two GEMMs reads its weights in at least its K blocks times this; "
        "0: no such floor",
    )
    scaleup_step_latency_us: Micros = Field(
        default=0.0,
        description="latency of one ring step of a bulk-protocol scale-up all-reduce, in "
        "microseconds (2 (n - 1) steps over n ranks); 0: a single alpha",
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
