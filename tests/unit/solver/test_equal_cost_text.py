"""The tie rule's parts that the answer's sentences read (``costs_tie``, ``ttft_decider``) and
the sentence that explains a loss at equal cost (``results.solve._equal_cost_text``)."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest

from pddplan.results.solve import _equal_cost_text
from pddplan.solver.search import COST_TIE_USD_PER_HOUR, costs_tie, ttft_decider


def _plan(cost: float, goodput: float, ttft: tuple[float, float, float]) -> SimpleNamespace:
    return SimpleNamespace(
        cost_usd_per_hour=cost, goodput_rps=goodput, prefill=SimpleNamespace(ttft_s=ttft)
    )


def test_costs_tie_within_the_tolerance_only() -> None:
    a = _plan(100.0, 1.0, (1.0, 2.0, 3.0))
    assert costs_tie(a, _plan(100.0 + 0.5 * COST_TIE_USD_PER_HOUR, 1.0, (1.0, 2.0, 3.0)))
    assert not costs_tie(a, _plan(100.0 + 4 * COST_TIE_USD_PER_HOUR, 1.0, (1.0, 2.0, 3.0)))
    assert costs_tie(a, _plan(math.nan, 1.0, (1.0, 2.0, 3.0)))  # no comparison separates it


@pytest.mark.parametrize(
    ("qa", "qb", "index"),
    [
        ((1.0, 2.0, 3.0), (1.0, 2.0, 3.5), 2),  # p99 first
        ((1.0, 2.5, 3.0), (1.0, 2.0, 3.0), 1),  # p99 tie: p90
        ((1.2, 2.0, 3.0), (1.0, 2.0, 3.0 * (1 + 1e-12)), 0),  # p99 within the tolerance
        ((1.0, 2.0, 3.0), (1.0, 2.0, 3.0), None),
    ],
)
def test_ttft_decider_reads_p99_then_p90_then_p50(qa, qb, index) -> None:
    assert ttft_decider(qa, qb) == index


def test_equal_cost_sentence_names_the_deciding_percentile() -> None:
    pdd = _plan(152.2, 2.0, (1.0, 8.0, 17.0))
    base = _plan(152.2, 2.01, (1.5, 9.0, 18.5))
    text = _equal_cost_text(pdd, base, "no-relay-rld")
    assert text == (
        "Both cost the same, and at equal cost the search keeps the lower TTFT: PDD's TTFT p99 "
        "is 17 s against 18.5 s for no-relay-rld, which serves 0.5% more (goodput 2.01 "
        "against 2 req/s)."
    )
    # p99 tied: the sentence names p90, the percentile the rule read
    tied = _plan(152.2, 2.01, (1.5, 9.0, 17.0))
    assert "TTFT p90 is 8 s against 9 s" in (_equal_cost_text(pdd, tied, "x") or "")


@pytest.mark.parametrize(
    "base",
    [
        _plan(150.0, 2.01, (1.5, 9.0, 18.5)),  # a cheaper baseline: cost, not the tie rule
        _plan(152.2, 2.0, (1.5, 9.0, 18.5)),  # serves no more
        _plan(152.2, 2.01, (0.5, 7.0, 16.0)),  # PDD's TTFT is not the lower
        _plan(152.2, 2.01, (1.0, 8.0, 17.0)),  # every percentile ties
    ],
)
def test_no_equal_cost_sentence_where_the_rule_did_not_decide(base) -> None:
    assert _equal_cost_text(_plan(152.2, 2.0, (1.0, 8.0, 17.0)), base, "x") is None


@pytest.fixture(scope="module")
def paper_solve():
    """pdd-paper with its verdict check: PDD loses to no-relay-rld at equal cost, the BCR
    ratio (0.998) within the goodputs' precision of 1, the fleet checks separating them."""
    import pddplan

    return pddplan.solve("pdd-paper")


def _loss_sentence(res) -> str | None:
    return next((s for s in res.answer() if s.startswith("PDD loses")), None)


def test_a_loss_is_the_verdicts_where_it_ran(paper_solve) -> None:
    from dataclasses import replace

    from pddplan.solver.fleet import loses_by_ratio

    (v,) = [v for v in paper_solve.verdict.verdicts if v.baseline == "no-relay-rld"]
    assert v.outcome == "loses" and v.bcr_ratio is not None and v.bcr_ratio < 1
    assert not loses_by_ratio(v.bcr_ratio)  # the ratio alone is within the precision: a tie
    said = _loss_sentence(paper_solve)
    assert said is not None and "(no-relay-rld)" in said and "Both cost the same" in said
    # the same figures with the verdict's outcome a tie: no loss is said
    tie = [replace(x, outcome="tie") if x is v else x for x in paper_solve.verdict.verdicts]
    tied = replace(paper_solve, verdict=replace(paper_solve.verdict, verdicts=tie))
    assert _loss_sentence(tied) is None
    # without the verdict check the ratio decides, as a sweep's answer reads it: a tie
    assert _loss_sentence(replace(paper_solve, verdict=None)) is None


@pytest.mark.parametrize(
    ("ratio", "loses"),
    [(0.9981, False), (0.99805, False), (0.9979, True), (0.9, True), (1.01, False)],
)
def test_loses_by_ratio_beyond_the_goodputs_precision(ratio: float, loses: bool) -> None:
    from pddplan.solver.fleet import GOODPUT_RTOL, loses_by_ratio

    assert GOODPUT_RTOL == 1e-3  # the cases above sit at 2 x GOODPUT_RTOL
    assert loses_by_ratio(ratio) is loses
