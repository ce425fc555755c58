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
- sgl-project/sglang PR #11730 ("add tuned fuse moe kernel for qwen3 235b fp8 on h200",
  2025-10-16), description: ``benchmark/kernels/fused_moe_triton/tuning_fused_moe_triton.py
  --model Qwen/Qwen3-235B-A22B-Instruct-2507 --tp-size 8 --dtype fp8_w8a8`` on H200, "Without
  tuned kernel" (SGLang's default config for block FP8: BLOCK_SIZE_M 64, N 128, K 128): one
  fused-MoE layer (E=128, top-8, K=4,096, N = 2 x 1,536 / 8), kernel time per call at 1, 2, 4, 8,
  16, 24 and 32 tokens: 31.70 / 36.56 / 49.67 / 66.87 / 92.36 / 117.38 / 124.99 us. Decode-sized
  calls of a fused-MoE kernel of late 2025 at a TP8-sliced shape; random routing (the script's
  random gating), compared with the model's routed-expert term of one MoE layer as the vLLM rows.
- vllm-project/vllm PR #24700 ("[Perf] Improve default fused moe configs by analyzing tuned
  configs", 2025-09-11), "Benchmarks on H100": ``benchmarks/kernels/benchmark_moe.py`` (one
  fused-MoE layer, random routing, CUDA-graph replay), kernel time per call:
  ``--model=mistralai/Mixtral-8x7B-Instruct-v0.1 -tp=2`` in BF16 with vLLM's tuned config for
  that shape (E=8, top-2, K=4,096, N = 2 x 14,336 / 2) at 1 to 1,536 tokens, 144.03 us to
  1,122.93 us; ``--model=Qwen/Qwen3-30B-A3B -tp=1 --dtype=fp8_w8a8`` (E=128, top-8, K=2,048,
  N = 2 x 768, FP8 per-tensor) on the vLLM main of that day ("Main", no tuned config for the
  shape: its default config) at 1 to 4,096 tokens, 44.54 us to 1,647.57 us. Few large experts
  at TP2 and many small ones without slicing, both on H100 (profiles mixtral-8x7b and
  qwen3-30b-a3b, from the checkpoints' HF configs).
- vllm-project/vllm PR #36559 ("[Kernel] Add swap AB optimization to fused_moe_kernel",
  2026-03-09, merged), "Micro bench on H200": ``benchmarks/kernels/benchmark_moe.py --model
  deepseek-ai/DeepSeek-R1-0528 --dtype fp8_w8a8`` (no ``-tp``: the script's default, 2; E=256,
  top-8, K=7,168, N = 2 x 2,048 / 2, block-scaled FP8), the PR's kernel (swap-AB for small
  M tiles, in vLLM since), kernel time per call at 1, 2, 4, 8, 16, 24 and 32 tokens: 73.48 /
  107.08 / 183.13 / 339.56 / 546.49 / 715.77 / 847.41 us. A fused-MoE kernel of 2026 at a
  decode-sized DeepSeek-V3 shape.
- SemiAnalysisAI/InferenceX issue #870 ("deepseek sglang h200 experimental"), comment of
  2026-03-05 (the project's CI bot reporting workflow run 22737795957): DeepSeek-R1-0528, SGLang
  v0.5.7, FP8, TP8 with EP1 (no DP attention) on 8 x H200, ``bench_serving`` random 1,024 input /
  8,192 output tokens at concurrency 4: mean TPOT 10.93 ms (P99 11.10). Four requests decode side
  by side for 8,192 steps each; a new request's 1,024-token prefill (TTFT 204 ms) comes once per
  ~90 s of decode, so TPOT is one decode step at batch 4 (context 1,024-9,216: 5,120 taken) plus
  whatever the serving loop adds per step (SGLang's overlap scheduler hides most of it). MTP is
  not enabled in this configuration (the MTP runs are separate configurations in that project).
  The same issue's concurrency sweep (comment of 2026-03-05, workflow run 22740679519, same
  software and layout), 1,024 input / 1,024 output tokens at concurrency 8: mean TPOT 12.8 ms
  (P99 14.3): decode at batch 8 (context 1,024-2,048: 1,536 taken), with a 1,024-token prefill
  of a new request every ~1.7 s (597 output tokens/s over 1,024-token outputs) stalling the
  decodes: at ~60-100 ms each, 4-6% of the TPOT. The higher concurrencies (17.2 / 25.6 / 34.6 ms
  at 16 / 32 / 64) carry more of those stalls and are not taken.

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

Rows added at 9d83921 (model as of that commit, uniform routing for the kernel rows):

=================================== ========== ==============
row                                 measured   9d83921
=================================== ========== ==============
H200 TP8 Qwen3 fused MoE 1 tok      31.70 us   6.5 (-79%)
H200 TP8 Qwen3 fused MoE 2 tok      36.56 us   12.7 (-65%)
H200 TP8 Qwen3 fused MoE 4 tok      49.67 us   23.8 (-52%)
H200 TP8 Qwen3 fused MoE 8 tok      66.87 us   42.3 (-37%)
H200 TP8 Qwen3 fused MoE 16 tok     92.36 us   67.9 (-27%)
H200 TP8 Qwen3 fused MoE 24 tok     117.38 us  83.4 (-29%)
H200 TP8 Qwen3 fused MoE 32 tok     124.99 us  92.9 (-26%)
H200 TP8 DeepSeek decode batch 4    10.93 ms   7.34 (-33%)
H200 TP8 DeepSeek decode batch 8    12.8 ms    9.72 (-24%)
=================================== ========== ==============

The vLLM PR #24700 kernel rows on H100 (model as of 9d83921, uniform routing):

===================== ========== ============ ===================== ========== ============
Mixtral BF16 TP2      measured   model        Qwen3-30B FP8 TP1     measured   model
===================== ========== ============ ===================== ========== ============
1 tok                 144.03 us  131.5 (-9%)  1 tok                 44.54 us   15.1 (-66%)
2                     229.28     230.2 (+0%)  2                     59.94      29.2 (-51%)
4                     351.10     359.8 (+2%)  4                     90.46      54.8 (-39%)
8                     434.98     473.9 (+9%)  8                     129.77     97.3 (-25%)
16                    471.49     522.0 (+11%) 16                    185.40     155.5 (-16%)
24                    478.27     527.4 (+10%) 24                    215.99     190.4 (-12%)
32                    487.35     528.5 (+8%)  32                    238.37     211.4 (-11%)
48                    487.85     530.0 (+9%)  48                    257.83     231.9 (-10%)
64                    483.14     531.3 (+10%) 64                    262.73     239.8 (-9%)
96                    494.42     534.1 (+8%)  96                    270.98     244.9 (-10%)
128                   491.39     536.8 (+9%)  128                   273.72     247.1 (-10%)
256                   536.77     547.8 (+2%)  256                   355.49     254.3 (-28%)
512                   662.33     569.7 (-14%) 512                   391.86     268.4 (-31%)
1,024                 833.72     761.3 (-9%)  1,024                 536.33     296.8 (-45%)
1,536                 1,122.93   1,037 (-8%)  1,536                 727.31     325.1 (-55%)
                                              2,048                 911.64     353.5 (-61%)
                                              3,072                 1,279.17   459.7 (-64%)
                                              4,096                 1,647.57   567.9 (-66%)
===================== ========== ============ ===================== ========== ============

Mixtral's fifteen rows pass: with eight experts of 176 MB each on a rank, the call is the
weights' read (the plateau of 471-494 us at 16-128 tokens is 1.41 GB at 2.9 TB/s, 0.87 of HBM,
where the model reads at 0.80) and then their FLOPs. Qwen3-30B's rows from 16 to 128 tokens
pass; below 16 they miss by the same near-constant 26-36 us as the Qwen3-235B rows on H200
(below), and from 256 tokens up the default config runs the GEMMs far under the chip (309
GFLOP per call at 4,096 tokens in 1.65 ms, 187 TFLOPS, 9% of the FP8 peak; the PR's own
defaults run 512 tokens in 286 us against main's 392): that describes the untuned kernel, not
the chip's grouped GEMMs, and the rows are strict xfails.

The vLLM PR #36559 rows, DeepSeek-V3's experts at TP2 on H200 (model as of 9d83921, uniform
routing): 73.48 / 107.08 / 183.13 / 339.56 / 546.49 / 715.77 / 847.41 us measured at 1 / 2 / 4 /
8 / 16 / 24 / 32 tokens, model 47.6 (-35%) / 93.8 (-12%) / 181.8 (-1%) / 341.9 (+1%) / 607.3
(+11%) / 813.4 (+14%) / 973.4 (+15%): six of seven within 20%. A kernel of 2026 streams
DeepSeek's sliced experts at the rate the model takes (its 8-token row reads ~57 experts' 22 MB
slices, 1.25 GB, in 340 us: 3.7 TB/s, 0.77 of HBM), where vLLM's kernel of February 2025 (the
TP4/TP8 rows above) streamed them at ~27%. The one-token row missed by the same ~26 us per call
as the Qwen3 rows below (-11% now, with the call's fixed costs).

The Qwen3-235B kernel rows missed by a near-constant amount, not a ratio: measured minus model
was 25.2 / 23.9 / 25.9 / 24.6 / 24.5 / 34.0 / 32.1 us from 1 to 32 tokens while the model's own
term grew from 6.5 to 93 us; the Qwen3-30B rows on H100 showed the same offset (~30 us from 1 to
128 tokens) and DeepSeek-V3's one-token row at TP2 on H200 ~26 us. What the model counted (the
touched experts' weights read at 0.80 of HBM, the GEMMs' depth and their rows' traffic) tracks
the growth; what it lacked is the call's fixed part, which benchmarks/gpu_fused_moe.py measured
apart on one H200 (2026-12-04; figures in benchmarks/measured/fused-moe-h200.json). That script
runs a block-scaled FP8 fused-MoE call written after SGLang's and vLLM's Triton ``fused_moe``
(top-k routing, token alignment, input quantization, gate-up grouped GEMM, SiLU-and-multiply
with its quantization, down grouped GEMM, sum over the ``k`` experts) under CUDA-graph replay,
the whole call and each kernel alone, with cold weights. Its whole call is within 10% of vLLM's
measured DeepSeek-V3 TP2 kernel at 1-32 tokens (66.9 / 105.6 / 184.7 / 309.9 / 532.1 / 729.8 /
846.7 us) and at or under SGLang's default-config Qwen3-235B TP8 kernel (31.7 / 36.6 / 45.9 /
59.5 / 78.2 / 92.6 / 98.8 us against 31.7 to 125.0), so it stands for the kernels measured. The
split: a kernel that only stores one value costs 0.6-1.3 us a launch in a graph; the routing,
alignment and sum kernels, which a dense FFN does not run, 7.5-11.6 us a call at 1-32 tokens
(median 8.6 over the three shapes); the quantization and activation kernels ~1.3-2 us each; and
a grouped GEMM at one token walks its K loop: a sweep of the gate-up GEMM over K = 512 to 16,384
(benchmarks/measured/fused-moe-ksweep-h200.json) gives 2.5 us + 0.36 us per 128-deep K block,
where the bytes alone would take 0.4-13 us. At one token Qwen3's gate-up GEMM walks K = 4,096
in 32 blocks: 14.5 us for 12.6 MB that the bytes alone read in 3.3 us. The model now carries
the routing kernels once per MoE layer where the experts are not expert-parallel
(``moe_routing_latency_us`` 8.6, models/compute.py step_latency_s) and each GEMM's K-loop floor
under its weight read (``gemm_k_block_latency_us`` 0.36, expert_k_loop_floor_s), on the NVIDIA
profiles (measured on H200, taken for the others; tests/validation/test_fused_moe_derates.py
recomputes both from the figures). The GEMM, quantization and activation kernels' fixed parts
stay in the estimated layer floor (25 us for a layer's ~11 kernels), of which a kernel-level
comparison here adds the FFN kernels' share (4 of 11 in FP8, 3 in BF16, 9.1 and 6.8 us:
:func:`_fused_moe_layer_us`), so these rows test measured terms and an estimated one together.
In a step, DeepSeek-V3's 58 MoE layers add 0.50 ms: the H200 decode rows move from -33% / -24%
to -28% / -20.1% (batch 4 / 8), still outside; the rest is not traced.

Kernel rows before (the routed term alone, as at 9d83921) and now (the call with its fixed
costs), uniform routing:

=================================== ========== ============== ==============
row                                 measured   before         now
=================================== ========== ============== ==============
H200 TP8 Qwen3 fused MoE 1 tok      31.70 us   6.5 (-79%)     31.6 (-0%)
H200 TP8 Qwen3 fused MoE 2 tok      36.56 us   12.7 (-65%)    33.9 (-7%)
H200 TP8 Qwen3 fused MoE 4 tok      49.67 us   23.8 (-52%)    41.5 (-16%)
H200 TP8 Qwen3 fused MoE 8 tok      66.87 us   42.3 (-37%)    60.0 (-10%)
H200 TP8 Qwen3 fused MoE 16 tok     92.36 us   67.9 (-27%)    85.5 (-7%)
H200 TP8 Qwen3 fused MoE 24 tok     117.38 us  83.4 (-29%)    101.0 (-14%)
H200 TP8 Qwen3 fused MoE 32 tok     124.99 us  92.9 (-26%)    110.6 (-12%)
H200 TP2 DeepSeek fused MoE 1 tok   73.48 us   47.6 (-35%)    65.3 (-11%)
H200 TP2 DeepSeek 2 / 32 tok        107 / 847  93.8 / 973     111.5 (+4%) / 991.1 (+17%)
H100 TP1 Qwen3-30B 1 / 2 tok        44.5 / 59.9 15.1 / 29.2   32.8 (-26%) / 46.9 (-22%)
H100 TP1 Qwen3-30B 4 / 8 tok        90.5 / 129.8 54.8 / 97.3  72.5 (-19.8%) / 115.0 (-11%)
H100 TP2 Mixtral 1 / 16-128 tok     144.0 / 471-494 131.5 / 522-537 147.0 (+2%) / +11% to +14%
H200 TP8 DeepSeek decode batch 4    10.93 ms   7.34 (-33%)    7.84 (-28%)
H200 TP8 DeepSeek decode batch 8    12.8 ms    9.72 (-24%)    10.22 (-20.1%)
H200 TP8 decode batch 16 (#14764)   16.20 ms   13.73 (-15%)   14.23 (-12%)
=================================== ========== ============== ==============

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
describes that kernel and not today's. vLLM's kernel of March 2026 (PR #36559, above) bears
that out at the TP2 shape, streaming the sliced experts at ~0.77 of HBM; SGLang's of October
2025 at the TP8 shape (PR #11730) is measured at decode sizes only (1-32 tokens). At prefill
sizes and the TP8 shapes the only measurement is this repository's own (the last rows below:
benchmarks/gpu_fused_moe.py on one H200): within 20% of the model at 512 and 2,048 tokens, and
1.35-1.53x the model at 8,192, where its Triton GEMMs run at 0.17-0.19 of the FP8 peak; how
close a tuned engine's kernel comes to the model's DeepGEMM-derived curve there is not measured.
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
    "model ~7.3 ms vs 23.3-23.7 ms measured (-69%): the batch-1 step is the layers' kernel "
    "latencies (61 x 25 us, estimated; 58 MoE layers x 8.6 us of routing kernels), two all-reduces per layer over InfiniBand and the touched "
    "experts' weights; SGLang's serving loop (scheduler, sampling, detokenization between steps "
    "at concurrency 1) and the cross-node all-reduce's real latency are not in it. Before the "
    "per-expert change (main 4cd7738) the model said 12.4 ms (-47%): the curve extrapolated below "
    "one token per expert inflated it; it was never right for the right reason"
)
PREFILL_GAP = (
    "model 63.6 / 84.9 / 106.9 ms at 2,048 / 3,072 / 4,096 tokens (-67% / -58% / -46%) vs a flat "
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
    "model 197.8 ms vs 288.9 ms (-32%; -43% before the grouped GEMMs' reduction depth, -49% "
    "before the experts' activation traffic): with TP8 the experts' down GEMM reduces over "
    "K = 256, costed from DeepGEMM's dense-GEMM depth fit (1.69x the grouped curve's compute, "
    "1.12x the weight read). A Triton fused-MoE call measured at this TP8 shape on one H200 "
    "(benchmarks/gpu_fused_moe.py, best of six tile configs) takes 2.32 ms a layer at 8,192 "
    "tokens where the model says 1.72 ms (its GEMMs at 0.19 of the FP8 peak): were SGLang's "
    "kernel as slow, 58 layers would add 35 ms and the row would read -19%; the rest (attention, "
    "all-reduces at prefill size) is not traced"
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
    """Within 20% since the experts' GEMMs carry their reduction depth (14.23 ms, -12%, with the
    fused-MoE call's routing kernels; 13.73, -15%, without; 12.76, -21%, before the depth)."""
    b, isl, ctx, _, decode_ms = SGLANG_H200_TP8
    r = _tp8_step("h200-sxm", b, isl, ctx)
    assert r.decode_step_s * 1e3 == pytest.approx(decode_ms, rel=TOLERANCE)


@pytest.mark.xfail(strict=True, reason=MI300X_DECODE_GAP)
def test_sglang_mi300x_tp8_decode_within_tolerance() -> None:
    b, isl, ctx, decode_ms = SGLANG_MI300X_TP8
    r = _tp8_step("mi300x", b, isl, ctx)
    assert r.decode_step_s * 1e3 == pytest.approx(decode_ms, rel=TOLERANCE)


#: Kernels of a layer the profiles' ``layer_latency_us`` covers ("~10-12", their sources) and,
#: of them, those a fused-MoE call shares with a dense FFN: the gate-up GEMM, the activation and
#: the down GEMM, plus the input's quantization where the experts run in FP8.
KERNELS_PER_LAYER = 11
FFN_KERNELS_BF16, FFN_KERNELS_FP8 = 3, 4


def _fused_moe_layer_us(
    tp: int,
    tokens: int,
    model_name: str = "deepseek-v3",
    chip_name: str = "h100-sxm",
    call_fixed_costs: bool = True,
) -> float:
    """The model's fused-MoE call of one MoE layer on TP-``tp`` chips [us], uniform routing as
    the benchmark's random gating (DeepSeek-V3 on H100 unless named): the grouped GEMMs'
    roofline (with their K-loop floor), the memory-bound kernels between and after them, the
    call's routing kernels (``moe_routing_latency_us``) and its FFN kernels' share of the
    layer's kernel floor, as a step counts them (``call_fixed_costs=False``: the routing kernels,
    the floor's share and the K-loop floor left out, as the model was before they were
    measured)."""
    reg = Registry.default()
    model = reg.load("model", model_name).model_copy(update={"speculative": None})
    chip = reg.load("chip", chip_name)
    m = dataclasses.replace(model_numbers(model), expert_shares=None)
    inst = Instance(chip, m, tp, 0.9, Layout(tp))
    shape, lay = inst.step_shape, inst.layout_numbers
    if not call_fixed_costs:
        lay = dataclasses.replace(lay, gemm_k_block_latency_s=0.0)
    c, mem = compute.routed_expert_s(float(tokens), 1.0, shape, lay)
    _, between = compute.expert_elementwise_s(float(tokens), 1.0, shape, lay)
    if not call_fixed_costs:
        return float(max(c, mem) + between) / shape.moe_layers * 1e6
    ffn = FFN_KERNELS_FP8 if lay.expert_input_bytes_per_element < 2.0 else FFN_KERNELS_BF16
    fixed_s = lay.moe_routing_latency_s + ffn * lay.layer_latency_s / KERNELS_PER_LAYER
    return (float(max(c, mem) + between) / shape.moe_layers + fixed_s) * 1e6


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


#: SGLang PR #11730, one H200, one Qwen3-235B-A22B fused-MoE layer (FP8 block-scaled, TP8
#: shape), Triton kernel with SGLang's default config: {tokens: us}.
SGLANG_QWEN3_FUSED_MOE_H200_TP8 = {
    1: 31.70,
    2: 36.56,
    4: 49.67,
    8: 66.87,
    16: 92.36,
    24: 117.38,
    32: 124.99,
}
#: InferenceX issue #870, 8 x H200, DeepSeek-R1-0528, SGLang v0.5.7, TP8: (batch, input,
#: decode context, mean TPOT ms).
INFERENCEX_H200_TP8_DECODE = (4, 1024, 5120, 10.93)
#: The same issue's 1,024 / 1,024 sweep at concurrency 8: (batch, input, context, mean TPOT ms).
INFERENCEX_H200_TP8_DECODE_CONC8 = (8, 1024, 1536, 12.8)

INFERENCEX_DECODE_GAP = (
    "model 7.84 ms vs 10.93 ms mean TPOT (-28%; -33% before the fused-MoE call's routing kernels, "
    "58 MoE layers x 8.6 us measured on H200): memory 3.53, all-reduce 1.28, latency floor 3.02 "
    "ms; the rest (the serving loop's per-step cost, the attention side's fixed costs) is not "
    "traced"
)
INFERENCEX_DECODE_CONC8_GAP = (
    "model 10.22 ms vs 12.8 ms mean TPOT (-20.1%; -24% before the fused-MoE call's routing "
    "kernels; about -16% against the TPOT less the 4-6% that new requests' prefills stall it): "
    "the same untraced per-step cost as the batch-4 row"
)


@pytest.mark.parametrize("tokens", sorted(SGLANG_QWEN3_FUSED_MOE_H200_TP8))
def test_sglang_qwen3_fused_moe_kernel_within_tolerance(tokens: int) -> None:
    """Qwen3-235B's experts at the TP8 shape on H200: -16% to -0% from 1 to 32 tokens with the
    call's routing kernels and the GEMMs' K-loop floor (-79% to -26% without them)."""
    measured = SGLANG_QWEN3_FUSED_MOE_H200_TP8[tokens]
    model_us = _fused_moe_layer_us(8, tokens, "qwen3-235b-a22b", "h200-sxm")
    assert model_us == pytest.approx(measured, rel=TOLERANCE)


def test_qwen3_kernel_rows_need_the_call_fixed_costs() -> None:
    """Without the measured routing kernels and K-loop floor the 1-4-token Qwen3-235B rows fall
    back outside 20% (the 24-34 us per call they missed): the two terms are what closes them."""
    for n in (1, 2, 4):
        bare = _fused_moe_layer_us(8, n, "qwen3-235b-a22b", "h200-sxm", call_fixed_costs=False)
        assert bare < (1.0 - TOLERANCE) * SGLANG_QWEN3_FUSED_MOE_H200_TP8[n]


@pytest.mark.xfail(strict=True, reason=INFERENCEX_DECODE_GAP)
def test_inferencex_h200_tp8_decode_within_tolerance() -> None:
    b, isl, ctx, tpot_ms = INFERENCEX_H200_TP8_DECODE
    r = _tp8_step("h200-sxm", b, isl, ctx)
    assert r.decode_step_s * 1e3 == pytest.approx(tpot_ms, rel=TOLERANCE)


@pytest.mark.xfail(strict=True, reason=INFERENCEX_DECODE_CONC8_GAP)
def test_inferencex_h200_tp8_decode_conc8_within_tolerance() -> None:
    b, isl, ctx, tpot_ms = INFERENCEX_H200_TP8_DECODE_CONC8
    r = _tp8_step("h200-sxm", b, isl, ctx)
    assert r.decode_step_s * 1e3 == pytest.approx(tpot_ms, rel=TOLERANCE)


#: vLLM PR #24700, one H100, one fused-MoE layer per call: {tokens: us}.
VLLM_MIXTRAL_FUSED_MOE_H100_TP2 = {
    1: 144.03,
    2: 229.28,
    4: 351.10,
    8: 434.98,
    16: 471.49,
    24: 478.27,
    32: 487.35,
    48: 487.85,
    64: 483.14,
    96: 494.42,
    128: 491.39,
    256: 536.77,
    512: 662.33,
    1024: 833.72,
    1536: 1122.93,
}
VLLM_QWEN3_30B_FUSED_MOE_H100_TP1 = {
    1: 44.54,
    2: 59.94,
    4: 90.46,
    8: 129.77,
    16: 185.40,
    24: 215.99,
    32: 238.37,
    48: 257.83,
    64: 262.73,
    96: 270.98,
    128: 273.72,
    256: 355.49,
    512: 391.86,
    1024: 536.33,
    1536: 727.31,
    2048: 911.64,
    3072: 1279.17,
    4096: 1647.57,
}
QWEN3_30B_SMALL_GAP = (
    "model 32.8 / 46.9 us at 1 / 2 tokens vs 44.5 / 59.9 us (-26% / -22%; -66% / -51% before the "
    "call's routing kernels and the layer floor's share): vLLM's untuned September 2025 kernel "
    "on H100, with the fixed costs measured on H200 and taken for H100; 4 and 8 tokens now pass"
)
QWEN3_30B_LARGE_GAP = (
    "model 254 to 568 us at 256 to 4,096 tokens vs 355 to 1,648 us (-28% to -66%): vLLM's default "
    "config of September 2025 for this shape (no tuned config) ran 4,096 tokens at 9% of the FP8 "
    "peak; an untuned kernel, not the chip's grouped-GEMM efficiency"
)


@pytest.mark.parametrize("tokens", sorted(VLLM_MIXTRAL_FUSED_MOE_H100_TP2))
def test_vllm_mixtral_fused_moe_kernel_within_tolerance(tokens: int) -> None:
    """Eight large BF16 experts at TP2 on H100 (tuned Triton kernel): -14% to +11%."""
    measured = VLLM_MIXTRAL_FUSED_MOE_H100_TP2[tokens]
    model_us = _fused_moe_layer_us(2, tokens, "mixtral-8x7b", "h100-sxm")
    assert model_us == pytest.approx(measured, rel=TOLERANCE)


def _qwen3_30b_case(tokens: int):
    if tokens < 4:
        return pytest.param(
            tokens, marks=pytest.mark.xfail(strict=True, reason=QWEN3_30B_SMALL_GAP)
        )
    if tokens > 128:
        return pytest.param(
            tokens, marks=pytest.mark.xfail(strict=True, reason=QWEN3_30B_LARGE_GAP)
        )
    return tokens


@pytest.mark.parametrize(
    "tokens", [_qwen3_30b_case(n) for n in sorted(VLLM_QWEN3_30B_FUSED_MOE_H100_TP1)]
)
def test_vllm_qwen3_30b_fused_moe_kernel_within_tolerance(tokens: int) -> None:
    """128 small FP8 experts without slicing on H100: within 20% from 4 to 128 tokens
    (-19.8% to -2%; the 4-token row is a margin case, 0.2 points inside); see the module
    docstring for the rows outside."""
    measured = VLLM_QWEN3_30B_FUSED_MOE_H100_TP1[tokens]
    model_us = _fused_moe_layer_us(1, tokens, "qwen3-30b-a3b", "h100-sxm")
    assert model_us == pytest.approx(measured, rel=TOLERANCE)


#: vLLM PR #36559, one H200, one DeepSeek-R1 fused-MoE layer at the TP2 shape (the script's
#: default), swap-AB Triton kernel: {tokens: us}.
VLLM_DEEPSEEK_FUSED_MOE_H200_TP2 = {
    1: 73.48,
    2: 107.08,
    4: 183.13,
    8: 339.56,
    16: 546.49,
    24: 715.77,
    32: 847.41,
}


@pytest.mark.parametrize("tokens", sorted(VLLM_DEEPSEEK_FUSED_MOE_H200_TP2))
def test_vllm_deepseek_fused_moe_h200_kernel_within_tolerance(tokens: int) -> None:
    """DeepSeek-V3's experts at the TP2 shape on H200, a 2026 kernel: -11% to +17% from 1 to 32
    tokens (the one-token row -35% before the call's fixed costs)."""
    measured = VLLM_DEEPSEEK_FUSED_MOE_H200_TP2[tokens]
    model_us = _fused_moe_layer_us(2, tokens, "deepseek-v3", "h200-sxm")
    assert model_us == pytest.approx(measured, rel=TOLERANCE)


#: This repository's own measurement (benchmarks/gpu_fused_moe.py on one H200, 2026-12-04;
#: benchmarks/measured/fused-moe-h200.json and fused-moe-prefill-h200.json): one block-scaled FP8
#: fused-MoE call of seven Triton kernels under CUDA-graph replay, cold weights, random routing,
#: the GEMMs at the fastest of a few tile configs: {(shape, TP): {tokens: us}}. The decode-sized
#: calls carry the alignment kernel (``call_cold_us``); the prefill-sized ones do not (it ran in
#: PyTorch, outside the timing: ``call_without_alignment_us``). The two derates the model takes
#: from this measurement were fitted on other figures of it (the GEMM kernels alone at 1 and 2
#: tokens; the routing kernels alone), so the rows from 4 tokens up test the sum, not the fit.
OWN_H200_DECODE = {
    ("qwen3-235b-a22b", 8): {4: 45.88, 8: 59.49, 16: 78.19, 32: 98.8, 64: 109.0, 128: 118.51},
    ("deepseek-v3", 2): {4: 184.72, 8: 309.94, 16: 532.1, 32: 846.7, 64: 1146.19, 128: 1362.98},
    ("qwen3-30b-a3b", 1): {4: 56.13, 8: 81.83, 16: 114.62, 32: 150.27, 64: 165.41, 128: 175.94},
}
OWN_H200_PREFILL_TP8 = {
    "deepseek-v3": {512: 509.42, 2048: 803.71, 8192: 2321.57},
    "qwen3-235b-a22b": {512: 172.22, 2048: 358.78, 8192: 1219.98},
}
OWN_PREFILL_8192_GAP = (
    "model 1,719 / 799 us vs 2,322 / 1,220 us measured (-26% / -35%, DeepSeek-V3 / Qwen3-235B at "
    "TP8, 8,192 tokens): the measured Triton GEMMs run at 0.19 / 0.17 of the FP8 peak (381 / 338 "
    "TFLOPS, best of six configs, no grouped tile order) where the model's grouped-GEMM curve is "
    "DeepGEMM's; at 512 and 2,048 tokens the rows pass (-19% to -1%)"
)


@pytest.mark.parametrize(
    ("model_name", "tp", "tokens"),
    [(m, tp, n) for (m, tp), rows in OWN_H200_DECODE.items() for n in rows],
)
def test_own_h200_fused_moe_decode_within_tolerance(model_name: str, tp: int, tokens: int) -> None:
    """The model's call against this repository's H200 measurement, 4 to 128 tokens: -10% to
    +18% over the three shapes."""
    measured = OWN_H200_DECODE[(model_name, tp)][tokens]
    model_us = _fused_moe_layer_us(tp, tokens, model_name, "h200-sxm")
    assert model_us == pytest.approx(measured, rel=TOLERANCE)


def _own_prefill_case(model_name: str, tokens: int):
    if tokens == 8192:
        return pytest.param(
            model_name,
            tokens,
            marks=pytest.mark.xfail(strict=True, reason=OWN_PREFILL_8192_GAP),
        )
    return (model_name, tokens)


@pytest.mark.parametrize(
    ("model_name", "tokens"),
    [_own_prefill_case(m, n) for m, rows in OWN_H200_PREFILL_TP8.items() for n in rows],
)
def test_own_h200_fused_moe_prefill_within_tolerance(model_name: str, tokens: int) -> None:
    """Prefill-sized calls at the TP8 shapes on H200: -19% to -1% at 512 and 2,048 tokens. The
    measured call leaves its alignment kernel out (1.4-7.7 us at decode sizes), the model's
    routing latency keeps it: a few microseconds against 170-2,300."""
    measured = OWN_H200_PREFILL_TP8[model_name][tokens]
    model_us = _fused_moe_layer_us(8, tokens, model_name, "h200-sxm")
    assert model_us == pytest.approx(measured, rel=TOLERANCE)
