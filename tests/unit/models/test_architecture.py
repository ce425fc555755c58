"""Unit tests of pddplan.models.architecture against hand-computed parameter counts."""

from __future__ import annotations

import numpy as np
import pytest

from pddplan.deployment import model_numbers
from pddplan.io.loader import Registry
from pddplan.models import architecture as arch


def test_gqa_attention_params_llama_70b() -> None:
    # Llama-3.1-70B: h 8192, 64 heads, 8 KV heads, d 128
    # Q + O: 2 * 8192 * 64 * 128 = 134,217,728; K + V: 2 * 8192 * 8 * 128 = 16,777,216
    assert arch.gqa_attention_params(8192, 64, 8, 128) == 150_994_944


def test_gqa_attention_params_array_agrees_with_scalar() -> None:
    h = np.array([4096.0, 8192.0, 16384.0])
    out = arch.gqa_attention_params(h, 64, 8, 128)
    assert out.shape == (3,)
    for hi, oi in zip(h, out, strict=True):
        assert oi == arch.gqa_attention_params(hi, 64, 8, 128)


def test_mla_attention_params_deepseek_v3() -> None:
    # h 7168, H 128, r_kv 512, d_rope 64, d_nope 128, d_v 128, r_q 1536
    # Q: 7168*1536 + 1536*128*(128+64) = 11,010,048 + 37,748,736 = 48,758,784
    # KV down: 7168*(512+64) = 4,128,768; KV up: 512*128*(128+128) = 16,777,216
    # O: 128*128*7168 = 117,440,512; total 187,105,280
    assert arch.mla_attention_params(7168, 128, 512, 64, 128, 128, 1536) == 187_105_280


def test_mla_attention_params_without_q_lora() -> None:
    # Q without low rank: 7168 * 128 * 192 = 176,160,768 instead of 48,758,784
    with_lora = arch.mla_attention_params(7168, 128, 512, 64, 128, 128, 1536)
    without = arch.mla_attention_params(7168, 128, 512, 64, 128, 128, None)
    assert without - with_lora == 176_160_768 - 48_758_784


def test_mla_attention_params_array() -> None:
    h = np.array([5120.0, 7168.0])
    out = arch.mla_attention_params(h, 128, 512, 64, 128, 128, 1536)
    assert out[1] == 187_105_280
    assert out[0] == arch.mla_attention_params(5120.0, 128, 512, 64, 128, 128, 1536)


def test_dense_ffn_params() -> None:
    # SwiGLU: 3 * 8192 * 28672 = 704,643,072
    assert arch.dense_ffn_params(8192, 28672) == 704_643_072
    np.testing.assert_array_equal(
        arch.dense_ffn_params(np.array([8192.0, 5120.0]), 28672), [704_643_072, 3 * 5120 * 28672]
    )


def test_moe_layer_params_deepseek_v3() -> None:
    # the model's counts (pddplan.deployment.models.param_counts, the one home of the rule) on
    # DeepSeek-V3's 58 MoE layers: one expert 3 * 7168 * 2048 = 44,040,192 a layer; the shared
    # expert and the router (7168 * 256 = 1,835,008) in the dense part; a whole MoE layer
    # (256 + 1) * 44,040,192 + 1,835,008 = 11,320,164,352, a token's share of it
    # (8 + 1) * 44,040,192 + 1,835,008 = 398,196,736
    m = model_numbers(Registry.default().load("model", "deepseek-v3"))
    moe_layers = 58
    assert m.expert_params == moe_layers * 44_040_192
    dense_no_moe = m.dense_params - moe_layers * (44_040_192 + 1_835_008)
    assert m.total_params == dense_no_moe + moe_layers * 11_320_164_352
    emb = 2 * 129_280 * 7168  # untied: input embedding and LM head
    lm_head = 129_280 * 7168
    assert m.active_params == dense_no_moe - emb + lm_head + moe_layers * 398_196_736


def test_embedding_params_tied_and_untied() -> None:
    # untied: 2 * 129,280 * 7168 = 1,853,358,080; tied: half
    assert arch.embedding_params(129280, 7168, False) == 1_853_358_080
    assert arch.embedding_params(129280, 7168, True) == 926_679_040
    np.testing.assert_array_equal(
        arch.embedding_params(np.array([129280.0, 128256.0]), 7168, False),
        [1_853_358_080, 2 * 128256 * 7168],
    )


def test_llama_70b_total_params_by_hand() -> None:
    # 80 layers * (150,994,944 + 704,643,072) + 2 * 128,256 * 8192 = 70,552,387,584 (70.6B)
    total = 80 * (arch.gqa_attention_params(8192, 64, 8, 128) + arch.dense_ffn_params(8192, 28672))
    total += arch.embedding_params(128256, 8192, False)
    assert total == 70_552_387_584


def test_expected_experts_touched() -> None:
    # one token touches exactly top_k experts: 256 * (1 - (1 - 8/256)^1) = 8
    assert arch.expected_experts_touched(1, 256, 8) == pytest.approx(8.0)
    assert arch.expected_experts_touched(0, 256, 8) == 0.0
    # two tokens: 8 * (1 - (1 - 2/8)^2) = 8 * (1 - 0.5625) = 3.5
    assert arch.expected_experts_touched(2, 8, 2) == pytest.approx(3.5)
    # many tokens touch (almost) all experts
    assert arch.expected_experts_touched(10_000, 256, 8) == pytest.approx(256.0)


def test_expected_experts_touched_array_matches_scalar() -> None:
    n = np.array([0.0, 1.0, 2.0, 16.0, 1024.0])
    out = arch.expected_experts_touched(n, 256, 8)
    np.testing.assert_allclose(out, [arch.expected_experts_touched(x, 256, 8) for x in n])
    assert np.all(np.diff(out) > 0)


def test_expected_experts_touched_with_shares_is_the_same_however_many_steps_a_call_holds() -> None:
    """With uneven expert shares the expected count sums over the experts: each step's sum is
    its own, bit for bit, whether the call holds one step, several or a 2-D array of them (a
    batched search reads each step as a call of its own would give it). Summed down a column of
    several steps, as before, some steps' last bits differed."""
    shares = arch.zipf_expert_shares(256, 1.0)
    rng = np.random.default_rng(7)
    n = rng.uniform(0.5, 5000.0, size=300)
    alone = [float(arch.expected_experts_touched(float(x), 256, 8, shares)) for x in n]
    together = arch.expected_experts_touched(n, 256, 8, shares)
    assert together.tolist() == alone
    grid = arch.expected_experts_touched(n.reshape(20, 15), 256, 8, shares)
    assert grid.shape == (20, 15) and grid.ravel().tolist() == alone


def test_attention_flops_per_token_per_context() -> None:
    # 2 * 80 layers * 64 heads * (128 + 128) = 2,621,440
    assert arch.attention_flops_per_token_per_context(80, 64, 128, 128) == 2_621_440
    out = arch.attention_flops_per_token_per_context(np.array([61.0, 80.0]), 64, 128, 128)
    np.testing.assert_array_equal(out, [2 * 61 * 64 * 256, 2_621_440])


def test_causal_context_sum_tokens() -> None:
    # 3 new tokens after 10 cached: 11 + 12 + 13 = 36 = 3*10 + 3*4/2
    assert arch.causal_context_sum_tokens(3, 10) == 36
    assert arch.causal_context_sum_tokens(0, 10) == 0
    # no prefix: 1 + 2 + ... + 100 = 5050
    assert arch.causal_context_sum_tokens(100, 0) == 5050
    out = arch.causal_context_sum_tokens(np.array([3.0, 100.0]), np.array([10.0, 0.0]))
    np.testing.assert_array_equal(out, [36, 5050])
