"""A trace is read one way wherever it is read: its block size, its clock, its bytes.

Each test failed before its fix: the simulator's replay took 512-token blocks whatever the
trace's, a rate "rescaled" a trace whose requests all arrive at once by doing nothing, a CSV in
a scenario's ``cache.hit_rate.trace`` was sized as if replayed (or crashed), a byte-order mark
hid a CSV's first column, a row with extra fields passed, and a gzip file without ``.gz`` failed
on its first byte without saying why.
"""

from __future__ import annotations

import codecs
import gzip
import json
import math
from pathlib import Path

import numpy as np
import pytest

import pddplan
from pddplan.errors import OptionError, ProfileError, UsageError
from pddplan.trace.arrivals import trace_arrivals
from pddplan.trace.replay import replay_trace

REPO = Path(__file__).resolve().parents[3]
DATA = REPO / "tests" / "data"


def _halved_blocks(src: Path, dst: Path) -> Path:
    """``src`` with each 512-token block's id split into two 256-token ids (the same prompts,
    the same prefixes shared)."""
    with dst.open("w", encoding="utf-8") as out:
        for line in src.read_text(encoding="utf-8").splitlines():
            r = json.loads(line)
            ids = [x for h in r["hash_ids"] for x in (2 * h, 2 * h + 1)]
            r["hash_ids"] = ids[: math.ceil(r["input_length"] / 256)]
            out.write(json.dumps(r) + "\n")
    return dst


def test_the_simulators_replay_reads_the_traces_block_size(tmp_path: Path) -> None:
    src = DATA / "mooncake_excerpt.jsonl"
    half = _halved_blocks(src, tmp_path / "b256.jsonl")
    ref = trace_arrivals(src, 10**6)
    same = trace_arrivals(half, 10**6, block_tokens=256)
    np.testing.assert_array_equal(same.hit_rate, ref.hit_rate)
    # read at the default 512 tokens a block, the halved trace's hits are inflated
    wrong = trace_arrivals(half, 10**6)
    assert wrong.hit_rate.mean() > ref.hit_rate.mean()
    # hitrate reads it at the same block size (one replay, one rule)
    rep = replay_trace(half, [math.inf], block_tokens=256)
    np.testing.assert_array_equal(rep.hit_tokens[:, 0] / rep.input_tokens, ref.hit_rate)


def test_simulate_takes_the_block_size_of_its_trace_only(tmp_path: Path) -> None:
    half = _halved_blocks(DATA / "mooncake_excerpt.jsonl", tmp_path / "b256.jsonl")
    a = pddplan.simulate(trace=DATA / "mooncake_excerpt.jsonl", requests=200)
    b = pddplan.simulate(trace=half, requests=200, block_tokens=256)
    assert a.figures.scalars == b.figures.scalars
    with pytest.raises(OptionError, match="block_tokens"):
        pddplan.simulate(requests=200, block_tokens=256)


def test_a_rate_cannot_rescale_requests_that_arrive_at_one_time(tmp_path: Path) -> None:
    lines = DATA.joinpath("mooncake_excerpt.jsonl").read_text(encoding="utf-8").splitlines()
    f = tmp_path / "same.jsonl"
    f.write_text(
        "".join(json.dumps({**json.loads(x), "timestamp": 0}) + "\n" for x in lines),
        encoding="utf-8",
    )
    with pytest.raises(UsageError, match="all arrive at one time.*5 req/s"):
        trace_arrivals(f, 10**6, rate_rps=5.0)
    assert np.all(trace_arrivals(f, 10**6).arrival_s == 0.0)  # as logged, without a rate


def _with_trace(tmp_path: Path, trace: Path) -> Path:
    text = (REPO / "examples" / "cache-tiers.yaml").read_text(encoding="utf-8")
    old = "    sessions: {requests: 10000, seed: 0}\n    warmup_s: 100"
    assert old in text
    f = tmp_path / "tiers.yaml"
    f.write_text(text.replace(old, f"    trace: {trace}\n    warmup_s: 0"), encoding="utf-8")
    return f


def test_a_csv_trace_cannot_size_a_cache(tmp_path: Path) -> None:
    # its logged hits are one cache's: it was taken as every capacity's (one option), or
    # raised an IndexError (several)
    f = _with_trace(tmp_path, DATA / "requests_small.csv")
    with pytest.raises(ProfileError, match=r"cache\.hit_rate\.trace.*CSV trace"):
        pddplan.solve(f, overrides={"rate_rps": 0.5})
    d = _with_trace(tmp_path, tmp_path)
    with pytest.raises(ProfileError, match="is a directory"):
        pddplan.solve(d, overrides={"rate_rps": 0.5})


def test_a_byte_order_mark_is_no_part_of_a_csv_header(tmp_path: Path) -> None:
    text = DATA.joinpath("requests_small.csv").read_bytes()
    f = tmp_path / "bom.csv"
    f.write_bytes(codecs.BOM_UTF8 + text)
    plain = replay_trace(DATA / "requests_small.csv")
    got = replay_trace(f)
    np.testing.assert_array_equal(got.timestamp_ms, plain.timestamp_ms)  # all NaN before
    np.testing.assert_array_equal(got.hit_tokens, plain.hit_tokens)


def test_a_csv_row_with_more_fields_than_the_header_is_a_bad_line(tmp_path: Path) -> None:
    head = DATA.joinpath("requests_small.csv").read_text(encoding="utf-8").splitlines()[:2]
    f = tmp_path / "extra.csv"
    f.write_text("\n".join([*head, "0,100,10,0.5,9,9"]) + "\n", encoding="utf-8")
    with pytest.raises(ProfileError, match=r"extra\.csv:3: 6 fields where the header has 4"):
        replay_trace(f)
    assert replay_trace(f, skip_bad_lines=True).bad_lines == 1


@pytest.mark.parametrize("name", ["trace.csv", "trace.jsonl", "trace"])
def test_a_gzip_file_must_be_named_gz(tmp_path: Path, name: str) -> None:
    src = DATA / ("requests_small.csv" if name.endswith("csv") else "mooncake_excerpt.jsonl")
    f = tmp_path / name
    f.write_bytes(gzip.compress(src.read_bytes()))
    with pytest.raises(ProfileError, match=r"gzip-compressed.*rename it"):
        replay_trace(f)
    named = tmp_path / f"{name}.gz"
    named.write_bytes(f.read_bytes())
    assert len(replay_trace(named)) == len(replay_trace(src))


def test_more_hash_ids_than_the_input_holds_is_warned(tmp_path: Path) -> None:
    said: list[str] = []
    rep = replay_trace(DATA / "mooncake_excerpt.jsonl", block_tokens=1024, warn=said.append)
    assert rep.ids_past_input() > 0
    assert any("more hash ids than blocks of 1024 tokens" in s for s in said)
    said.clear()
    assert replay_trace(DATA / "mooncake_excerpt.jsonl", warn=said.append).ids_past_input() == 0
    assert said == []


def test_a_written_workload_gets_its_folder_as_a_calibrated_profile_does(tmp_path: Path) -> None:
    # calibrate --write made profiles-mine/chips/; hitrate --workload-out (documented as
    # profiles-mine/workloads/prod.yaml) failed after the whole replay
    out = tmp_path / "mine" / "workloads" / "w.yaml"
    pddplan.hitrate(DATA / "mooncake_excerpt.jsonl", workload_out=out)
    assert out.is_file()
    # a CSV of the curve is no profile: a missing folder is refused (before the replay)
    with pytest.raises(OptionError, match="curve_out.*no directory"):
        pddplan.hitrate(DATA / "mooncake_excerpt.jsonl", curve_out=tmp_path / "none" / "c.csv")


def test_a_csv_out_of_order_is_replayed_by_arrival_as_a_jsonl_is(tmp_path: Path) -> None:
    # simulate -n K took a CSV's first K rows in file order (the latest requests of a reversed
    # file), where a JSONL trace is sorted first
    lines = DATA.joinpath("requests_small.csv").read_text(encoding="utf-8").splitlines()
    rev = tmp_path / "rev.csv"
    rev.write_text("\n".join([lines[0], *reversed(lines[1:])]) + "\n", encoding="utf-8")
    said: list[str] = []
    got = replay_trace(rev, warn=said.append)
    ref = replay_trace(DATA / "requests_small.csv")
    np.testing.assert_array_equal(got.timestamp_ms, ref.timestamp_ms)
    np.testing.assert_array_equal(got.hit_tokens, ref.hit_tokens)
    assert got.sorted_in_memory and any("not in order" in s for s in said)
    np.testing.assert_array_equal(
        trace_arrivals(rev, 3).arrival_s, trace_arrivals(DATA / "requests_small.csv", 3).arrival_s
    )
