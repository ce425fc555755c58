"""Request records made in memory (a session model's trace) replay as the JSONL file they would
be written to: the same blocks (records.records_blocks) and the same replay (replay_records)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from pddplan.trace import records
from pddplan.trace.records import iter_jsonl_blocks, records_blocks
from pddplan.trace.replay import replay_records, replay_trace
from pddplan.trace.synth import SynthParams, synthetic_requests, write_synthetic_trace

PARAMS = SynthParams(rate_rps=5.0, system_prompts=20, active_conversations=50)
CAPS = [2_048.0, 64 * 512.0, 4_000 * 512.0, float("inf")]


def _same_blocks(a: records.ParsedBlock, b: records.ParsedBlock) -> None:
    for f in dataclasses.fields(records.ParsedBlock):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(x, np.ndarray):
            assert x.dtype == y.dtype, f.name
            np.testing.assert_array_equal(x, y, err_msg=f.name)
        else:
            assert x == y, f.name


def test_records_make_the_blocks_of_their_jsonl_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Cut into blocks of 150 records, the blocks are those of the file's lines cut alike
    (lines numbered from 1 across blocks, the same dtypes and values)."""
    monkeypatch.setattr(records, "RECORDS_PER_BLOCK", 150)
    path = write_synthetic_trace(tmp_path / "t.jsonl", 400, 3, PARAMS)
    mine = list(records_blocks(synthetic_requests(400, 3, PARAMS)))
    assert [len(b.line) for b in mine] == [150, 150, 100]
    whole = list(iter_jsonl_blocks(path))
    assert len(whole) == 1  # one block of the file: compare with the blocks joined
    joined = records.ParsedBlock(
        *(
            np.concatenate([getattr(b, f.name) for b in mine])
            for f in dataclasses.fields(records.ParsedBlock)[:6]
        )
    )
    _same_blocks(joined, whole[0])


def test_a_records_replay_is_the_replay_of_their_file(tmp_path: Path) -> None:
    """Every per-request figure of the replay is the file's, at capacities on both engines
    (a small one on the reference LRU, larger ones on the stack replayer, the unbounded)."""
    path = write_synthetic_trace(tmp_path / "t.jsonl", 600, 5, PARAMS)
    a = replay_records(lambda: synthetic_requests(600, 5, PARAMS), "sessions", CAPS)
    b = replay_trace(path, CAPS)
    for f in dataclasses.fields(a):
        if f.name == "file":
            assert (a.file, b.file) == ("sessions", str(path))
            continue
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(x, np.ndarray):
            np.testing.assert_array_equal(x, y, err_msg=f.name)
        else:
            assert x == y, f.name


def test_records_out_of_order_are_sorted_as_the_file_is(tmp_path: Path) -> None:
    """Timestamps out of order: both sort the whole trace in memory, say so once, and agree."""
    recs = list(synthetic_requests(300, 1, PARAMS))
    recs[10], recs[200] = recs[200], recs[10]
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")
    said: list[str] = []
    a = replay_records(lambda: iter(recs), "sessions", CAPS, warn=said.append)
    b = replay_trace(path, CAPS)
    assert a.sorted_in_memory and b.sorted_in_memory
    assert len(said) == 1 and said[0].startswith("sessions: timestamps are not in order")
    np.testing.assert_array_equal(a.hit_tokens, b.hit_tokens)
    np.testing.assert_array_equal(a.timestamp_ms, b.timestamp_ms)


def test_a_record_a_jsonl_line_could_not_hold_is_an_error() -> None:
    with pytest.raises(ValueError, match="could not hold"):
        list(records_blocks([{"timestamp": 0, "input_length": 1, "output_length": 1}]))
