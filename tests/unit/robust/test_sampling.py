"""The robust study's sampling and rank correlation without scipy.stats or scipy.special: the
same numbers as the scipy functions they replaced (scipy is a dependency, so they are at hand
here)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import ndtri
from scipy.stats import qmc, rankdata

from pddplan.robust.inputs import latin_hypercube, normal_quantile
from pddplan.robust.run import _spearman, average_ranks


@pytest.mark.parametrize("seed", [0, 1, 7, 123_456_789, 2**40])
@pytest.mark.parametrize(("samples", "dims"), [(2, 1), (10, 3), (1000, 27), (7, 5)])
def test_latin_hypercube_is_scipys(seed: int, samples: int, dims: int) -> None:
    ours = latin_hypercube(samples, dims, seed)
    theirs = qmc.LatinHypercube(d=dims, seed=seed).random(samples)
    assert np.array_equal(ours, theirs)


def test_latin_hypercube_is_stratified() -> None:
    u = latin_hypercube(500, 4, 3)
    assert u.shape == (500, 4)
    assert np.all((u > 0) & (u < 1))
    for j in range(4):  # one draw in each of the 500 strata of every column
        assert sorted(np.floor(u[:, j] * 500).astype(int)) == list(range(500))


def test_latin_hypercube_seeded() -> None:
    assert np.array_equal(latin_hypercube(50, 3, 11), latin_hypercube(50, 3, 11))
    assert not np.array_equal(latin_hypercube(50, 3, 11), latin_hypercube(50, 3, 12))


@pytest.mark.parametrize(
    "a",
    [
        np.random.default_rng(3).random(1000),
        np.random.default_rng(4).integers(0, 5, 1000).astype(float),
        np.array([1.0, 1.0, 1.0]),
        np.array([np.inf, 1.0, np.inf, -np.inf, 0.0]),
        np.array([2.0]),
    ],
)
def test_average_ranks_are_rankdatas(a: np.ndarray) -> None:
    assert np.array_equal(average_ranks(a), rankdata(a))


def test_spearman() -> None:
    x = np.arange(10.0)
    assert _spearman(x, x**3) == pytest.approx(1.0)
    assert _spearman(x, -x) == pytest.approx(-1.0)
    assert _spearman(x, np.ones(10)) == 0.0  # a constant: undefined
    y = x.copy()
    y[3] = np.nan
    assert _spearman(x, y) == 0.0  # a NaN: undefined, as scipy's propagated NaN gave


def test_normal_quantile_is_ndtri_to_the_bit() -> None:
    """Every branch of Cephes' ndtri (the centre, the tails below exp(-2) and below exp(-32),
    their mirror images near 1), its edges and what lies outside [0, 1]."""
    rng = np.random.default_rng(2026)
    u = np.concatenate(
        [
            rng.uniform(size=200_000),
            10.0 ** -rng.uniform(0.0, 307.0, size=50_000),
            1.0 - 10.0 ** -rng.uniform(0.5, 16.0, size=50_000),
            [0.0, 1.0, 0.5, 0.13533528323661269, 1.0 - 0.13533528323661269, 1.2664165549e-14],
            [5e-324, 1e-320, np.nextafter(1.0, 0.0), np.nextafter(0.5, 0.0), 0.001, 0.999],
        ]
    )
    assert np.array_equal(normal_quantile(u), ndtri(u))
    assert np.all(np.isnan(normal_quantile(np.array([-0.1, 1.1, np.nan]))))
    assert normal_quantile(np.array([[0.5, 0.975]])).shape == (1, 2)


def test_the_default_rules_are_what_the_schema_validates() -> None:
    """The default rules' distributions are made without validation
    (:func:`pddplan.robust.inputs._rel`): each is the one the schema gives for its own
    dump, with the same fields set, and its nested kind too."""
    from pddplan.robust.inputs import DEFAULT_RULES
    from pddplan.spec import Distribution

    for kind, rule in DEFAULT_RULES.items():
        dumped = rule.dist.model_dump(exclude_unset=True)
        checked = Distribution.model_validate(dumped)
        assert checked == rule.dist, kind
        assert checked.model_fields_set == rule.dist.model_fields_set, kind
        (name,) = dumped
        inner, inner_checked = getattr(rule.dist, name), getattr(checked, name)
        assert inner == inner_checked and inner.model_fields_set == inner_checked.model_fields_set


@pytest.mark.parametrize("point", [0.5, 0.8, 0.95, 0.99])
def test_a_capped_efficiency_is_what_the_schema_validates(point: float) -> None:
    """An efficiency's relative range capped at 1 (:func:`~pddplan.robust.inputs.capped`, made
    without validation) is a distribution the schema accepts as it is, whose top is 1 or
    the mode; its values stay at most 1 where the mode allows."""
    from pddplan.robust.inputs import DEFAULT_RULES, Input, capped, values
    from pddplan.spec import Distribution

    rule = DEFAULT_RULES["efficiency"]
    inp = capped(Input("chips.x.derates.compute_efficiency", point, rule.dist, "efficiency", ""))
    checked = Distribution.model_validate(inp.dist.model_dump(exclude_unset=True))
    assert checked == inp.dist
    r = inp.dist.relative
    assert r is not None and r.high == max(min(rule.dist.relative.high, 1 / point), r.mode)
    top = float(values(inp, np.array([1.0]))[0])
    assert top == pytest.approx(point * r.high) and top <= max(1.0, point * r.mode) + 1e-12


def test_any_whole_number_key_can_be_sampled_and_is_drawn_whole(tmp_path) -> None:
    # only two integer keys (the chunk size and the catch-up threshold) were rounded: sampling
    # a workload's fixed output length was refused with "its distribution reaches 500, which
    # the key does not allow ... valid integer (got 500.0)"
    import numpy as np

    import pddplan
    from pddplan.io.loader import Registry
    from pddplan.robust.inputs import sample_overrides

    text = Registry.default().scenario_path(None).read_text(encoding="utf-8")
    text += (
        "uncertainty:\n  source: a test\n  defaults: false\n  inputs:\n"
        "    workload.output_tokens.fixed: {uniform: {low: 500, high: 1500}}\n"
        "    serving.chunk_size_tokens: {uniform: {low: 4096, high: 16384}}\n"
        "    rate_rps: {uniform: {low: 1.5, high: 2.5}}\n"
    )
    f = tmp_path / "s.yaml"
    f.write_text(text, encoding="utf-8")
    run = pddplan.robust(str(f), samples=4, seed=1, jobs=1).run
    by = {i.path: i for i in run.inputs}
    assert by["workload.output_tokens.fixed"].integer and by["serving.chunk_size_tokens"].integer
    assert not by["rate_rps"].integer
    rows = sample_overrides(run.inputs, np.array([[777.6, 5000.4, 2.25]]))
    values = rows[0]
    assert (
        values["workload.output_tokens.fixed"] == 778
        and values["serving.chunk_size_tokens"] == 5000
    )
    assert values["rate_rps"] == 2.25
