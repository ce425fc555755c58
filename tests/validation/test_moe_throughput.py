"""Published MoE serving throughput against the layout step model.

Each case names its source, the layout the deployment published, and the tolerance. The derates
come from kernel and collective microbenchmarks (DeepGEMM, FlashMLA, DeepEP, nccl-tests; see the
chip profiles), never from these figures. Cases the model misses are marked xfail with the gap
measured when the test was written and the reason; the test still computes and reports them.

Sources
-------
- DeepSeek-AI, "Day 6: DeepSeek-V3/R1 inference system overview" (2025), via
  shared/reference/accelerators.md: H800 nodes, prefill EP32 / DP32 attention with dual
  micro-batch overlap, ~73.7k input tokens/s per node including cache hits (56.3% of input
  tokens hit the on-disk cache); decode EP144 / DP144, ~14.8k output tokens/s per node at an
  average KV length of 4,989 and 20-22 tokens/s per user. The prefill batch (4 sequences of 4K
  tokens, 16K tokens per GPU) is the setting of DeepSeek's published profile data.
- SGLang team, "Deploying DeepSeek with PD disaggregation and large-scale expert parallelism on
  96 H100 GPUs" (LMSYS blog, 2025-05-05): prefill 4 nodes EP32, decode 9 nodes EP72, two-batch
  overlap, 2,000-token inputs: ~52.3k input and ~22.3k output tokens/s per node; no MTP. The
  decode batch (256 sequences per GPU) and KV length (2,000) are the blog's "Profile Results"
  decode table (22,282 tokens/s per node).

Coupling: the residual expert imbalance under EPLB (``EPLB_RESIDUAL_SKEW``, 1.18) is taken from
the same SGLang blog (its prefill profile at 4,096-token prompts: real routing vs simulated
perfect balance). The SGLang figures checked here are other experiments of that blog (2,000-token
inputs), so those two cases are not fully independent of the derate.
"""

from __future__ import annotations

import pytest

from pddplan.deployment import Instance, Layout, model_numbers
from pddplan.io.loader import Registry
from pddplan.step import step

TOLERANCE = 0.20
GPUS_PER_NODE = 8
DEEPSEEK_CACHE_HIT = 0.563
DEEPSEEK_USER_TOKENS_PER_S = 20.0
SGLANG_DECODE_BATCH_PER_GPU = 256
SGLANG_DECODE_KV_TOKENS = 2000.0
DEEPSEEK_NOTE = (
    "DeepSeek's figures are 24-hour averages over a fleet that scales with load, not peak: "
    "SGLang's blog puts DeepSeek's own profile (balanced routing) well above its production "
    "throughput (prefill 62,713 vs 32,206 uncached tokens/s per node, 1.95x; decode 18,598 vs "
    "14,800, 1.26x), and the model with balanced routing is +4.9% on the prefill profile "
    "(65.8k; test_deepseek_profile.py); the step has no idle DP ranks and no scheduler gaps"
)


@pytest.fixture(scope="module")
def reg() -> Registry:
    return Registry.default()


def _prefill_per_node(reg: Registry, chip: str, mtp: bool, chips: int, seqs: int, tokens: int):
    model = reg.load("model", "deepseek-v3")
    if not mtp:
        model = model.model_copy(update={"speculative": None})
    lay = Layout(1, chips, chips, overlap=True)
    r = step(reg.load("chip", chip), model, lay, seqs * chips, tokens, tokens)
    return GPUS_PER_NODE * r.prefill_tokens_per_s_per_chip


def _decode_per_node(
    reg: Registry, chip: str, mtp: bool, chips: int, ctx: float, tpot_s: float, cap: int
) -> float:
    model = reg.load("model", "deepseek-v3")
    if not mtp:
        model = model.model_copy(update={"speculative": None})
    inst = Instance(
        reg.load("chip", chip),
        model_numbers(model),
        chips,
        0.9,
        Layout(1, chips, chips, overlap=True),
    )
    b = min(inst.max_batch_at_tpot(ctx, tpot_s), cap * chips)
    assert b > 0
    return GPUS_PER_NODE * b / float(inst.decode_step_s(b, ctx)) / chips


def _check(name: str, predicted: float, published: float) -> None:
    gap = predicted / published - 1.0
    assert abs(gap) <= TOLERANCE, f"{name}: model {predicted:,.0f} vs {published:,.0f} ({gap:+.1%})"


@pytest.mark.xfail(
    reason="measured +81% (was +107% before EPLB's residual imbalance, the imbalance on the "
    "all-to-all and DeepGEMM's grouped-GEMM curve; +209% with ideal overlap): " + DEEPSEEK_NOTE,
    strict=True,
)
def test_deepseek_v3_h800_prefill(reg: Registry) -> None:
    computed = _prefill_per_node(reg, "h800-sxm", True, 32, 4, 4096)
    _check("DeepSeek H800 prefill", computed / (1.0 - DEEPSEEK_CACHE_HIT), 73_700.0)


def test_deepseek_v3_h800_decode(reg: Registry) -> None:
    """Measured +16.7% (17,267 vs 14,800; 108 sequences per GPU at 50 ms per output token). Was
    +53% (22.6k) before MLA decode attention was counted in its weight-absorbed form; +108%
    before DeepEP's low-latency all-to-all, EPLB's residual imbalance and DeepGEMM's grouped-GEMM
    curve. The published figure is a 24-hour fleet average (see ``DEEPSEEK_NOTE``), so agreement
    within tolerance does not show the model tracks a loaded instance: the same model is +10.6%
    on DeepSeek's decode profile (test_deepseek_profile.py)."""
    predicted = _decode_per_node(
        reg, "h800-sxm", True, 144, 4989.0, 1.0 / DEEPSEEK_USER_TOKENS_PER_S, 1 << 20
    )
    _check("DeepSeek H800 decode", predicted, 14_800.0)


def test_sglang_h100_prefill(reg: Registry) -> None:
    _check("SGLang H100 prefill", _prefill_per_node(reg, "h100-sxm", False, 32, 8, 2000), 52_300.0)


def test_sglang_h100_decode(reg: Registry) -> None:
    """Measured +7.7% (24,007 vs 22,300); +19.3% before MLA decode attention was counted in its
    weight-absorbed form."""
    predicted = _decode_per_node(
        reg, "h100-sxm", False, 72, SGLANG_DECODE_KV_TOKENS, 1.0, SGLANG_DECODE_BATCH_PER_GPU
    )
    _check("SGLang H100 decode", predicted, 22_300.0)


def test_expert_parallel_beats_tensor_parallel_for_deepseek(reg: Registry) -> None:
    """SGLang reports up to 5x output throughput of EP over vanilla TP on the same GPUs; the
    model must at least order them the same way."""
    chip = reg.load("chip", "h100-sxm")
    m = model_numbers(reg.load("model", "deepseek-v3"))
    tp = Instance(chip, m, 16, 0.9)
    ep = Instance(chip, m, 16, 0.9, Layout(1, 16, 16))
    ctx = 2100.0
    b_tp = tp.max_batch_memory(ctx)
    b_ep = ep.max_batch_memory(ctx)
    assert b_ep > b_tp
    assert b_ep / float(ep.decode_step_s(b_ep, ctx)) > b_tp / float(tp.decode_step_s(b_tp, ctx))


def test_two_batch_overlap_gains_at_most_the_measured_share(reg: Registry) -> None:
    """TBO speeds a communication-heavy EP step up by at most SGLang's measured gain. At a tiny
    batch it is slower (each micro-batch reads the weights again), which is why the layouts
    offered to the solver come with and without it."""
    import numpy as np

    from pddplan.models.compute import TWO_BATCH_OVERLAP_GAIN

    chip = reg.load("chip", "h100-sxm")
    m = model_numbers(reg.load("model", "deepseek-v3"))
    plain = Instance(chip, m, 32, 0.9, Layout(1, 32, 32))
    tbo = Instance(chip, m, 32, 0.9, Layout(1, 32, 32, overlap=True))
    n = np.array([32.0, 8192.0, 65536.0])
    args = (n, n, n * 1000.0, n * 1000.0)
    t0 = plain.step_parts(*args)
    t1 = tbo.step_parts(*args)
    assert t1["total_s"][0] > t0["total_s"][0]  # 32 tokens: memory-bound, read twice
    assert np.all(t1["total_s"][1:] < t0["total_s"][1:])
    work0 = t0["total_s"] - t0["latency_s"]
    work1 = t1["total_s"] - t1["latency_s"]
    assert np.all(work1 >= work0 / (1.0 + TWO_BATCH_OVERLAP_GAIN) * (1 - 1e-9))
