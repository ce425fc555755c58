"""The defaults of pddplan's options and serving settings: each written once, here.

An edge module (it imports nothing), so that the scenario schema (:mod:`pddplan.spec`), the API's
option models (:mod:`pddplan.api.options`) and the CLI's declarations read the same value, and
the CLI's ``--help`` stays light.
"""

from __future__ import annotations

#: [tokens] A request whose input reaches this and whose output stays below
#: :data:`ANOMALOUS_OUTPUT_TOKENS` is anomalous (long input, short output: RLD finishes it
#: locally rather than send its KV over the line); ``hitrate`` classifies traces by it.
ANOMALOUS_INPUT_TOKENS = 32768
#: [tokens] Output below this (with a long input) marks a request anomalous.
ANOMALOUS_OUTPUT_TOKENS = 500
#: [tokens] Largest finite prefix-cache capacity taken (``hitrate --cache-tokens`` and a
#: workload's ``cache_tokens``): a petatoken, far above any fleet's memory, and below the
#: replay's limit of 2**40 blocks at one token a block.
MAX_CACHE_TOKENS = 1e15
#: [tokens] Prefill chunk of the serving engine (chunked prefill), when a scenario or a
#: measurement file does not say.
CHUNK_SIZE_TOKENS = 8192
#: [-] Share of an instance's memory the decode batch may fill (KV cache and activations).
MEMORY_UTILIZATION = 0.9
#: [-] Decode pools are sized so that a request finds every slot taken with at most this
#: probability (the level at which docs/simulate.md found the closed forms within 10%).
DECODE_SLOT_WAIT_PROBABILITY_CAP = 0.05
#: [-] Share of the first simulated requests left out of the statistics (warm-up).
WARMUP_FRACTION = 0.05
#: [-] Probability with which ``robust``'s plan must meet every SLA target.
ROBUST_CONFIDENCE = 0.9
#: Scenarios ``robust`` draws.
ROBUST_SAMPLES = 1000

#: The balanced flagship chip ``chips rank`` divides the costs of the others by.
REFERENCE_CHIP = "h100-sxm"
#: [-] ``breakeven``'s bisection stops within this share of its bracket.
BREAKEVEN_TOLERANCE = 1e-3

#: [-] ``hitrate``'s hit-rate bin edges, from 0 to 1: the brief's seven bins.
HIT_RATE_BINS = (0.0, 0.9, 0.93, 0.95, 0.97, 0.98, 0.99, 1.0)
#: [tokens] Tokens per hash-id block of a trace (Mooncake's traces hash 512-token blocks).
TRACE_BLOCK_TOKENS = 512
#: Points per length distribution in a workload profile that ``hitrate`` writes.
WORKLOAD_MAX_POINTS = 50

#: The folder of each profile kind in a profiles directory (``chips/gpu-a.yaml``): the layout the
#: search path scans (:mod:`pddplan.io.search_path`) and the spec's kinds name (a scenario is
#: not a profile kind here: scenarios live in ``scenarios/``).
KIND_DIRS = {
    "chip": "chips",
    "model": "models",
    "link": "links",
    "workload": "workloads",
    "cache": "caches",
}
