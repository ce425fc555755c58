"""Published Qwen3-235B-A22B serving throughput against the layout step model.

Source
------
TensorRT-LLM performance overview, section "Qwen3 235B A22B":
github.com/NVIDIA/TensorRT-LLM, docs/source/developer-guide/perf-overview.md at commit
03e27c7d5ff0c6e89f8328838c0a8e64f1b34f9d (the same table at 585c756579dc4d01f21fc13c2f604cdb461ac4f0;
the same document version as the Llama-3.3-70B figures of test_published_throughput.py).
``trtllm-bench throughput``, PyTorch backend, an offline run with every request queued at once,
fixed input/output lengths (standard deviation 0), output tokens/s per GPU (first token
included). Checkpoints nvidia/Qwen3-235B-A22B-FP8 (H100, H200) and nvidia/Qwen3-235B-A22B-FP4
(B200, GB200). "DEP4"/"DEP8": ``enable_attention_dp: true`` with expert parallelism over the 4 or 8
GPUs; the other options are CUDA graphs (batch sizes up to 8192) and defaults.

Tolerance: within 25% of each published figure (issue 12).

How the setup is mapped (each an assumption where the source is silent)
----------------------------------------------------------------------
- Layout ``Layout(1, n, n, overlap=False, balancer=False)``: tp 1, data-parallel attention over
  n, experts over n, no two-batch overlap and no expert-placement balancer (neither is in the
  published options).
- KV cache FP8, not the profile's BF16: the published Qwen3 options leave the KV dtype at the
  checkpoint's, and TensorRT-LLM's accuracy references
  (tests/integration/defs/accuracy/references/mmlu.yaml, commit
  b35ac1b64368513d215c57d2ed01d62d910df8da) list the Qwen3-235B-A22B ModelOpt FP8 and NVFP4
  checkpoints with ``kv_cache_quant_algo: FP8``. The published checkpoints' own
  hf_quant_config.json was not read: this is the remaining assumption.
- FP4 rows: weights at 0.5 bytes (NVFP4's one FP8 scale per 16 weights not counted). The b200
  and gb200 profiles have no FP4 peak, so their GEMMs run at the FP8 peak (pessimistic where a
  step is compute-bound).
- Batch: TensorRT-LLM's default capacity scheduler is GUARANTEED_NO_EVICT
  (tensorrt_llm/llmapi/llm_args.py, SchedulerConfig), which admits a request only when the KV of
  its whole input plus output fits, so the batch is ``max_batch_memory(I + O)``, passed as
  ``max_batch``. trtllm-bench's own max_batch_size (bench/build/tuning.py: a KV estimate that
  counts max(tp, KV heads) heads, at most 4,096) lies above it when it applies per
  attention-data-parallel rank, as assumed; were it per instance it would bind on H100 only
  (1,024 and 224 sequences) and those rows would read +32%, +33% and +29%, still outside.
  Sizing at the mean context ``I + O/2`` (the library's default) gives up to 43% more (last
  column of the table below).
- Memory 0.9 of HBM for weights and KV (the document uses 0.90-0.95 of the memory left after
  weights and activations); prefill chunks of 8,192 tokens (the library default).

Measured with the step model before and after its expert-parallel mechanisms (DeepEP
low-latency decode all-to-all, residual expert imbalance: EPLB_RESIDUAL_SKEW, times
NO_BALANCER_SKEW_FACTOR here since the setup runs no balancer, both from SGLang's DeepSeek-V3
measurements on H100, so their transfer to Qwen3 at DEP4/DEP8 is an assumption; DeepGEMM's
grouped-GEMM curve for routed experts), output tok/s per GPU:

======== ============= ========= ================ ================
chip     input/output  published before           after
======== ============= ========= ================ ================
H200     1000/1000     3,288     4,093 (+24.5%)   2,649 (-19.4%)
H200     1024/1024     3,268     4,083 (+24.9%)   2,646 (-19.0%)
H200     1024/8192     1,417     2,114 (+49.2%)   1,694 (+19.6%)
H200     8192/1024     627       834 (+33.0%)     620 (-1.1%)
H200     32768/1024    134       142 (+5.8%)      117 (-13.0%)
H100     1000/1000     1,932     2,883 (+49.2%)   2,236 (+15.8%)
H100     1024/1024     1,935     2,882 (+49.0%)   2,236 (+15.6%)
H100     1024/8192     873       1,453 (+66.5%)   1,366 (+56.5%)
B200     1000/1000     5,764     7,580 (+31.5%)   5,481 (-4.9%)
B200     1024/1024     5,756     7,583 (+31.7%)   5,489 (-4.6%)
B200     1024/8192     3,389     5,312 (+56.7%)   4,272 (+26.1%)
B200     1024/32768    1,255     1,716 (+36.7%)   1,421 (+13.3%)
B200     8192/1024     1,410     1,809 (+28.3%)   1,383 (-1.9%)
B200     32768/1024    319       315 (-1.2%)      263 (-17.7%)
GB200    1000/1000     6,172     8,053 (+30.5%)   5,854 (-5.2%)
GB200    1024/1024     5,862     8,057 (+37.4%)   5,863 (+0.0%)
GB200    1024/8192     3,423     5,670 (+65.6%)   4,599 (+34.4%)
GB200    8192/1024     1,464     1,936 (+32.3%)   1,481 (+1.2%)
GB200    32768/1024    333       342 (+2.6%)      284 (-14.6%)
======== ============= ========= ================ ================

Counting the routed experts' activation traffic (models/compute.py expert_activation_bytes:
the h-wide rows each expert GEMM reads and writes, the activation and the sum over k experts)
moves every row down by 1-3 points (H200 1000/1000 -21.9%, B200 1024/8192 +23.9%, now within,
H100 1024/8192 +54.4%, GB200 1024/8192 +31.9%, B200 32768/1024 -20.1%).
Costing the grouped GEMMs' reduction depth (models/compute.py expert_depth_factors: Qwen3's
gate-up K = 4,096 and down K = 1,536 against the curve's 7,168 and 2,048; the SM90 profiles only)
moves the H100 and H200 rows down by 2-5 points (H200 1000/1000 -24.9%, 1024/1024 -24.5%,
1024/8192 +13.6%, 8192/1024 -7.1%, 32768/1024 -16.6%; H100 1000/1000 +7.8%, 1024/1024 +7.7%,
1024/8192 +49.8%); the B200 and GB200 rows have no depth numbers and stay.

Sixteen of nineteen rows were within 25% before it, seventeen after. The two outside are the longest-output rows
(1024/8192) on H100 and GB200, +49.8% and +31.9%: decode at long context with the largest
batches, where the model's decode step is HBM-bound (weights and KV streamed at 0.80 of peak)
and activation, workspace and CUDA-graph memory are not taken out of the KV budget, so the
batch is larger than the engine's. With the profile's BF16 KV every row would read lower (KV
dtype is the largest single lever), which is why the KV dtype above is sourced, not chosen.
"""

from __future__ import annotations

import pytest

from pddplan.deployment import Instance, Layout, model_numbers
from pddplan.io.loader import Registry

TOLERANCE = 0.25
KV_DTYPE = "fp8"
PREFILL_CHUNK_TOKENS = 8192
MEMORY_UTILIZATION = 0.9

GAP_NOTE = (
    "the longest-output rows stay optimistic; not traced to one cause: HBM-bound decode step "
    "at long context, no idle data-parallel ranks, activation and CUDA-graph memory not taken "
    "out of the KV budget"
)

# (chip, GPUs, weight dtype, input tokens, output tokens, published tok/s per GPU, gap measured
# when written or None when within tolerance)
PUBLISHED_GAPS = [
    ("h200-sxm", 4, "fp8", 1000, 1000, 3288.0, None),
    ("h200-sxm", 4, "fp8", 1024, 1024, 3268.0, None),
    ("h200-sxm", 4, "fp8", 1024, 8192, 1417.0, None),
    ("h200-sxm", 4, "fp8", 8192, 1024, 627.0, None),
    ("h200-sxm", 4, "fp8", 32768, 1024, 134.0, None),
    ("h100-sxm", 8, "fp8", 1000, 1000, 1932.0, None),
    ("h100-sxm", 8, "fp8", 1024, 1024, 1935.0, None),
    ("h100-sxm", 8, "fp8", 1024, 8192, 873.0, "+49.8%"),
    ("b200", 4, "fp4", 1000, 1000, 5764.0, None),
    ("b200", 4, "fp4", 1024, 1024, 5756.0, None),
    ("b200", 4, "fp4", 1024, 8192, 3389.0, None),
    ("b200", 4, "fp4", 1024, 32768, 1255.0, None),
    ("b200", 4, "fp4", 8192, 1024, 1410.0, None),
    ("b200", 4, "fp4", 32768, 1024, 319.0, None),
    ("gb200", 4, "fp4", 1000, 1000, 6172.0, None),
    ("gb200", 4, "fp4", 1024, 1024, 5862.0, None),
    ("gb200", 4, "fp4", 1024, 8192, 3423.0, "+31.9%"),
    ("gb200", 4, "fp4", 8192, 1024, 1464.0, None),
    ("gb200", 4, "fp4", 32768, 1024, 333.0, None),
]


def _case(chip, gpus, weights, i, o, published, gap):
    marks = ()
    if gap is not None:
        marks = pytest.mark.xfail(reason=f"measured {gap}: {GAP_NOTE}", strict=True)
    return pytest.param(chip, gpus, weights, i, o, published, marks=marks, id=f"{chip}-{i}/{o}")


@pytest.fixture(scope="module")
def reg() -> Registry:
    return Registry.default()


def _instance(reg: Registry, chip: str, gpus: int, weights: str) -> Instance:
    model = reg.load("model", "qwen3-235b-a22b")
    dtypes = model.dtypes.model_copy(update={"weights": weights, "kv_cache": KV_DTYPE})
    model = model.model_copy(update={"dtypes": dtypes})
    layout = Layout(1, gpus, gpus, overlap=False, balancer=False)
    return Instance(reg.load("chip", chip), model_numbers(model), gpus, MEMORY_UTILIZATION, layout)


def _predicted(inst: Instance, input_tokens: int, output_tokens: int) -> float:
    """Offline output tok/s per GPU with the batch GUARANTEED_NO_EVICT admits (whole I + O)."""
    batch = inst.max_batch_memory(input_tokens + output_tokens)
    assert batch > 0
    return inst.offline_output_tokens_per_s_per_chip(
        input_tokens, output_tokens, max_batch=batch, chunk_size_tokens=PREFILL_CHUNK_TOKENS
    )


@pytest.mark.parametrize(
    ("chip", "gpus", "weights", "input_tokens", "output_tokens", "published"),
    [_case(*row) for row in PUBLISHED_GAPS],
)
def test_trtllm_qwen3_235b_dep(
    reg: Registry,
    chip: str,
    gpus: int,
    weights: str,
    input_tokens: int,
    output_tokens: int,
    published: float,
) -> None:
    inst = _instance(reg, chip, gpus, weights)
    assert inst.fits
    predicted = _predicted(inst, input_tokens, output_tokens)
    gap = predicted / published - 1.0
    assert abs(gap) <= TOLERANCE, (
        f"{chip} DEP{gpus} {weights} {input_tokens}/{output_tokens}: model {predicted:,.0f} "
        f"vs {published:,.0f} ({gap:+.1%})"
    )


def test_published_chip_ordering_holds(reg: Registry) -> None:
    """Published at 1000/1000 per GPU: GB200 > B200 > H200 (DEP4) > H100 (DEP8)."""
    order = [
        ("gb200", 4, "fp4"),
        ("b200", 4, "fp4"),
        ("h200-sxm", 4, "fp8"),
        ("h100-sxm", 8, "fp8"),
    ]
    values = [_predicted(_instance(reg, c, n, w), 1000, 1000) for c, n, w in order]
    assert values == sorted(values, reverse=True)


def test_longer_outputs_lower_throughput_as_published(reg: Registry) -> None:
    """Published on every chip: 1024/1024 > 1024/8192 and 1024/1024 > 8192/1024 > 32768/1024."""
    for chip, n, w in (("h200-sxm", 4, "fp8"), ("b200", 4, "fp4"), ("gb200", 4, "fp4")):
        inst = _instance(reg, chip, n, w)
        short = _predicted(inst, 1024, 1024)
        assert short > _predicted(inst, 1024, 8192)
        assert short > _predicted(inst, 8192, 1024) > _predicted(inst, 32768, 1024)
