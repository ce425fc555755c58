"""Measure a fused-MoE call's parts on a GPU: what a CUDA-graph-replayed kernel costs whatever
its work, and each kernel of a block-scaled FP8 fused-MoE call at decode sizes.

Needs PyTorch and Triton with a CUDA GPU (not a dependency of pddplan; nothing in the suite runs
it). Prints one JSON document; pddplan's chip profiles cite its figures by file and key.

What it measures (every time is a CUDA-event time over graph replays, after warm-up):

1. ``graph_kernel_us``: one kernel replayed in a CUDA graph, per launch, for a kernel that does
   nothing but one store, at 1, 132 and 1,056 thread blocks (the launch gap, the block
   scheduling and the tail that any kernel of a graph pays).
2. ``fused_moe``: a fused-MoE call written here after SGLang's and vLLM's Triton ``fused_moe``
   (the same kernels in the same order: top-k routing, token-to-expert alignment, the input's
   per-token-group FP8 quantization, the gate-up grouped GEMM over block-scaled FP8 weights,
   SiLU-and-multiply with its quantization, the down grouped GEMM with the routing weights, the
   sum over the ``k`` experts), at a model's expert shape, for 1 to 128 tokens: the whole call in
   one graph, and each kernel alone in a graph of its own (its time per launch, launch gap
   included). ``cold``: every call in the graph routes another random batch over another copy
   of the weights, so the touched experts' weights come from HBM (as in a model, where 60 MoE
   layers' experts do not fit in L2); ``hot``: the same inputs every call, as the published
   kernel benchmarks replay them (weights that fit stay in L2). The GEMMs take the fastest of a
   few tile configurations at each size, as a tuned kernel would.

3. ``k_sweep`` (with ``KSWEEP=1``): the two GEMM kernels at one token over 8 experts, the
   gate-up GEMM's K from 512 to 16,384, where few tiles run and each waits on its K loop.
4. ``fused_moe_prefill`` (with ``PREFILL_TOKENS=512,2048,...``): the same kernels at prefill
   sizes for the TP8 shapes of the published H200 rows, the alignment done once in PyTorch and
   left out of the times, the GEMMs at the fastest of six tile configs.

Run: ``python benchmarks/gpu_fused_moe.py > out.json`` (``SHAPES=name,...`` to measure fewer
decode-sized shapes, ``SHAPES=`` none). Figures measured on an H200 are in
``benchmarks/measured/``.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time

import torch
import triton
import triton.language as tl

FP8_MAX = 448.0
GROUP = 128  # block-scaled FP8: 128-wide groups of the activations, 128 x 128 weight blocks

#: expert shapes (experts, top-k, hidden K, sliced intermediate I) from the models' HF configs;
#: the tensor-parallel slicing named is the published kernel rows'.
SHAPES = {
    "qwen3-235b-a22b-tp8": (128, 8, 4096, 1536 // 8),
    "deepseek-v3-tp2": (256, 8, 7168, 2048 // 2),
    "qwen3-30b-a3b-tp1": (128, 8, 2048, 768),
}
#: prefill-sized calls (``PREFILL_TOKENS=2048,8192``): the TP8 shapes of the published H200 rows
PREFILL_SHAPES = {
    "deepseek-v3-tp8": (256, 8, 7168, 2048 // 8),
    "qwen3-235b-a22b-tp8": (128, 8, 4096, 1536 // 8),
}
PREFILL_CONFIGS = (
    (64, 128, 128, 4, 3),
    (128, 128, 128, 8, 3),
    (64, 64, 128, 4, 4),
    (128, 64, 128, 4, 3),
    (64, 128, 128, 8, 4),
    (128, 256, 128, 8, 3),
)
PREFILL_CALLS = 4
#: the K-loop sweep (``KSWEEP=1``): one token over 8 experts (all touched), the gate-up GEMM's
#: reduction depth K varied at a fixed sliced width, so that few tiles run and the K loop binds
KSWEEP_DEPTHS = (512, 1024, 2048, 4096, 8192, 16384)
KSWEEP_SHAPE = (8, 8, None, 192)
TOKENS = (1, 2, 4, 8, 16, 24, 32, 64, 128)
#: (BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages)
CONFIGS = (
    (16, 64, 128, 4, 3),
    (16, 128, 128, 4, 3),
    (16, 64, 128, 4, 5),
    (64, 128, 128, 4, 3),
)
CALLS = 16  # calls per captured graph
REPLAYS = 20


# ---------------------------------------------------------------------------- kernels


@triton.jit
def _nothing(out_ptr):
    if tl.program_id(0) == 0:
        tl.store(out_ptr, 1.0)


@triton.jit
def _topk_kernel(gate_ptr, ids_ptr, w_ptr, E: tl.constexpr, EP: tl.constexpr, K: tl.constexpr):
    """One token a program: softmax over the experts, the top k, weights renormalized."""
    t = tl.program_id(0)
    offs = tl.arange(0, EP)
    g = tl.load(gate_ptr + t * E + offs, mask=offs < E, other=-float("inf")).to(tl.float32)
    p = tl.exp(g - tl.max(g, 0))
    p = p / tl.sum(p, 0)
    offk = tl.arange(0, K)
    ids = tl.zeros((K,), dtype=tl.int32)
    w = tl.zeros((K,), dtype=tl.float32)
    for j in tl.static_range(K):
        m = tl.max(p, 0)
        i = tl.argmax(p, 0)
        ids = tl.where(offk == j, i.to(tl.int32), ids)
        w = tl.where(offk == j, m, w)
        p = tl.where(offs == i, -1.0, p)
    tl.store(ids_ptr + t * K + offk, ids)
    tl.store(w_ptr + t * K + offk, w / tl.sum(w, 0))


@triton.jit
def _max_fn(a, b):
    return tl.maximum(a, b)


@triton.jit
def _align_kernel(
    ids_ptr,
    sorted_ptr,
    expert_ids_ptr,
    npost_ptr,
    scratch_ptr,
    NK,
    EM,
    E: tl.constexpr,
    NKP: tl.constexpr,
    BM: tl.constexpr,
    FILL: tl.constexpr,
):
    """One program: the (token, expert) assignments sorted by expert, each expert's run padded to
    a multiple of BM, the sentinel NK in the padding; the expert of every BM-block."""
    offs = tl.arange(0, NKP)
    for s in range(0, EM, FILL):
        f = s + tl.arange(0, FILL)
        tl.store(sorted_ptr + f, NK + 0 * f, mask=f < EM)
    ids = tl.load(ids_ptr + offs, mask=offs < NK, other=E)
    key = ids * NKP + offs
    key = tl.sort(key)
    e = key // NKP
    i = key % NKP
    tl.store(scratch_ptr + offs, e)
    tl.store(scratch_ptr + NKP + offs, E + 0 * offs)
    tl.debug_barrier()
    prev = tl.load(scratch_ptr + offs - 1, mask=offs > 0, other=-1)
    nxt = tl.load(scratch_ptr + offs + 1)
    valid = e < E
    start = tl.associative_scan(tl.where(e != prev, offs, 0), 0, _max_fn)
    is_end = (e != nxt) & valid
    count = offs - start + 1
    pad = tl.where(is_end, (BM - count % BM) % BM, 0)
    before = tl.cumsum(pad, 0) - pad
    dest = offs + before
    tl.store(sorted_ptr + dest, i, mask=valid)
    tl.store(expert_ids_ptr + dest // BM, e, mask=valid)
    total = tl.sum(tl.where(valid, 1, 0), 0) + tl.sum(pad, 0)
    tl.store(npost_ptr, total)


@triton.jit
def _group_columns(GP: tl.constexpr, WIDTH: tl.constexpr):
    """A row's columns as (group, 128) and which of them lie inside ``WIDTH``."""
    col = tl.arange(0, GP)[:, None] * 128 + tl.arange(0, 128)[None, :]
    return col, col < WIDTH


@triton.jit
def _store_fp8_groups(y, col, m, q_ptr, s_ptr, r, WIDTH: tl.constexpr, G: tl.constexpr, GP):
    """Row ``r`` of ``y`` (group, 128) as FP8 with one absmax scale per 128-wide group."""
    scale = tl.maximum(tl.max(tl.abs(y), 1), 1e-10) / 448.0
    tl.store(q_ptr + r * WIDTH + col, (y / scale[:, None]).to(q_ptr.dtype.element_ty), mask=m)
    go = tl.arange(0, GP)
    tl.store(s_ptr + r * G + go, scale, mask=go < G)


@triton.jit
def _quant_kernel(x_ptr, q_ptr, s_ptr, COLS: tl.constexpr, G: tl.constexpr, GP: tl.constexpr):
    """One row a program: per-128-group absmax scale and FP8 values."""
    r = tl.program_id(0)
    col, m = _group_columns(GP, COLS)
    x = tl.load(x_ptr + r * COLS + col, mask=m, other=0.0).to(tl.float32)
    _store_fp8_groups(x, col, m, q_ptr, s_ptr, r, COLS, G, GP)


@triton.jit
def _act_quant_kernel(
    x_ptr, q_ptr, s_ptr, sorted_ptr, NK, WIDTH: tl.constexpr, G: tl.constexpr, GP: tl.constexpr
):
    """One assignment a program: SiLU(gate) * up of the gate-up output, then FP8 per group."""
    r = tl.program_id(0)
    col, m = _group_columns(GP, WIDTH)
    gate = tl.load(x_ptr + r * 2 * WIDTH + col, mask=m, other=0.0).to(tl.float32)
    up = tl.load(x_ptr + r * 2 * WIDTH + WIDTH + col, mask=m, other=0.0).to(tl.float32)
    _store_fp8_groups(gate / (1.0 + tl.exp(-gate)) * up, col, m, q_ptr, s_ptr, r, WIDTH, G, GP)


@triton.jit
def _moe_gemm_kernel(
    a_ptr,
    a_s_ptr,
    b_ptr,
    b_s_ptr,
    c_ptr,
    w_ptr,
    sorted_ptr,
    expert_ids_ptr,
    npost_ptr,
    NK,
    N,
    K,
    GK,
    GN,
    TOPK: tl.constexpr,
    A_PER_TOKEN: tl.constexpr,
    MUL_WEIGHT: tl.constexpr,
    BM: tl.constexpr,
    BN: tl.constexpr,
    BK: tl.constexpr,
):
    """One (BM assignments, BN columns) tile a program: C[assignment] = A[row] @ B[expert]^T over
    block-scaled FP8, as the fused-MoE kernels (B stored [E, N, K])."""
    pid = tl.program_id(0)
    n_tiles = tl.cdiv(N, BN)
    pid_m = pid // n_tiles
    pid_n = pid % n_tiles
    if pid_m * BM >= tl.load(npost_ptr):
        return
    offs_m = pid_m * BM + tl.arange(0, BM)
    tok = tl.load(sorted_ptr + offs_m)
    tmask = tok < NK
    row = tok // TOPK if A_PER_TOKEN else tok
    expert = tl.load(expert_ids_ptr + pid_m).to(tl.int64)
    offs_n = pid_n * BN + tl.arange(0, BN)
    nmask = offs_n < N
    offs_k = tl.arange(0, BK)
    a_ptrs = a_ptr + row[:, None] * K + offs_k[None, :]
    b_ptrs = b_ptr + expert * N * K + offs_n[None, :] * K + offs_k[:, None]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for kb in range(0, tl.cdiv(K, BK)):
        kmask = offs_k < K - kb * BK
        a = tl.load(a_ptrs, mask=tmask[:, None] & kmask[None, :], other=0.0)
        b = tl.load(b_ptrs, mask=kmask[:, None] & nmask[None, :], other=0.0)
        a_s = tl.load(a_s_ptr + row * GK + kb, mask=tmask, other=0.0)
        b_s = tl.load(b_s_ptr + expert * GN * GK + (offs_n // 128) * GK + kb, mask=nmask, other=0.0)
        acc += tl.dot(a, b) * a_s[:, None] * b_s[None, :]
        a_ptrs += BK
        b_ptrs += BK
    if MUL_WEIGHT:
        acc = acc * tl.load(w_ptr + tok, mask=tmask, other=0.0)[:, None]
    c_ptrs = c_ptr + tok[:, None] * N + offs_n[None, :]
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=tmask[:, None] & nmask[None, :])


# ---------------------------------------------------------------------------- one call


def _pow2(x: int) -> int:
    return 1 << max(0, math.ceil(math.log2(max(1, x))))


class MoECall:
    """Buffers and kernels of one fused-MoE call at a shape, a token count and a config."""

    def __init__(self, shape, tokens, weights, config, device, seed, fp8):
        e, topk, h, i = shape
        self.e, self.topk, self.h, self.i, self.n = e, topk, h, i, tokens
        self.bm, self.bn, self.bk, self.warps, self.stages = config
        self.w13, self.w13_s, self.w2, self.w2_s = weights
        gen = torch.Generator(device=device).manual_seed(seed)
        self.x = torch.randn(tokens, h, device=device, generator=gen, dtype=torch.bfloat16)
        self.gate = torch.randn(tokens, e, device=device, generator=gen, dtype=torch.float32)
        nk = tokens * topk
        self.nk = nk
        self.em = nk * self.bm if nk < e else nk + e * (self.bm - 1)
        self.blocks = triton.cdiv(self.em, self.bm)
        self.ids = torch.empty(nk, device=device, dtype=torch.int32)
        self.w = torch.empty(nk, device=device, dtype=torch.float32)
        self.sorted = torch.empty(self.em, device=device, dtype=torch.int32)
        self.expert_ids = torch.zeros(self.blocks, device=device, dtype=torch.int32)
        self.npost = torch.zeros(1, device=device, dtype=torch.int32)
        self.scratch = torch.empty(2 * _pow2(nk) + 2, device=device, dtype=torch.int32)
        self.gk1, self.gk2 = triton.cdiv(h, GROUP), triton.cdiv(i, GROUP)
        self.xq = torch.empty(tokens, h, device=device, dtype=fp8)
        self.xs = torch.empty(tokens, self.gk1, device=device, dtype=torch.float32)
        self.c1 = torch.empty(nk, 2 * i, device=device, dtype=torch.bfloat16)
        self.aq = torch.empty(nk, i, device=device, dtype=fp8)
        self.as_ = torch.empty(nk, self.gk2, device=device, dtype=torch.float32)
        self.c2 = torch.empty(nk, h, device=device, dtype=torch.bfloat16)
        self.out = torch.empty(tokens, h, device=device, dtype=torch.bfloat16)

    def topk_(self):
        _topk_kernel[(self.n,)](self.gate, self.ids, self.w, self.e, _pow2(self.e), self.topk)

    def align(self):
        _align_kernel[(1,)](
            self.ids, self.sorted, self.expert_ids, self.npost, self.scratch,
            self.nk, self.em, self.e, _pow2(self.nk), self.bm, 1024,
        )  # fmt: skip

    def quant(self):
        g = self.gk1
        _quant_kernel[(self.n,)](self.x, self.xq, self.xs, self.h, g, _pow2(g))

    def gemm1(self):
        self._gemm(self.xq, self.xs, self.w13, self.w13_s, self.c1, 2 * self.i, self.h, True)

    def act(self):
        g = self.gk2
        _act_quant_kernel[(self.nk,)](
            self.c1, self.aq, self.as_, self.sorted, self.nk, self.i, g, _pow2(g)
        )

    def gemm2(self):
        self._gemm(self.aq, self.as_, self.w2, self.w2_s, self.c2, self.h, self.i, False)

    def sum_(self):
        torch.sum(self.c2.view(self.n, self.topk, self.h), dim=1, out=self.out)

    def _gemm(self, a, a_s, b, b_s, c, n, k, first):
        grid = (self.blocks * triton.cdiv(n, self.bn),)
        _moe_gemm_kernel[grid](
            a, a_s, b, b_s, c, self.w, self.sorted, self.expert_ids, self.npost,
            self.nk, n, k, triton.cdiv(k, GROUP), triton.cdiv(n, GROUP),
            TOPK=self.topk, A_PER_TOKEN=first, MUL_WEIGHT=not first,
            BM=self.bm, BN=self.bn, BK=self.bk, num_warps=self.warps, num_stages=self.stages,
        )  # fmt: skip

    STAGES = ("topk_", "align", "quant", "gemm1", "act", "gemm2", "sum_")

    def __call__(self):
        for s in self.STAGES:
            getattr(self, s)()


class PrefillCall(MoECall):
    """A prefill-sized call: the alignment done once in PyTorch (a one-program sort does not
    scale to 10^4-10^5 assignments), the other kernels as :class:`MoECall`'s."""

    STAGES = ("topk_", "quant", "gemm1", "act", "gemm2", "sum_")

    def align(self):
        ids = self.ids.long()
        order = torch.sort(ids, stable=True).indices
        counts = torch.bincount(ids, minlength=self.e)
        padded = (counts + self.bm - 1) // self.bm * self.bm
        padded_off = torch.cumsum(padded, 0) - padded
        off = torch.cumsum(counts, 0) - counts
        e_sorted = ids[order]
        dest = padded_off[e_sorted] + torch.arange(self.nk, device=ids.device) - off[e_sorted]
        self.sorted.fill_(self.nk)
        self.sorted[dest] = order.int()
        self.expert_ids[dest // self.bm] = e_sorted.int()
        self.npost.fill_(int(padded.sum()))


def make_weights(shape, device, fp8, seed):
    e, _, h, i = shape
    gen = torch.Generator(device=device).manual_seed(seed)

    def one(n, k):
        w = torch.randn(e, n, k, device=device, generator=gen, dtype=torch.bfloat16) * 0.05
        s = torch.rand(
            e, triton.cdiv(n, GROUP), triton.cdiv(k, GROUP), device=device, generator=gen
        )
        return w.to(fp8), (s * 1e-2 + 1e-3).float()

    w13, s13 = one(2 * i, h)
    w2, s2 = one(h, i)
    return w13, s13, w2, s2


def reference(call: MoECall) -> torch.Tensor:
    """The call in plain PyTorch from the same quantized inputs and routing."""

    def deq(q, s, rows, cols):
        full = s.repeat_interleave(GROUP, 0)[:rows].repeat_interleave(GROUP, 1)[:, :cols]
        return q.float() * full

    xs = call.xs.repeat_interleave(GROUP, -1)[:, : call.h]
    x = call.xq.float() * xs
    out = torch.zeros(call.n, call.h, device=x.device)
    for t in range(call.n):
        for j in range(call.topk):
            ex = int(call.ids[t * call.topk + j])
            w13 = deq(call.w13[ex], call.w13_s[ex], 2 * call.i, call.h)
            y = w13 @ x[t]
            a = torch.nn.functional.silu(y[: call.i]) * y[call.i :]
            w2 = deq(call.w2[ex], call.w2_s[ex], call.h, call.i)
            out[t] += call.w[t * call.topk + j] * (w2 @ a)
    return out


# ---------------------------------------------------------------------------- timing


def graph_time_us(fns, replays=REPLAYS) -> float:
    """Mean time of one replay of a graph that runs every fn of ``fns`` once, in order [us]."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for f in fns:  # warm-up outside the graph (compiles, allocator)
            f()
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for f in fns:
            f()
    for _ in range(3):
        g.replay()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(replays):
        g.replay()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) * 1e3 / replays


def gemm_times_us(calls, replays=REPLAYS) -> tuple[float, float]:
    """The gate-up and the down GEMM's time per call [us], each in a graph of its own over
    ``calls``, after every call's kernels up to the activation ran once (so the GEMMs are timed
    on their real blocks)."""
    for c in calls:
        c.topk_()
        c.align()
        c.quant()
        c.gemm1()
        c.act()
    torch.cuda.synchronize()
    n = len(calls)
    return (
        graph_time_us([c.gemm1 for c in calls], replays) / n,
        graph_time_us([c.gemm2 for c in calls], replays) / n,
    )


def graph_kernel_us(device) -> dict:
    out = torch.zeros(1, device=device)
    rows = {}
    for blocks in (1, 132, 1056):
        fns = [lambda b=blocks: _nothing[(b,)](out)] * 100
        rows[str(blocks)] = round(graph_time_us(fns) / 100, 3)
    return rows


def touched_bytes(calls, shape) -> float:
    e, topk, h, i = shape
    per_expert = 2 * i * h + h * i  # FP8: one byte each
    return sum(len(set(c.ids.tolist())) for c in calls) * per_expert / len(calls)


def measure_shape(name, shape, device, fp8, log) -> dict:
    e, topk, h, i = shape
    per_copy = e * 3 * h * i
    copies = max(1, min(4, int(1.3e9 // per_copy)))
    weights = [make_weights(shape, device, fp8, 100 + c) for c in range(copies)]
    rows = []
    for n in TOKENS:
        best = None
        for cfg in CONFIGS:
            if cfg[0] > 16 and n * topk < 256:
                continue  # large tiles only where the experts get many rows
            cold = [
                MoECall(shape, n, weights[k % copies], cfg, device, 1000 * n + k, fp8)
                for k in range(CALLS)
            ]
            g1, g2 = gemm_times_us(cold)
            if best is None or g1 + g2 < best[0]:
                best = (g1 + g2, cfg, cold, g1, g2)
        _, cfg, cold, g1, g2 = best
        hot = [cold[0]] * CALLS
        err = None
        if n <= 4:
            c = cold[0]
            c()
            torch.cuda.synchronize()
            ref = reference(c)
            err = float((c.out.float() - ref).norm() / ref.norm())
            assert err < 0.05, f"{name} n={n}: the call is {err:.1%} off the reference"
        row = {
            "tokens": n,
            "config": list(cfg),
            "experts_touched": round(touched_bytes(cold, shape) / (3 * h * i), 2),
            "touched_weight_mb": round(touched_bytes(cold, shape) / 1e6, 3),
            "call_cold_us": round(graph_time_us([c for c in cold]) / CALLS, 2),
            "call_hot_us": round(graph_time_us(hot) / CALLS, 2),
            "kernels_cold_us": {
                s.rstrip("_"): round(graph_time_us([getattr(c, s) for c in cold]) / CALLS, 2)
                for s in MoECall.STAGES
            },
            "gemm_hot_us": round(
                (graph_time_us([c.gemm1 for c in hot]) + graph_time_us([c.gemm2 for c in hot]))
                / CALLS,
                2,
            ),
            "relative_error_vs_reference": err,
        }
        rows.append(row)
        log(f"{name} n={n}: {row}")
    del weights
    torch.cuda.empty_cache()
    return {"experts": e, "top_k": topk, "hidden": h, "intermediate_sliced": i, "rows": rows}


def measure_prefill(name, shape, tokens_list, device, fp8, log) -> dict:
    """Each prefill size's kernels (alignment excluded), the GEMMs at the fastest config."""
    weights = make_weights(shape, device, fp8, 100)
    rows = []
    for n in tokens_list:
        best = None
        for cfg in PREFILL_CONFIGS:
            calls = [
                PrefillCall(shape, n, weights, cfg, device, 1000 * n + k, fp8)
                for k in range(PREFILL_CALLS)
            ]
            g1, g2 = gemm_times_us(calls, replays=5)
            log(f"{name} prefill n={n} {cfg}: {g1:.1f} + {g2:.1f} us")
            if best is None or g1 + g2 < best[0]:
                best = (g1 + g2, cfg, calls, g1, g2)
            else:
                del calls
        _, cfg, calls, g1, g2 = best
        e, topk, h, i = shape
        kernels = {
            s.rstrip("_"): round(
                graph_time_us([getattr(c, s) for c in calls], replays=5) / PREFILL_CALLS, 2
            )
            for s in PrefillCall.STAGES
        }
        flops = 2.0 * n * topk * 3 * h * i
        row = {
            "tokens": n,
            "config": list(cfg),
            "kernels_us": kernels,
            "call_without_alignment_us": round(
                graph_time_us(list(calls), replays=5) / PREFILL_CALLS, 2
            ),
            "gemm_tflops": round(flops / ((kernels["gemm1"] + kernels["gemm2"]) * 1e-6) / 1e12, 1),
        }
        rows.append(row)
        log(f"{name} prefill n={n}: {row}")
        del best, calls
        torch.cuda.empty_cache()
    del weights
    torch.cuda.empty_cache()
    return {"experts": shape[0], "top_k": shape[1], "hidden": shape[2],
            "intermediate_sliced": shape[3], "rows": rows}  # fmt: skip


def measure_k_sweep(device, fp8, log) -> dict:
    """The gate-up and down GEMM kernels at one token for each K of :data:`KSWEEP_DEPTHS` (cold:
    every call of a graph on its own weight copy), at the decode configs."""
    e, topk, _, i = KSWEEP_SHAPE
    rows = []
    for k in KSWEEP_DEPTHS:
        shape = (e, topk, k, i)
        weights = [make_weights(shape, device, fp8, 300 + c) for c in range(CALLS)]
        row = {"k": k, "touched_weight_mb": round(e * 3 * k * i / 1e6, 3), "configs": {}}
        for cfg in CONFIGS[:3]:
            calls = [MoECall(shape, 1, weights[c], cfg, device, 7 + c, fp8) for c in range(CALLS)]
            g1, g2 = gemm_times_us(calls)
            row["configs"][str(list(cfg))] = {"gemm1_us": round(g1, 2), "gemm2_us": round(g2, 2)}
        rows.append(row)
        log(f"k-sweep K={k}: {row}")
        del weights
        torch.cuda.empty_cache()
    return {"experts": e, "top_k": topk, "intermediate_sliced": i, "rows": rows}


def main() -> None:
    device = "cuda"
    fp8 = torch.float8_e4m3fn

    def log(msg):
        print(msg, file=sys.stderr, flush=True)

    t0 = time.time()
    props = torch.cuda.get_device_properties(0)
    doc = {
        "gpu": props.name,
        "multiprocessors": props.multi_processor_count,
        "torch": torch.__version__,
        "triton": triton.__version__,
        "calls_per_graph": CALLS,
        "replays": REPLAYS,
    }
    doc["graph_kernel_us"] = graph_kernel_us(device)
    log(f"graph_kernel_us {doc['graph_kernel_us']}")
    only = os.environ.get("SHAPES")
    path = os.environ.get("FUSED_MOE_OUT")  # written after each shape, so a cut run keeps some
    doc["fused_moe"] = {}
    for name, shape in SHAPES.items():
        if only is not None and name not in only.split(","):
            continue
        doc["fused_moe"][name] = measure_shape(name, shape, device, fp8, log)
        doc["wall_s"] = round(time.time() - t0, 1)
        if path:
            with open(path, "w") as f:
                json.dump(doc, f, indent=1)
    if os.environ.get("KSWEEP"):
        doc["k_sweep"] = measure_k_sweep(device, fp8, log)
        if path:
            with open(path, "w") as f:
                json.dump(doc, f, indent=1)
    prefill = os.environ.get("PREFILL_TOKENS")
    if prefill:
        tokens_list = [int(x) for x in prefill.split(",")]
        doc["fused_moe_prefill"] = {}
        for name, shape in PREFILL_SHAPES.items():
            doc["fused_moe_prefill"][name] = measure_prefill(
                name, shape, tokens_list, device, fp8, log
            )
            doc["wall_s"] = round(time.time() - t0, 1)
            if path:
                with open(path, "w") as f:
                    json.dump(doc, f, indent=1)
    print(json.dumps(doc, indent=1))


if __name__ == "__main__":
    main()
