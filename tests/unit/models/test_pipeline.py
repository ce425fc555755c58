"""Unit tests of pddplan.models.pipeline: relay wait, eager tokens and the two hand-over modes."""

from __future__ import annotations

import numpy as np
import pytest

from pddplan.models import pipeline as pl


def test_relay_wait() -> None:
    # WAN 3 s, RDMA 50 ms: RLD relays for 2.95 s; a WAN faster than RDMA means no relay
    assert pl.relay_wait_s(3.0, 0.05) == pytest.approx(2.95)
    assert pl.relay_wait_s(0.01, 0.05) == 0.0
    out = pl.relay_wait_s(np.array([0.01, 1.0, 3.0]), 0.05)
    np.testing.assert_allclose(out, [0.0, 0.95, 2.95])


def test_eager_tokens() -> None:
    # 3 s / 0.25 s per token = 12 tokens; 3.1 s -> ceil(12.4) = 13
    assert pl.eager_tokens(3.0, 0.25, 1024) == 12
    assert pl.eager_tokens(3.1, 0.25, 1024) == 13
    assert pl.eager_tokens(0.0, 0.25, 1024) == 0


def test_eager_tokens_capped_by_output() -> None:
    # 100 s of relay would be 400 tokens, but the request only has 50
    assert pl.eager_tokens(100.0, 0.25, 50) == 50


def test_eager_tokens_array() -> None:
    w = np.array([0.0, 3.0, 3.1, 100.0])
    out_len = np.array([1024.0, 1024.0, 1024.0, 50.0])
    out = pl.eager_tokens(w, 0.25, out_len)
    np.testing.assert_array_equal(out, [0, 12, 13, 50])
    for i in range(4):
        assert out[i] == pl.eager_tokens(w[i], 0.25, out_len[i])


def test_one_shot_handover() -> None:
    # 100 tokens, e(k) = 10 ms + 1 ms * k -> stall 0.11 s; RLD ships IDs in 2 ms then leaves
    rld, stall, rounds = pl.one_shot_handover(100, 0.01, 0.001, 0.002)
    assert rld == pytest.approx(0.002)
    assert stall == pytest.approx(0.11)
    assert rounds == 1


def test_one_shot_handover_nothing_to_hand_over() -> None:
    rld, stall, rounds = pl.one_shot_handover(0, 0.01, 0.001, 0.002)
    assert (float(rld), float(stall), float(rounds)) == (0.0, 0.0, 0.0)


def test_one_shot_array() -> None:
    k = np.array([0.0, 10.0, 100.0])
    rld, stall, rounds = pl.one_shot_handover(k, 0.01, 0.001, 0.002)
    np.testing.assert_allclose(stall, [0.0, 0.02, 0.11])
    np.testing.assert_allclose(rld, [0.0, 0.002, 0.002])
    np.testing.assert_array_equal(rounds, [0, 1, 1])


# Catch-up: T = 64, e(k) = 0.01 + 0.001 k, tpot 50 ms, ID transfer 2 ms.
# e(T) = 0.074 s; while MD extends 64 tokens RLD adds 0.074 / 0.05 = 1.48 -> gain 62.52 per round
CU = dict(
    threshold_tokens=64,
    extend_fixed_s=0.01,
    extend_per_token_s=0.001,
    rld_tpot_s=0.05,
    handover_transfer_s=0.002,
)


def test_catch_up_two_rounds_by_hand() -> None:
    # k0 = 150 > 64 -> k1 = 150 - 62.52 = 87.48 > 64 -> k2 = 24.96 <= 64: two full rounds,
    # then the last 24.96 tokens go one-shot: stall e(24.96) = 0.01 + 0.02496 = 0.03496 s
    # RLD busy: 2 rounds * (0.074 + 0.002) + final ID transfer 0.002 = 0.154 s
    rld, stall, rounds = pl.catch_up_handover(150, **CU)
    assert rounds == 3  # two catch-up passes plus the final one
    assert stall == pytest.approx(0.03496)
    assert rld == pytest.approx(0.154)


def test_catch_up_backlog_below_threshold_is_one_shot() -> None:
    cu = pl.catch_up_handover(40, **CU)
    os_ = pl.one_shot_handover(40, 0.01, 0.001, 0.002)
    for a, b in zip(cu, os_, strict=True):
        assert float(a) == pytest.approx(float(b))


def test_catch_up_stall_smaller_than_one_shot() -> None:
    _, stall_cu, _ = pl.catch_up_handover(500, **CU)
    _, stall_os, _ = pl.one_shot_handover(500, 0.01, 0.001, 0.002)
    assert stall_cu <= 0.074 < stall_os == pytest.approx(0.51)


def test_catch_up_non_converging_falls_back_to_one_shot() -> None:
    # tpot 1 ms: RLD adds e(64)/tpot = 74 tokens while MD extends 64 -> never catches up
    cu = dict(CU, rld_tpot_s=0.001)
    rld, stall, rounds = pl.catch_up_handover(150, **cu)
    assert rld == pytest.approx(0.002)
    assert stall == pytest.approx(0.01 + 0.001 * 150)
    assert rounds == 1


def test_catch_up_array_matches_scalar() -> None:
    k = np.array([0.0, 40.0, 150.0, 500.0])
    rld, stall, rounds = pl.catch_up_handover(k, **CU)
    for i in range(len(k)):
        r1, s1, n1 = pl.catch_up_handover(k[i], **CU)
        assert rld[i] == pytest.approx(float(r1))
        assert stall[i] == pytest.approx(float(s1))
        assert rounds[i] == float(n1)
    assert (rld[0], stall[0], rounds[0]) == (0.0, 0.0, 0.0)


def test_catch_up_round_cap_reports_the_real_final_stall() -> None:
    # A slowly converging catch-up: tpot = 0.074 / 62.9 makes RLD add e(64)/tpot = 62.9 tokens
    # per round, so the backlog falls by only 64 - 62.9 = 1.1 tokens a round. From k = 500 it
    # would need ceil((500 - 64) / 1.1) = 397 rounds; the cap stops it after
    # MAX_CATCH_UP_ROUNDS = 64, and the remaining 500 - 64 * 1.1 = 429.6 tokens go one-shot
    # (docstring: "The final backlog goes one-shot"). That last extend,
    # e(429.6) = 0.01 + 0.4296 = 0.4396 s, is the pause MD shows - not e(64) = 0.074 s.
    tpot = 0.074 / (64 - 1.1)
    rld, stall, rounds = pl.catch_up_handover(500, **dict(CU, rld_tpot_s=tpot))
    backlog = 500 - pl.MAX_CATCH_UP_ROUNDS * 1.1
    assert rounds == pl.MAX_CATCH_UP_ROUNDS + 1
    assert stall == pytest.approx(0.01 + 0.001 * backlog, rel=1e-6)


def test_rld_output_share() -> None:
    # (0.5 * 10 + 0.5 * 0) / (0.5 * 100 + 0.5 * 100) = 5 / 100
    assert pl.rld_output_share(
        np.array([10.0, 0.0]), np.array([100.0, 100.0]), np.array([0.5, 0.5])
    ) == pytest.approx(0.05)
    # 64K/1K scenario in the brief: RLD at 6.2 % -> 63.488 eager tokens of 1,024 on average
    assert pl.rld_output_share(
        np.array([63.488]), np.array([1024.0]), np.array([1.0])
    ) == pytest.approx(0.062)


def test_little_concurrency() -> None:
    assert pl.little_concurrency(2.0, 3.0) == 6.0
    np.testing.assert_array_equal(pl.little_concurrency(np.array([1.0, 2.0]), 3.0), [3.0, 6.0])


def test_catch_up_over_several_md_options_is_each_option_s_own() -> None:
    # extend terms as a column (one MD option a row): each row is the scalar call's values to
    # the bit, a row whose catch-up cannot converge (e(T) >= T tpot) is its one-shot
    rng = np.random.default_rng(5)
    k = np.concatenate([[0.0, 3.0, 4.0, 5.0], rng.uniform(0, 400, 40)])
    e0 = np.array([0.002, 0.02, 0.15, 0.3, 0.04])
    e1 = np.array([0.0001, 0.001, 0.002, 0.02, 0.0])
    many = pl.catch_up_handover(k, 4, e0[:, None], e1[:, None], 0.05, 0.01)
    diverges = 0
    for i in range(len(e0)):
        one = pl.catch_up_handover(k, 4, float(e0[i]), float(e1[i]), 0.05, 0.01)
        diverges += (e0[i] + e1[i] * 4) >= 4 * 0.05
        for got, want in zip(many, one, strict=True):
            assert (
                np.broadcast_to(got, (len(e0), len(k)))[i].tobytes()
                == np.broadcast_to(want, k.shape).tobytes()
            )
    assert 0 < diverges < len(e0)
