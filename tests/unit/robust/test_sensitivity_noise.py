"""The sensitivity's noise index: the index that inputs moving nothing reach by chance.

Before it, ``robust`` named the three largest indices as "the inputs that move it most" at any
sample count; at 10 samples those were noise (an input drawn independently of everything ranks
near 0.8 there). The index is a max-T permutation bar at a 5% family-wise level, so over many
tables of pure noise about one in twenty has some input above it.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from pddplan.robust.inputs import Input
from pddplan.robust.run import SENSITIVITY_NOISE_LEVEL, noise_index, sensitivity


def _inputs(k: int) -> list[Input]:
    return [Input(f"x{j}", 1.0, None, "estimated", "test") for j in range(k)]  # type: ignore[arg-type]


def test_noise_tables_pass_the_bar_at_the_stated_rate() -> None:
    """Pure-noise tables (inputs, BCR and margin drawn independently): the share with any
    input above the bar is the family-wise level, 5%. 400 tables give a binomial standard
    error of 1.1 points; the band is [1.5%, 9%] (about 3 standard errors each way)."""
    rng = np.random.default_rng(7)
    trials, above = 400, 0
    for _ in range(trials):
        n, k = 40, 12
        x, bcr, margin = rng.random((n, k)), rng.random(n), rng.random(n)
        above += bool(np.max(_indices(x, bcr, margin)) > noise_index(x, bcr, margin))
    share = above / trials
    assert 0.015 <= share <= 0.09, share
    assert SENSITIVITY_NOISE_LEVEL == 0.05


def _indices(x: np.ndarray, bcr: np.ndarray, margin: np.ndarray) -> np.ndarray:
    rows, _ = sensitivity(_inputs(x.shape[1]), x, bcr, margin, np.ones(x.shape[0], bool))
    return np.array([r["index"] for r in rows])


def test_bar_falls_with_the_samples_as_one_over_root_n() -> None:
    """Under independence a rank correlation has standard deviation 1 / sqrt(N - 1); the bar
    for the largest of 2k of them is about z / sqrt(N - 1) with z = Phi^-1(1 - 0.05 / (4k)) =
    3.29 for k = 25 (Bonferroni, a little above the permutation bar). At N = 1000 that is
    0.104; the permutation bar is within 10% of it, and at N = 10 it is far above 0.5."""
    rng = np.random.default_rng(3)
    k = 25
    bar_1000 = noise_index(rng.random((1000, k)), rng.random(1000), rng.random(1000))
    assert bar_1000 == pytest.approx(3.29 / math.sqrt(999), rel=0.10)
    bar_10 = noise_index(rng.random((10, k)), rng.random(10), rng.random(10))
    assert bar_10 > 0.75


def test_a_real_effect_is_above_and_noise_below() -> None:
    """BCR that falls with input 0 (plus noise): input 0 is above the bar, the others not."""
    rng = np.random.default_rng(11)
    n, k = 500, 8
    x = rng.random((n, k))
    bcr = 40.0 - 10.0 * x[:, 0] + rng.normal(0.0, 2.0, n)
    margin = rng.random(n)
    rows, bar = sensitivity(_inputs(k), x, bcr, margin, np.ones(n, bool))
    assert rows[0]["input"] == "x0" and rows[0]["above_noise"]
    assert rows[0]["bcr_rank_correlation"] < -0.5
    assert not any(r["above_noise"] for r in rows[1:]), [(r["input"], r["index"]) for r in rows]
    assert 0.0 < bar < 0.3


def test_same_bar_on_every_call_and_undefined_below_three_samples() -> None:
    rng = np.random.default_rng(5)
    x, bcr, margin = rng.random((60, 6)), rng.random(60), rng.random(60)
    assert noise_index(x, bcr, margin) == noise_index(x, bcr, margin)
    assert math.isnan(noise_index(x[:2], bcr[:2], margin[:2]))
    # constant outcomes: every index is 0, and so is chance's
    assert noise_index(x, np.ones(60), np.ones(60)) == 0.0


def test_answer_at_ten_samples_names_no_input() -> None:
    """The default scenario at 10 samples: the old answer named rate_rps, a GPU-B derate and
    rdma.efficiency (indices 0.82, 0.77, 0.68); chance reaches about 0.88 there."""
    import pddplan

    res = pddplan.robust(samples=10, seed=0)
    text = " ".join(res.answer())
    assert res.run.sensitivity_noise_index > 0.82
    assert not any(r["above_noise"] for r in res.run.sensitivity)
    assert "No input moves it beyond chance" in text
    assert "move it most" not in text
    doc = res.report().payload
    assert doc["sensitivity_noise_index"] == pytest.approx(res.run.sensitivity_noise_index)
