"""Published cache-tier measurements against the prefill-with-tier-load timeline
(:func:`pddplan.timing.prefill_s`).

Neither source's model is shipped: Qwen3-235B-A22B on one 8-GPU H200 instance (TP8) stands in
for Qwen3-Coder-480B and MiniMax M2.7, and each row compares a *ratio* of TTFTs, which depends
far less on the model's size than a TTFT does. Neither measurement gives its queueing, so the
predicted ratio is of prefill times alone (no queue, no transfer). Mooncake's FAST'25 paper
plots hit rate against cache capacity on its own trace; that curve is not reproduced here (the
shipped trace excerpt is 300 requests, too few to replay it), so it has no row.

Rows:

1. SGLang HiCache with DeepSeek 3FS KVStore (a remote store tier), Novita AI's coding agent on
   Qwen3-Coder-480B, dialogues of about 25K tokens: cache hit rate from 40% to 80% cut the
   average TTFT by 56% (LMSYS blog, "SGLang HiCache: Fast Hierarchical KV Caching with Your
   Favorite Storage Backends", 2025-09-10). Tolerance: 10 percentage points.
2. SGLang issue sgl-project/sglang#26305 (HiCache on SGLang v0.5.10, MiniMax M2.7, GQA),
   input 131,072 tokens, output 512, concurrency 1, 90% hit: TTFT 5,117.95 ms fully
   recomputed, 1,027.18 ms with the hit in HBM (ratio 0.201), 2,697 ms with the hit in an L3
   backend (UCM; ratio 0.527). Tolerance: 25% of each ratio. The HBM row is the no-tier path;
   the L3 row is a strict xfail: the model predicts 0.167 (a 22 GB hit read over 190 GB/s
   under 1 s of compute is hidden by the layer-wise overlap), 68% below the measured 0.527.
   The gap says that that L3 backend did not overlap its reads with compute, or read far more
   slowly than the remote-store profile's RDMA bandwidth; neither is in the issue.
"""

from __future__ import annotations

import numpy as np
import pytest

from pddplan import timing
from pddplan.deployment.caches import CacheNumbers, CacheTierNumbers
from pddplan.io.loader import Registry, load_scenario
from pddplan.solver import PDD, build_problem

CHUNK_TOKENS = 8192


def _prefill_s(input_tokens: int, hit_rate: float, tier: str | None) -> float:
    reg = Registry.default()
    rs = load_scenario(None, reg, {"roles": {"P": {"chips": ["h200-sxm"]}}})
    pb = build_problem(rs, PDD)
    inst = next(o for o in pb.options["P"] if o.tensor_parallel == 8)
    cached = float(np.floor(input_tokens * hit_rate))
    cache = None
    if tier is not None:
        t = CacheTierNumbers.of(reg.load("cache", tier), 1000.0)
        cache = CacheNumbers((t,), pb.model.kv_bytes_per_token, pb.model.layers)
    return float(timing.prefill_s(inst, input_tokens - cached, cached, CHUNK_TOKENS, cache))


def test_hicache_3fs_novita_hit_rate_40_to_80() -> None:
    published_reduction = 0.56
    tol_points = 0.10
    got = 1.0 - _prefill_s(25_000, 0.8, "remote-store") / _prefill_s(25_000, 0.4, "remote-store")
    assert abs(got - published_reduction) <= tol_points, (
        f"TTFT reduction 40%->80% hit: model {got:.1%} vs published {published_reduction:.0%}"
    )


def test_sglang_26305_hbm_hit_90_at_128k() -> None:
    published = 1027.18 / 5117.95
    got = _prefill_s(131_072, 0.9, None) / _prefill_s(131_072, 0.0, None)
    assert abs(got / published - 1.0) <= 0.25, (
        f"TTFT ratio, 90% hit in HBM: model {got:.3f} vs published {published:.3f}"
    )


@pytest.mark.xfail(
    strict=True,
    reason="model 0.167 vs published 0.527 (-68%): the L3 read is hidden by the layer-wise "
    "overlap in the model; the measured backend did not hide it",
)
def test_sglang_26305_l3_hit_90_at_128k() -> None:
    published = 2697.0 / 5117.95
    got = _prefill_s(131_072, 0.9, "remote-store") / _prefill_s(131_072, 0.0, None)
    assert abs(got / published - 1.0) <= 0.25, (
        f"TTFT ratio, 90% hit in L3: model {got:.3f} vs published {published:.3f}"
    )
