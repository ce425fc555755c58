"""MoE step latencies at small batches, published, against ``pddplan step``'s physics.

Each row names its source, the setup as published, the measured figure and the tolerance (20%).
Rows the model misses are strict xfails with the gap measured when the test was written; the
test still computes them, so a fix that moves them in turns the xfail into a failure to update.

Source
------
- tenstorrent/tt-inference-server issue #356 ("DeepSeek-R1-0528: GPU Benchmarks"), comment of
  2025-07-09, "Performance Benchmark Sweeps for DeepSeek-R1-0528 on 16 H100 (SGLANG +
  INFINIBAND)": two 8 x H100 nodes over InfiniBand, SGLang, FP8 weights (the checkpoint's own),
  concurrency 1, output 128 tokens: TTFT and TPOT per input length. One request at a time, so
  TTFT is one prefill of ISL tokens (plus the client's request overhead) and TPOT one decode step
  at batch 1. The layout is not stated: tensor parallel 16 over both nodes (SGLang's ``--tp 16
  --nnodes 2``, the setup the issue lists) is assumed; no multi-token prediction (not enabled by
  default).
- sgl-project/sglang PR #14764 ("Enable TRT Allreduce Fusion by default for compatible models",
  2025-12-10), description: ``python -m sglang.bench_one_batch --model-path DeepSeek-V3.1
  --tp-size 8 --batch-size 16 --input-len 512 --output-len 512 --mem-fraction-static 0.8`` on
  8 x H200, with ``--enable-flashinfer-allreduce-fusion``: "Prefill. latency: 0.28894 s" (one
  prefill of 16 x 512 tokens; 0.28827 s without the fusion) and "Decode. median latency:
  0.01620 s" (batch 16, context 512-1,024: 768 taken). Pure tensor parallelism 8 (no DP
  attention, no EP flags), FP8 block-scaled checkpoint (V3.1 has V3's architecture), no MTP.
- sgl-project/sglang PR #3237 ("[ROCm] Enable Fused MLA Triton kernel for DeepSeekV3"),
  comment of 2025-02-24: ``python -m sglang.bench_one_batch --batch-size 4 --input 2048 --output
  256 --model deepseek-ai/DeepSeek-V3 --tp 8`` on 8 x MI300X, without the fusion: "Decode.
  median latency: 0.03850 s" (batch 4, context 2,048-2,304: 2,176 taken).
- vllm-project/vllm PR #13932 ("Add option to use DeepGemm contiguous grouped gemm kernel for
  fused MoE operations", 2025-02-26), "H100 results": ``benchmarks/kernels/benchmark_moe.py
  --dtype=fp8_w8a8 -tp T --model deepseek-ai/DeepSeek-V3`` (one fused-MoE layer, E=256, top-8,
  K=7168, N = 4096/T; random routing), Triton kernel time per call at 128, 1,024 and 2,048 tokens,
  TP4 and TP8: kernel-level, compared with the model's routed-expert term of one MoE layer.

Model vs measured at three points: before the routed experts' activation traffic (3d3162d),
with it (8eb7e8f), and now, with the grouped GEMMs' reduction depth (models/compute.py
expert_depth_factors) and the cross-node ring over every NIC of a node
(models/collectives.py ring_link_bytes_per_s); kernel rows' 3d3162d figures with the profile's
routing skew, the others with uniform routing as the benchmark:

=================================== ========== ============== ============== ==============
row                                 measured   3d3162d        8eb7e8f        now
=================================== ========== ============== ============== ==============
16 x H100 prefill 2,048 (#356)      190.5 ms   182.7 (-4%)    196.6 (+3%)    63.1 (-67%)
16 x H100 prefill 3,072 (#356)      200.4 ms                  285.7 (+43%)   84.4 (-58%)
16 x H100 prefill 4,096 (#356)      199.7 ms                  375.5 (+88%)   106.4 (-47%)
16 x H100 decode batch 1 (#356)     23.3-23.7                 5.93-5.96      5.97-6.00
H200 TP8 prefill 16 x 512 (#14764)  288.9 ms   146.7 (-49%)   163.9 (-43%)   197.3 (-32%)
H200 TP8 decode batch 16 (#14764)   16.20 ms   12.68 (-22%)   12.76 (-21%)   13.73 (-15%)
MI300X TP8 decode batch 4 (#3237)   38.50 ms   12.26 (-68%)   12.28 (-68%)   12.28 (-68%)
H100 TP4 fused MoE 128 tok (#13932) 3,121 us   1,010 (-68%)   1,050 (-66%)   1,116 (-64%)
H100 TP4 fused MoE 1,024 tok        3,547 us                  1,183 (-67%)   1,250 (-65%)
H100 TP4 fused MoE 2,048 tok        5,231 us   1,052 (-80%)   1,315 (-75%)   1,382 (-74%)
H100 TP8 fused MoE 128 tok          1,732 us   505 (-71%)     532 (-69%)     594 (-66%)
H100 TP8 fused MoE 1,024 tok        1,893 us                  649 (-66%)     713 (-62%)
H100 TP8 fused MoE 2,048 tok        2,819 us   526 (-81%)     773 (-73%)     836 (-70%)
=================================== ========== ============== ============== ==============

The depth: under tensor parallelism the experts' down GEMM reduces over the sliced intermediate
width (DeepSeek's I = 2,048 over TP8: K = 256), where a tiled GEMM's fixed cost per output tile
is large against its main loop. DeepGEMM's dense FP8 GEMMs on H800 measure it (K = 512 at 590
TFLOPS against 1,358 at K = 16,384, M = 4,096; the chip profiles' depth fits, K_half 720
compute-bound and 86 weight-read-bound), which makes the TP8 experts' compute 1.69x the grouped
curve's and their weight read 1.12x: the H200 decode row comes within 20%, the prefill row and
the kernel rows move in by 3-11 points. The ring: a tensor-parallel ring over two nodes ran at
one NIC's bandwidth (42.5 GB/s), where NCCL runs one ring per NIC side by side (its maintainers:
a multi-node ring's busbw is all of a node's NICs, 46-48 GB/s each at 400 Gbit/s), 8x slow on
these nodes; with it the 16 x H100 prefill falls from 160 ms of all-reduce to 22 ms at 2,048
tokens (58.3 / 78.3 / 99.0 ms with the ring alone). Its 2,048 row passed before for the wrong
reason: the measured TTFT grows by 9 ms from 2,048 to 4,096 tokens (and falls from 3,072 to
4,096), about the 2 x 37 B x 2,048 FLOPs / 16 GPUs ~ 9.5 TFLOP per GPU the extra tokens cost at
the FP8 peak, so ~180 ms of it is fixed and outside any step whose work grows with the tokens.

The kernel rows say the rest of their gap is that kernel itself: at 128 tokens (weight-read
bound) the Triton kernel streams the expert weights at ~0.8-0.9 TB/s on H100 at every TP width
(TP1 12.5 ms for 11.3 GB), ~27% of the HBM peak, where the model with the depth fit streams the
sliced experts at 0.71 (TP8) to 0.75 (TP4) of it. That kernel (February 2025, default configs)
is not taken as the chip's grouped-GEMM memory efficiency: SGLang's December 2025 H200 decode
row above (16.2 ms for 61 layers at batch 16) could not be reached with expert weights streamed
at 27% (the touched experts' read alone, 8.1 ms at 0.80, would be 24 ms), so the kernel figure
describes that kernel and not today's; no measurement of a current fused-MoE kernel at TP-sliced
shapes is at hand.
"""

from __future__ import annotations

import dataclasses

import pytest

from pddplan.deployment import Instance, Layout, model_numbers
from pddplan.io.loader import Registry
from pddplan.models import compute
from pddplan.step import make_layout, step

TOLERANCE = 0.20
OUTPUT_TOKENS = 128
#: (ISL tokens, TTFT ms, TPOT ms) at concurrency 1 from the source's table.
SGLANG_16XH100 = {2048: (190.5, 23.3), 3072: (200.4, 23.6), 4096: (199.7, 23.7)}

DECODE_GAP = (
    "model ~6.0 ms vs 23.3-23.7 ms measured (-75%): the batch-1 step is the layers' kernel "
    "latencies (61 x 25 us, estimated), two all-reduces per layer over InfiniBand and the touched "
    "experts' weights; SGLang's serving loop (scheduler, sampling, detokenization between steps "
    "at concurrency 1) and the cross-node all-reduce's real latency are not in it. Before the "
    "per-expert change (main 4cd7738) the model said 12.4 ms (-47%): the curve extrapolated below "
    "one token per expert inflated it; it was never right for the right reason"
)
PREFILL_GAP = (
    "model 63.1 / 84.4 / 106.4 ms at 2,048 / 3,072 / 4,096 tokens (-67% / -58% / -47%) vs a flat "
    "190.5 / 200.4 / 199.7 ms: the measurement grows 9 ms from 2,048 to 4,096 tokens, about what "
    "the extra tokens' FLOPs cost at the FP8 peak, so ~180 ms of it is fixed (client, scheduler; "
    "the layout is not published) and outside the model. The 2,048 row passed (196.6 ms) while "
    "the cross-node ring ran at one NIC's bandwidth, 8x slow (160 ms of all-reduce): right for "
    "the wrong reason"
)


@pytest.fixture(scope="module")
def rows() -> dict[int, tuple[float, float]]:
    reg = Registry.default()
    model = reg.load("model", "deepseek-v3").model_copy(update={"speculative": None})
    chip = reg.load("chip", "h100-sxm")
    out = {}
    for isl in SGLANG_16XH100:
        r = step(chip, model, make_layout(16, None, None, False), 1, isl, isl + OUTPUT_TOKENS // 2)
        out[isl] = (r.prefill_s * 1e3, r.decode_step_s * 1e3)
    return out


@pytest.mark.xfail(strict=True, reason=PREFILL_GAP)
@pytest.mark.parametrize("isl", sorted(SGLANG_16XH100))
def test_prefill_within_tolerance(rows: dict[int, tuple[float, float]], isl: int) -> None:
    assert rows[isl][0] == pytest.approx(SGLANG_16XH100[isl][0], rel=TOLERANCE)


@pytest.mark.xfail(strict=True, reason=DECODE_GAP)
@pytest.mark.parametrize("isl", sorted(SGLANG_16XH100))
def test_decode_batch1_within_tolerance(rows: dict[int, tuple[float, float]], isl: int) -> None:
    assert rows[isl][1] == pytest.approx(SGLANG_16XH100[isl][1], rel=TOLERANCE)


def test_batch1_decode_reads_only_touched_experts() -> None:
    """DeepSeek-V3 at batch 1 on 8 x H200: the routed experts' term is the 8 touched experts'
    weight read, not a grouped GEMM over all 256 experts (the curve is not extrapolated below one
    token per expert): decode is not compute-bound, and batch 8 costs more than batch 1."""
    reg = Registry.default()
    model = reg.load("model", "deepseek-v3").model_copy(update={"speculative": None})
    chip = reg.load("chip", "h200-sxm")
    one = step(chip, model, make_layout(8, None, None, False), 1, 1024, 1024)
    eight = step(chip, model, make_layout(8, None, None, False), 8, 1024, 1024)
    assert one.decode_parts_s["compute"] == 0.0
    assert eight.decode_step_s > one.decode_step_s


#: SGLang PR #14764, 8 x H200, DeepSeek-V3.1, TP8: (batch, input, decode context, prefill ms,
#: decode median ms).
SGLANG_H200_TP8 = (16, 512, 768, 288.94, 16.20)
#: SGLang PR #3237, 8 x MI300X, DeepSeek-V3, TP8: (batch, input, decode context, decode ms).
SGLANG_MI300X_TP8 = (4, 2048, 2176, 38.50)
#: vLLM PR #13932, H100, one DeepSeek-V3 fused-MoE layer, Triton: {TP: {tokens: us}}.
VLLM_FUSED_MOE_H100 = {
    4: {128: 3121.16, 1024: 3546.83, 2048: 5230.76},
    8: {128: 1732.33, 1024: 1892.75, 2048: 2818.65},
}

TP8_PREFILL_GAP = (
    "model 197.3 ms vs 288.9 ms (-32%; -43% before the grouped GEMMs' reduction depth, -49% "
    "before the experts' activation traffic): with TP8 the experts' down GEMM reduces over "
    "K = 256, costed from DeepGEMM's dense-GEMM depth fit (1.69x the grouped curve's compute, "
    "1.12x the weight read); the rest is not traced, as no measurement of a current fused-MoE "
    "kernel at TP8-sliced shapes is at hand"
)
MI300X_DECODE_GAP = (
    "model 12.3 ms vs 38.5 ms (-68%): ROCm SGLang of February 2025 (before its fused MLA decode "
    "and tuned MoE kernels); the model has no term for an immature software stack"
)
KERNEL_GAP = (
    "model's routed-expert term of one layer is 62-74% under vLLM's February 2025 Triton "
    "fused-MoE kernel at TP4/TP8 (66-75% before the GEMMs' reduction depth): that kernel streams "
    "expert weights at ~27% of HBM peak at every TP width; the model, with DeepGEMM's depth fit, "
    "0.71-0.75 (see the module docstring for why)"
)


def _deepseek(chip_name: str, reg: Registry):
    model = reg.load("model", "deepseek-v3").model_copy(update={"speculative": None})
    return reg.load("chip", chip_name), model


def _tp8_step(chip_name: str, batch: int, isl: int, ctx: int):
    chip, model = _deepseek(chip_name, Registry.default())
    return step(chip, model, make_layout(8, None, None, False), batch, isl, ctx)


@pytest.mark.xfail(strict=True, reason=TP8_PREFILL_GAP)
def test_sglang_h200_tp8_prefill_within_tolerance() -> None:
    b, isl, ctx, prefill_ms, _ = SGLANG_H200_TP8
    r = _tp8_step("h200-sxm", b, isl, ctx)
    assert r.prefill_s * 1e3 == pytest.approx(prefill_ms, rel=TOLERANCE)


def test_sglang_h200_tp8_decode_within_tolerance() -> None:
    """Within 20% since the experts' GEMMs carry their reduction depth (13.73 ms, -15%; 12.76,
    -21%, before)."""
    b, isl, ctx, _, decode_ms = SGLANG_H200_TP8
    r = _tp8_step("h200-sxm", b, isl, ctx)
    assert r.decode_step_s * 1e3 == pytest.approx(decode_ms, rel=TOLERANCE)


@pytest.mark.xfail(strict=True, reason=MI300X_DECODE_GAP)
def test_sglang_mi300x_tp8_decode_within_tolerance() -> None:
    b, isl, ctx, decode_ms = SGLANG_MI300X_TP8
    r = _tp8_step("mi300x", b, isl, ctx)
    assert r.decode_step_s * 1e3 == pytest.approx(decode_ms, rel=TOLERANCE)


def _fused_moe_layer_us(tp: int, tokens: int) -> float:
    """The model's routed experts of one MoE layer of DeepSeek-V3 on TP-``tp`` H100 [us]:
    grouped GEMMs' roofline plus the memory-bound kernels between and after them, uniform
    routing as the benchmark's random gating."""
    reg = Registry.default()
    chip, model = _deepseek("h100-sxm", reg)
    m = dataclasses.replace(model_numbers(model), expert_shares=None)
    inst = Instance(chip, m, tp, 0.9, Layout(tp))
    shape, lay = inst.step_shape, inst.layout_numbers
    c, mem = compute.routed_expert_s(float(tokens), 1.0, shape, lay)
    _, between = compute.expert_elementwise_s(float(tokens), 1.0, shape, lay)
    return float(max(c, mem) + between) / shape.moe_layers * 1e6


@pytest.mark.xfail(strict=True, reason=KERNEL_GAP)
@pytest.mark.parametrize(
    ("tp", "tokens"), [(t, n) for t in sorted(VLLM_FUSED_MOE_H100) for n in (128, 1024, 2048)]
)
def test_vllm_fused_moe_kernel_within_tolerance(tp: int, tokens: int) -> None:
    measured = VLLM_FUSED_MOE_H100[tp][tokens]
    assert _fused_moe_layer_us(tp, tokens) == pytest.approx(measured, rel=TOLERANCE)


def test_expert_term_grows_with_tokens_at_tp8() -> None:
    """Under TP8 the rows' traffic makes the routed-expert layer time grow from 128 to 2,048
    tokens even where the weight read bounds the GEMMs (as the kernel measurements do: 1.73 to
    2.82 ms), where weights alone would leave it flat."""
    assert _fused_moe_layer_us(8, 2048) > 1.3 * _fused_moe_layer_us(8, 128)
