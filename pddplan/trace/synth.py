"""A synthetic Mooncake-style trace: multi-turn conversations on shared system prompts.

Used by the benchmark (``benchmarks/bench_trace.py``) and by tests that need a trace larger
than the shipped excerpt. The statistics are tuned to resemble the Mooncake FAST'25 synthetic
trace (about 30 blocks of 512 tokens per request, about a third of the block accesses new,
long inputs with short outputs), not to reproduce it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pddplan import defaults


@dataclass(frozen=True)
class SynthParams:
    """Knobs of :func:`synthetic_requests` (defaults resemble the Mooncake trace)."""

    rate_rps: float = 500.0
    block_tokens: int = defaults.TRACE_BLOCK_TOKENS
    system_prompts: int = 200
    system_prompt_blocks_max: int = 24
    new_conversation_probability: float = 0.6
    system_prompt_probability: float = 0.25
    active_conversations: int = 20_000
    turn_blocks_mean: float = 6.0
    first_turn_blocks_mean: float = 20.0
    max_blocks: int = 256
    end_probability: float = 0.2
    output_tokens_median: float = 60.0
    output_tokens_sigma: float = 1.4


def synthetic_requests(
    n_requests: int, seed: int = 0, params: SynthParams | None = None
) -> Iterator[dict[str, object]]:
    """Yield ``n_requests`` Mooncake-style request records in timestamp order.

    Parameters
    ----------
    n_requests : int
        Number of requests.
    seed : int
        Seed of the random generator; the same seed gives the same trace.
    params : SynthParams, optional
        Shape of the workload.

    Yields
    ------
    dict
        ``{"timestamp": ms, "input_length": tokens, "output_length": tokens,
        "hash_ids": [...]}``; hash ids chain their prefix (a block id names the whole prefix
        up to and including that block).
    """
    p = params or SynthParams()
    rng = np.random.default_rng(seed)
    next_id = 0
    prompts: list[list[int]] = []
    for _ in range(p.system_prompts):
        k = int(rng.integers(1, p.system_prompt_blocks_max + 1))
        prompts.append(list(range(next_id, next_id + k)))
        next_id += k
    prompt_pop = 1.0 / np.arange(1, p.system_prompts + 1) ** 1.1
    prompt_pop /= prompt_pop.sum()
    convs: list[list[int]] = []
    t_ms = 0.0
    batch = 4096
    done = 0
    while done < n_requests:
        m = min(batch, n_requests - done)
        gaps = rng.exponential(1000.0 / p.rate_rps, m)
        is_new = rng.random(m) < p.new_conversation_probability
        prompt_pick = rng.choice(p.system_prompts, size=m, p=prompt_pop)
        use_prompt = rng.random(m) < p.system_prompt_probability
        first = rng.geometric(1.0 / p.first_turn_blocks_mean, m)
        turn = rng.geometric(1.0 / p.turn_blocks_mean, m)
        pick = rng.random(m)
        ends = rng.random(m) < p.end_probability
        partial = rng.integers(0, p.block_tokens, m)
        out = np.maximum(
            1, np.round(rng.lognormal(np.log(p.output_tokens_median), p.output_tokens_sigma, m))
        ).astype(int)
        for i in range(m):
            t_ms += gaps[i]
            j = -1
            if is_new[i] or not convs:
                prefix = prompts[prompt_pick[i]] if use_prompt[i] else []
                add = int(first[i])
            else:
                # recent conversations are likelier to continue
                j = len(convs) - 1 - int(len(convs) * pick[i] ** 3)
                prefix = convs[j]
                add = int(turn[i])
            add = min(add, max(1, p.max_blocks - len(prefix)))
            blocks = prefix + list(range(next_id, next_id + add))
            next_id += add
            finished = len(blocks) >= p.max_blocks or (j >= 0 and bool(ends[i]))
            if j < 0:
                if not finished:
                    if len(convs) >= p.active_conversations:
                        convs[0] = convs[-1]
                        convs.pop()
                    convs.append(blocks)
            elif finished:
                convs[j] = convs[-1]
                convs.pop()
            else:
                convs[j] = blocks
            yield {
                "timestamp": int(t_ms),
                "input_length": len(blocks) * p.block_tokens - int(partial[i]),
                "output_length": int(out[i]),
                "hash_ids": blocks,
            }
        done += m


def write_synthetic_trace(
    path: Path, n_requests: int, seed: int = 0, params: SynthParams | None = None
) -> Path:
    """Write :func:`synthetic_requests` as JSONL to ``path``; return ``path``."""
    import json

    try:
        import orjson

        def dumps(o: object) -> bytes:
            return orjson.dumps(o) + b"\n"

    except ImportError:  # pragma: no cover - orjson is optional

        def dumps(o: object) -> bytes:
            return (json.dumps(o, separators=(",", ":")) + "\n").encode()

    with path.open("wb") as fh:
        for rec in synthetic_requests(n_requests, seed, params):
            fh.write(dumps(rec))
    return path
