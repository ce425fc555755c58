"""Unit tests of pddplan.models.memory against hand-computed values (shared/reference/models.md)."""

from __future__ import annotations

import numpy as np
import pytest

from pddplan.models import memory


def test_gqa_kv_bytes_llama_70b_bf16() -> None:
    # 2 (K, V) * 8 KV heads * 128 dim * 80 layers * 2 bytes = 327,680 B/token
    assert memory.gqa_kv_bytes_per_token(80, 8, 128, 2.0) == 327_680


def test_gqa_kv_bytes_array() -> None:
    # Qwen3-235B: 94 layers, 4 KV heads -> 2*4*128*94*2 = 192,512; Qwen3-32B 64 layers, 8 heads
    # -> 2*8*128*64*2 = 262,144; Llama-3.1-405B 126 layers -> 516,096
    layers = np.array([94.0, 64.0, 126.0])
    kv_heads = np.array([4.0, 8.0, 8.0])
    out = memory.gqa_kv_bytes_per_token(layers, kv_heads, 128, 2.0)
    np.testing.assert_array_equal(out, [192_512, 262_144, 516_096])
    for i in range(3):
        assert out[i] == memory.gqa_kv_bytes_per_token(layers[i], kv_heads[i], 128, 2.0)


def test_mla_kv_bytes_deepseek_v3() -> None:
    # (512 + 64) * 61 layers * 2 bytes = 70,272 (BF16); FP8 halves it to 35,136
    assert memory.mla_kv_bytes_per_token(61, 512, 64, 2.0) == 70_272
    assert memory.mla_kv_bytes_per_token(61, 512, 64, 1.0) == 35_136
    out = memory.mla_kv_bytes_per_token(61, 512, 64, np.array([2.0, 1.0]))
    np.testing.assert_array_equal(out, [70_272, 35_136])


@pytest.mark.parametrize(
    ("kv_heads", "tp", "expected"),
    [
        (8, 16, 2.0),  # 16 ranks * ceil(8/16)=1 head / 8 heads
        (4, 8, 2.0),  # 8 * 1 / 4
        (8, 8, 1.0),  # one head per rank, no copies
        (8, 4, 1.0),  # 4 * 2 / 8
        (8, 1, 1.0),
        (8, 3, 1.125),  # 3 * ceil(8/3)=3 / 8 = 9/8: uneven split pads
        (1, 8, 8.0),  # a single KV head is copied to every rank
    ],
)
def test_gqa_kv_replication(kv_heads: int, tp: int, expected: float) -> None:
    assert memory.gqa_kv_replication(kv_heads, tp) == pytest.approx(expected)


def test_gqa_kv_replication_array() -> None:
    tp = np.array([1.0, 2.0, 4.0, 8.0, 16.0, 32.0])
    out = memory.gqa_kv_replication(8, tp)
    np.testing.assert_allclose(out, [1, 1, 1, 1, 2, 4])
    np.testing.assert_allclose(out, [memory.gqa_kv_replication(8, t) for t in tp])


def test_latent_kv_replication_equals_tp() -> None:
    assert memory.latent_kv_replication(8) == 8.0
    np.testing.assert_array_equal(
        memory.latent_kv_replication(np.array([1, 4, 16])), [1.0, 4.0, 16.0]
    )


def test_weight_bytes_per_chip() -> None:
    # 70.55e9 params * 2 bytes / 8 chips = 17.638e9 bytes
    assert memory.weight_bytes_per_chip(70.552387584e9, 2.0, 8) == pytest.approx(17.638096896e9)
    # DeepSeek-V3 671B at FP8 on 16 chips: 671e9 / 16 = 41.9375e9
    assert memory.weight_bytes_per_chip(671e9, 1.0, 16) == 41.9375e9
    out = memory.weight_bytes_per_chip(671e9, 1.0, np.array([8.0, 16.0]))
    np.testing.assert_array_equal(out, [83.875e9, 41.9375e9])


def test_kv_bytes_per_sequence() -> None:
    # 8192 tokens * 327,680 B = 2,684,354,560 B; with a 21 MB constant: + 21e6
    assert memory.kv_bytes_per_sequence(8192, 327_680) == 2_684_354_560
    assert memory.kv_bytes_per_sequence(8192, 327_680, 21e6) == 2_684_354_560 + 21e6
    assert memory.kv_bytes_per_sequence(0, 327_680, 21e6) == 21e6
    out = memory.kv_bytes_per_sequence(np.array([0.0, 8192.0]), 327_680, 21e6)
    np.testing.assert_array_equal(out, [21e6, 2_684_354_560 + 21e6])


def test_max_batch_in_memory_by_hand() -> None:
    # 8 chips x 80 GB at 90%: 8 * (72e9 - 30e9 weights) = 336e9 bytes free
    # per sequence at 8192 tokens x 327,680 B = 2,684,354,560 -> 336e9 / 2.684e9 = 125.17 -> 125
    b = memory.max_batch_in_memory(8192, 80e9, 8, 0.9, 30e9, 327_680)
    assert b == 125
    # with a 1 GB per-sequence constant: 336e9 / 3.684e9 = 91.2 -> 91
    assert memory.max_batch_in_memory(8192, 80e9, 8, 0.9, 30e9, 327_680, 1e9) == 91


def test_max_batch_in_memory_clips_at_zero() -> None:
    # weights (75 GB) exceed the usable 72 GB: no sequence fits, not a negative batch
    assert memory.max_batch_in_memory(8192, 80e9, 8, 0.9, 75e9, 327_680) == 0


def test_max_batch_in_memory_array_matches_scalar() -> None:
    ctx = np.array([1024.0, 8192.0, 65536.0, 131072.0])
    out = memory.max_batch_in_memory(ctx, 80e9, 8, 0.9, 30e9, 327_680, 1e6)
    expected = [memory.max_batch_in_memory(c, 80e9, 8, 0.9, 30e9, 327_680, 1e6) for c in ctx]
    np.testing.assert_array_equal(out, expected)
    # 336e9 / (65536 * 327,680 + 1e6) = 336e9 / 21,476,147,200 = 15.6 -> 15
    assert out[2] == 15
    assert np.all(np.diff(out) <= 0)
