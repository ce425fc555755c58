"""Unit tests of pddplan.trace.synth, the benchmark's trace generator."""

from __future__ import annotations

from itertools import islice
from pathlib import Path

from pddplan.trace import replay_trace
from pddplan.trace.synth import SynthParams, synthetic_requests, write_synthetic_trace


def test_same_seed_same_trace() -> None:
    a = list(synthetic_requests(300, seed=4))
    b = list(synthetic_requests(300, seed=4))
    c = list(synthetic_requests(300, seed=5))
    assert a == b and a != c


def test_requests_are_well_formed_and_chained() -> None:
    p = SynthParams()
    parent: dict[int, int] = {}
    last_t = -1
    for rec in islice(synthetic_requests(2000, seed=2, params=p), 2000):
        ids = rec["hash_ids"]
        assert isinstance(ids, list) and 1 <= len(ids) <= p.max_blocks
        n = len(ids)
        assert (n - 1) * p.block_tokens < rec["input_length"] <= n * p.block_tokens
        assert rec["output_length"] >= 1
        assert rec["timestamp"] >= last_t
        last_t = rec["timestamp"]
        for i, h in enumerate(ids):  # an id always follows the same parent: ids chain
            assert parent.setdefault(h, ids[i - 1] if i else -1) == (ids[i - 1] if i else -1)


def test_written_trace_replays(tmp_path: Path) -> None:
    path = write_synthetic_trace(tmp_path / "s.jsonl", 500, seed=1)
    r = replay_trace(path, jobs=1)
    assert len(r) == 500
    assert 0 < r.hit_tokens[:, 0].sum() < r.input_tokens.sum()
