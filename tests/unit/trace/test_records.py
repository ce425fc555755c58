"""Unit tests of pddplan.trace.records and pddplan.trace.replay: parsing, bad lines, ordering."""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import numpy as np
import pytest

from pddplan.errors import ProfileError, UsageError
from pddplan.trace.records import (
    detect_format,
    iter_jsonl_blocks,
    parse_jsonl_block,
    string_block_id,
)
from pddplan.trace.replay import (
    UNBOUNDED,
    parse_capacities,
    parse_capacity,
    replay_trace,
    warmup_mask,
)

DATA = Path(__file__).resolve().parents[2] / "data"


def _line(t: float, i: int, o: int, ids: list[int]) -> str:
    return json.dumps({"timestamp": t, "input_length": i, "output_length": o, "hash_ids": ids})


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


SHARED = [
    _line(0, 1500, 10, [1, 2, 3]),
    _line(1000, 1536, 20, [1, 2, 4]),
    _line(2000, 600, 30, [1, 5]),
    _line(3000, 1400, 40, [1, 2, 3]),
]


# ----------------------------------------------------------------------------------- JSONL


def test_parse_block_fast_path(tmp_path: Path) -> None:
    blk = parse_jsonl_block(("\n".join(SHARED) + "\n").encode(), 1, "t.jsonl")
    assert blk.input_tokens.tolist() == [1500, 1536, 600, 1400]
    assert blk.output_tokens.tolist() == [10, 20, 30, 40]
    assert blk.timestamp_ms.tolist() == [0, 1000, 2000, 3000]
    assert blk.hash_counts.tolist() == [3, 3, 2, 3]
    assert blk.hash_ids.tolist() == [1, 2, 3, 1, 2, 4, 1, 5, 1, 2, 3]
    assert blk.line.tolist() == [1, 2, 3, 4]


def test_replay_hand_computed_hit_tokens(tmp_path: Path) -> None:
    # unbounded hits 0, 2, 1, 3 blocks (see test_trace_cache); 3 x 512 = 1536 is capped at 1400
    p = _write(tmp_path / "t.jsonl", SHARED)
    r = replay_trace(p, [UNBOUNDED, 1024], jobs=1)
    assert r.hit_blocks[:, 0].tolist() == [0, 2, 1, 3]
    assert r.hit_tokens[:, 0].tolist() == [0, 1024, 512, 1400]
    assert r.hit_blocks[:, 1].tolist() == [0, 2, 1, 1]  # LRU of 2 blocks
    rate = r.hit_tokens[:, 0] / r.input_tokens
    assert rate.tolist() == pytest.approx([0, 2 / 3, 512 / 600, 1.0])


def test_block_tokens_scales_the_hit(tmp_path: Path) -> None:
    p = _write(tmp_path / "t.jsonl", SHARED)
    r = replay_trace(p, block_tokens=100, jobs=1)
    assert r.hit_tokens[:, 0].tolist() == [0, 200, 100, 300]


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ('{"timestamp": 5, "input_length": 10', "malformed JSON"),
        ('{"timestamp": 5, "input_length": 10, "hash_ids": [1]}', "missing field 'output_length'"),
        ('{"input_length": 10, "output_length": 1, "hash_ids": [1]}', "missing field 'timestamp'"),
        (_line(5, -10, 1, [1]), "input_length: a negative length (-10)"),
        (_line(5, 10, -1, [1]), "output_length: a negative length (-1)"),
        (_line(5, 0, 1, [1]), "input_length: zero"),
        (_line(5, 10.5, 1, [1]), "expected an integer number of tokens"),
        (_line(5, 10, 1, [1, 2.5]), "hash_ids[1]: expected an integer or string block id"),
        (_line(5, 10, 1, [1, 2.0]), "hash_ids[1]: expected an integer or string block id"),
        (_line(5, 10, 1, [True, 2]), "hash_ids[0]: expected an integer or string block id"),
        (_line(5, 10, 1, [None]), "hash_ids[0]: expected an integer or string block id"),
        (
            '{"timestamp": 5, "input_length": 10, "output_length": 1, "hash_ids": [1e3]}',
            "hash_ids[0]",
        ),
        ('{"timestamp": 5, "input_length": 10, "output_length": 1, "hash_ids": 7}', "hash_ids"),
        ('{"timestamp": "x", "input_length": 10, "output_length": 1, "hash_ids": []}', "timestamp"),
        ("[1, 2]", "expected a JSON object"),
    ],
)
def test_bad_line_is_named(tmp_path: Path, bad: str, message: str) -> None:
    p = _write(tmp_path / "bad.jsonl", [SHARED[0], SHARED[1], bad, SHARED[2]])
    with pytest.raises(ProfileError) as info:
        replay_trace(p, jobs=1)
    text = str(info.value)
    assert text.startswith(f"{p}:3: ")
    assert message in text


def test_skip_bad_lines_counts_them(tmp_path: Path) -> None:
    p = _write(
        tmp_path / "bad.jsonl",
        [SHARED[0], "not json", SHARED[1], _line(1, -1, 1, [1]), SHARED[2], SHARED[3]],
    )
    r = replay_trace(p, skip_bad_lines=True, jobs=1)
    assert len(r) == 4
    assert r.bad_lines == 2
    assert r.bad_line_messages[0].startswith("line 2: malformed JSON")
    assert r.bad_line_messages[1].startswith("line 4: input_length: a negative length")
    assert r.hit_blocks[:, 0].tolist() == [0, 2, 1, 3]


def test_blank_lines_are_not_requests(tmp_path: Path) -> None:
    p = _write(tmp_path / "t.jsonl", [SHARED[0], "", "   ", SHARED[1]])
    r = replay_trace(p, jobs=1)
    assert len(r) == 2 and r.bad_lines == 0


def test_bad_line_number_counts_earlier_blocks(tmp_path: Path) -> None:
    lines = [_line(i, 100, 1, [i]) for i in range(50)]
    lines[37] = '{"oops'
    p = _write(tmp_path / "t.jsonl", lines)
    for jobs in (1, 2):
        with pytest.raises(ProfileError, match=r":38: malformed JSON"):
            list(iter_jsonl_blocks(p, jobs=jobs, block_bytes=200))


def test_empty_trace_is_an_error(tmp_path: Path) -> None:
    p = tmp_path / "empty.jsonl"
    p.write_text("", encoding="utf-8")
    with pytest.raises(ProfileError, match="the trace is empty"):
        replay_trace(p, jobs=1)
    q = _write(tmp_path / "allbad.jsonl", ["x", "y"])
    with pytest.raises(ProfileError, match=r"no valid requests \(2 bad lines skipped\)"):
        replay_trace(q, skip_bad_lines=True, jobs=1)


def test_small_blocks_and_workers_give_the_same_replay(tmp_path: Path) -> None:
    src = DATA / "mooncake_excerpt.jsonl"
    caps = [UNBOUNDED, 64 * 512, 8 * 512]
    whole = replay_trace(src, caps, jobs=1)
    for jobs in (1, 2):
        blocks = list(iter_jsonl_blocks(src, jobs=jobs, block_bytes=4096))
        assert len(blocks) > 10
        assert np.concatenate([b.line for b in blocks]).tolist() == list(range(1, 301))
        cut = replay_trace(src, caps, jobs=jobs, block_bytes=4096)
        assert np.array_equal(cut.hit_tokens, whole.hit_tokens)
        assert np.array_equal(cut.timestamp_ms, whole.timestamp_ms)
        assert cut.distinct_blocks == whole.distinct_blocks


def test_workers_number_skipped_lines_globally(tmp_path: Path) -> None:
    lines = [_line(i, 100, 1, [i]) for i in range(60)]
    lines[7] = "nope"
    lines[45] = _line(45, -3, 1, [1])
    p = _write(tmp_path / "t.jsonl", lines)
    r = replay_trace(p, jobs=2, skip_bad_lines=True, block_bytes=300)
    assert r.bad_lines == 2 and len(r) == 58
    assert r.bad_line_messages[0].startswith("line 8: malformed JSON")
    assert r.bad_line_messages[1].startswith("line 46: input_length: a negative length")


def test_unsorted_fallback_with_workers(tmp_path: Path) -> None:
    lines = [_line(1000 * (i % 7) + i, 600, 1, [i % 5, 100 + i]) for i in range(40)]
    p = _write(tmp_path / "u.jsonl", lines)
    warned: list[str] = []
    r = replay_trace(p, [UNBOUNDED, 1024], jobs=2, block_bytes=200, warn=warned.append)
    assert r.sorted_in_memory and warned
    order = sorted(range(40), key=lambda i: (1000 * (i % 7) + i, i))
    reqs = [[i % 5, 100 + i] for i in order]
    from pddplan.trace.cache import prefix_hits

    assert r.hit_blocks[:, 0].tolist() == prefix_hits(reqs, None)
    assert r.hit_blocks[:, 1].tolist() == prefix_hits(reqs, 2)


def test_gzip_trace(tmp_path: Path) -> None:
    p = tmp_path / "t.jsonl.gz"
    with gzip.open(p, "wt", encoding="utf-8") as fh:
        fh.write("\n".join(SHARED) + "\n")
    assert detect_format(p) == "jsonl"
    assert replay_trace(p, jobs=1).hit_blocks[:, 0].tolist() == [0, 2, 1, 3]


def test_string_and_huge_ids_are_hashed(tmp_path: Path) -> None:
    lines = [
        _line(0, 1024, 1, ["a", "b"]),  # type: ignore[list-item]
        _line(1, 1024, 1, ["a", "c"]),  # type: ignore[list-item]
        _line(2, 1024, 1, [2**70, 1]),
        _line(3, 1024, 1, [2**70, 2]),
    ]
    r = replay_trace(_write(tmp_path / "s.jsonl", lines), jobs=1)
    assert r.hit_blocks[:, 0].tolist() == [0, 1, 0, 1]
    assert string_block_id("a") == string_block_id("a") != string_block_id("b")


def test_unsorted_trace_is_sorted_in_memory_with_a_warning(tmp_path: Path) -> None:
    lines = [SHARED[0], SHARED[3], SHARED[1], SHARED[2]]
    lines[1] = _line(3000, 1400, 40, [1, 2, 3])
    p = _write(tmp_path / "u.jsonl", [lines[0], lines[2], lines[3], lines[1]][::-1])
    warnings: list[str] = []
    r = replay_trace(p, [UNBOUNDED, 1024], jobs=1, warn=warnings.append)
    assert r.sorted_in_memory
    assert len(warnings) == 1 and "not in order" in warnings[0]
    assert r.timestamp_ms.tolist() == [0, 1000, 2000, 3000]
    assert r.hit_blocks.T.tolist() == [[0, 2, 1, 3], [0, 2, 1, 1]]


def test_equal_timestamps_keep_file_order(tmp_path: Path) -> None:
    p = _write(tmp_path / "t.jsonl", [_line(0, 512, 1, [1]), _line(0, 512, 1, [1])])
    r = replay_trace(p, jobs=1)
    assert not r.sorted_in_memory
    assert r.hit_blocks[:, 0].tolist() == [0, 1]


# ------------------------------------------------------------------------------------- CSV


def test_csv_with_hit_rate(tmp_path: Path) -> None:
    r = replay_trace(DATA / "requests_small.csv")
    assert r.format == "csv" and len(r) == 12
    assert math.isnan(r.capacity_tokens[0])
    assert r.hit_tokens[:3, 0].tolist() == [0.0, 1000.0, 3800.0]
    assert r.timestamp_ms[:2].tolist() == [0.0, 500.0]


def test_csv_with_cached_tokens_and_seconds(tmp_path: Path) -> None:
    p = tmp_path / "c.csv"
    p.write_text(
        "timestamp_s,input_length,output_length,cached_tokens,extra\n1.5,100,5,50,x\n2,200,6,0,y\n",
        encoding="utf-8",
    )
    r = replay_trace(p)
    assert r.timestamp_ms.tolist() == [1500.0, 2000.0]
    assert r.hit_tokens[:, 0].tolist() == [50.0, 0.0]


def test_csv_without_timestamps(tmp_path: Path) -> None:
    p = tmp_path / "c.csv"
    p.write_text("input_length,output_length,hit_rate\n100,5,0.5\n", encoding="utf-8")
    r = replay_trace(p)
    assert np.isnan(r.timestamp_ms).all()
    with pytest.raises(UsageError, match="needs timestamps"):
        warmup_mask(r.timestamp_ms, 10)


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ("100,5,", "missing field 'hit_rate'"),
        ("-100,5,0.5", "input_length: a negative length"),
        ("100,5,1.5", "hit_rate: 1.5 is outside [0, 1]"),
        ("100,abc,0.5", "output_length: expected a number"),
    ],
)
def test_csv_bad_row_is_named(tmp_path: Path, row: str, message: str) -> None:
    p = tmp_path / "c.csv"
    p.write_text(f"input_length,output_length,hit_rate\n100,5,0.5\n{row}\n", encoding="utf-8")
    with pytest.raises(ProfileError) as info:
        replay_trace(p)
    assert str(info.value).startswith(f"{p}:3: ")
    assert message in str(info.value)
    r = replay_trace(p, skip_bad_lines=True)
    assert len(r) == 1 and r.bad_lines == 1


def test_csv_cached_tokens_above_input(tmp_path: Path) -> None:
    p = tmp_path / "c.csv"
    p.write_text("input_length,output_length,cached_tokens\n100,5,101\n", encoding="utf-8")
    with pytest.raises(ProfileError, match=r":2: cached_tokens: 101 is outside"):
        replay_trace(p)


@pytest.mark.parametrize("text", ["10.5", "0.083"])
def test_csv_fractional_cached_tokens_refused(tmp_path: Path, text: str) -> None:
    """A cached-token count is whole: a fraction (a hit rate under the wrong header) is refused."""
    p = tmp_path / "t.csv"
    p.write_text(f"input_length,output_length,cached_tokens\n100,5,{text}\n", encoding="utf-8")
    with pytest.raises(ProfileError, match=r":2: cached_tokens: expected an integer number"):
        replay_trace(p)


def test_csv_missing_columns(tmp_path: Path) -> None:
    p = tmp_path / "c.csv"
    p.write_text("input_length,output_length\n100,5\n", encoding="utf-8")
    with pytest.raises(ProfileError, match="cached_tokens' or a 'hit_rate"):
        replay_trace(p)
    p.write_text("input_length,hit_rate\n100,0.5\n", encoding="utf-8")
    with pytest.raises(ProfileError, match="lacks column 'output_length'"):
        replay_trace(p)
    p.write_text("", encoding="utf-8")
    with pytest.raises(ProfileError, match="empty"):
        replay_trace(p)


def test_detect_format(tmp_path: Path) -> None:
    a = tmp_path / "trace.log"
    a.write_text(SHARED[0] + "\n", encoding="utf-8")
    b = tmp_path / "trace.txt"
    b.write_text("input_length,output_length,hit_rate\n", encoding="utf-8")
    assert detect_format(a) == "jsonl"
    assert detect_format(b) == "csv"
    assert detect_format(b, "jsonl") == "jsonl"
    with pytest.raises(UsageError):
        detect_format(a, "parquet")


# ------------------------------------------------------------------------------ capacities


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("2000000", 2_000_000),
        ("2M", 2_000_000),
        ("1.5m", 1_500_000),
        ("64k", 64_000),
        ("64Ki", 65_536),
        ("1e6", 1_000_000),
        ("1_000_000", 1_000_000),
        ("unbounded", math.inf),
    ],
)
def test_parse_capacity(text: str, tokens: float) -> None:
    assert parse_capacity(text) == tokens


@pytest.mark.parametrize("text", ["", "abc", "-5", "1.5", "0", "2X"])
def test_parse_capacity_rejects(text: str) -> None:
    with pytest.raises(UsageError):
        parse_capacity(text)


def test_parse_capacities_keeps_order_and_drops_duplicates() -> None:
    assert parse_capacities("4M,unbounded,1M,4000000", 512) == [4e6, math.inf, 1e6]
    with pytest.raises(UsageError, match="holds no whole block"):
        parse_capacities("100", 512)


def test_warmup_mask() -> None:
    t = np.array([1000.0, 1500.0, 2000.0, 9000.0])
    assert warmup_mask(t, 0).tolist() == [True] * 4
    assert warmup_mask(t, 1).tolist() == [False, False, True, True]
    with pytest.raises(UsageError):
        warmup_mask(t, -1)


@pytest.mark.parametrize(
    ("version", "safe"),
    [
        ("3.8.3", False),
        ("3.9.14", False),
        ("3.9.15", True),
        ("3.10", True),
        ("3.11.5rc1", True),
        ("4.0.0", True),
        ("", False),
        ("dev", False),
    ],
)
def test_orjson_fast_path_only_from_the_version_that_limits_depth(version, safe) -> None:
    """orjson before 3.9.15 kills the process on a deeply nested line (CVE-2024-27454): the
    fast path takes it only from that version on."""
    from pddplan.trace.records import orjson_is_safe

    assert orjson_is_safe(version) is safe
