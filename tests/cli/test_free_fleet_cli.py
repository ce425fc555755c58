"""Fleets that cost nothing: owned chips at ``inventory.owned_cost: sunk`` with the default
opex of 0 (and, for PDD, a free line). Their BCR is unbounded. A command that must rank or plot
it says so in one line with exit 3; one that reports a fleet's figures writes a null BCR. Each
was a traceback or an internal error (exit 1)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from test_calibrate_cli import REPO, run  # python -m pddplan from the repository, CPU-limited

#: Every chip of every fleet owned and sunk: the one-datacenter baseline costs nothing.
OWNED = [
    "examples/pdd-paper.yaml",
    "--own",
    "gpu-a=64",
    "--own",
    "gpu-b=64",
    "--set",
    "inventory.owned_cost=sunk",
]
#: ... and a free line: PDD's own fleet costs nothing too.
FREE = [*OWNED, "--set", "link.price_usd_per_month=0"]


def _one_line_unbounded(r: subprocess.CompletedProcess[str]) -> None:
    assert r.returncode == 3, r.stderr
    assert "Traceback" not in r.stderr
    errors = [ln for ln in r.stderr.splitlines() if ln.startswith("pddplan: error:")]
    assert len(errors) == 1, r.stderr
    assert "unbounded" in errors[0] and "inventory.opex_usd_per_chip_hour" in errors[0]


def _strict_json(text: str) -> dict:
    def refuse(token: str) -> None:
        raise AssertionError(f"the JSON document holds {token}")

    return json.loads(text, parse_constant=refuse)


@pytest.mark.parametrize("owned", [["gpu-a=24"], ["gpu-a=48", "gpu-b=48"]])
def test_a_solve_whose_fleets_cost_nothing_has_null_bcrs_and_says_why(owned: list[str]) -> None:
    """A free fleet's BCR is ``null`` in the JSON document with ``bcr_undefined``, and a ratio
    against it is 0 (PDD's finite BCR over it) or ``null`` with why (PDD's own BCR unbounded:
    then the verdict, which compares BCRs, is not checked, and a note says so). With 24 GPU-A
    owned the one-datacenter baseline is free and PDD (which rents GPU-B for MD) is not; with
    both kinds owned every fleet is."""
    own = [a for o in owned for a in ("--own", o)]
    free = ["examples/pdd-paper.yaml", "--set", "inventory.owned_cost=sunk"]
    free += ["--set", "link.price_usd_per_month=0", "--set", "rate_rps=0.05"]
    r = run("solve", *free, *own, "--format", "json")
    assert r.returncode == 0, r.stderr
    d = _strict_json(r.stdout)
    same_dc = next(b for b in d["baselines"] if b["name"] == "same-dc")
    assert same_dc["cost_usd_per_hour"] == 0
    assert same_dc["bcr_requests_per_usd"] is None and "unbounded" in same_dc["bcr_undefined"]
    if d["plan"]["cost_usd_per_hour"] > 0:
        verdict = next(v for v in d["verdict"]["baselines"] if v["name"] == "same-dc")
        assert d["plan"]["bcr_requests_per_usd"] > 0 and "bcr_undefined" not in d["plan"]
        assert same_dc["bcr_ratio"] == 0 and verdict["bcr_ratio"] == 0
    else:
        assert d["plan"]["bcr_requests_per_usd"] is None and d["plan"]["bcr_undefined"]
        assert same_dc["bcr_ratio"] is None and "both" in same_dc["ratio_undefined"]
        assert "verdict" not in d
        assert any(n.startswith("no verdict check: the fleet costs 0 $/h") for n in d["notes"])


def test_the_answer_words_a_free_fleets_bcr_as_unbounded() -> None:
    """The table's sentences say "an unbounded BCR" where a fleet costs nothing (not "inf")."""
    r = run("solve", *FREE)
    assert r.returncode == 0, r.stderr
    text = " ".join(r.stdout.split())
    assert "an unbounded BCR (its fleet costs nothing)" in text
    assert "BCR inf" not in text and "BCR of inf" not in text


def test_bathtub_of_a_free_fleet_says_its_bcr_is_unbounded() -> None:
    _one_line_unbounded(run("bathtub", *OWNED, "--format", "json"))


def test_robust_study_of_a_free_plan_says_its_bcr_is_unbounded() -> None:
    _one_line_unbounded(run("robust", *FREE, "--samples", "4", "--format", "json"))


def test_a_sweep_point_whose_plan_is_free_is_a_plan_of_unbounded_bcr() -> None:
    """A sweep point whose PDD plan costs nothing is feasible, as ``solve`` there says: its BCR
    and every ratio to a baseline are ``null`` with why, and the answer's cheapest point is it
    (a free point read as infeasible, with an error in its row, and then as of unknown cost)."""
    r = run("sweep", *FREE, "--set", "rate_rps=1,2", "--format", "json")
    assert r.returncode == 0, r.stderr
    points = _strict_json(r.stdout)["points"]
    assert len(points) == 2
    for p in points:
        assert p["feasible"] is True and p["cost_usd_per_hour"] == 0 and p["goodput_rps"] > 0
        assert p["bcr_requests_per_usd"] is None and "unbounded" in p["bcr_undefined"]
        ratios = [k for k in p if k.startswith("bcr_ratio_vs_")]
        assert ratios and all(p[k] is None for k in ratios)
        assert "PDD's fleet costs nothing" in p["ratio_undefined"]
    text = " ".join(run("sweep", *FREE, "--set", "rate_rps=1,2").stdout.split())
    assert "2 of 2 points feasible" in text
    assert ": 0.0 $/h, an unbounded BCR (its fleet costs nothing)" in text


def test_pareto_with_free_fleets_writes_their_bcr_as_null() -> None:
    r = run("pareto", *FREE, "--format", "json")
    assert r.returncode == 0, r.stderr
    doc = _strict_json(r.stdout)
    free = [p for p in doc["frontier"] if p["cost_usd_per_hour"] == 0]
    assert free, "the frontier holds a free fleet"
    assert all(p["bcr_requests_per_usd"] is None for p in free)
    priced = [p for p in doc["frontier"] if p["cost_usd_per_hour"]]
    assert all(p["bcr_requests_per_usd"] > 0 for p in priced)


def test_a_free_baseline_that_serves_nothing_has_a_bcr_of_0_and_pdd_beats_it() -> None:
    """A fleet that misses a target at every rate (goodput 0) has a BCR of 0 even where it costs
    nothing: with the no-relay baseline's chips owned and sunk and a free line, that baseline
    costs 0 $/h and serves nothing within SLA (it misses TTFT at every rate), so PDD beats it.
    Its BCR was unbounded, and PDD lost to it with a ratio of 0."""
    owned = ["--own", "gpu-a=16", "--own", "gpu-b=32", "--set", "inventory.owned_cost=sunk"]
    r = run(
        "solve",
        "examples/pdd-paper.yaml",
        *owned,
        "--set",
        "link.price_usd_per_month=0",
        "--format",
        "json",
    )
    assert r.returncode == 0, r.stderr
    d = _strict_json(r.stdout)
    assert d["plan"]["cost_usd_per_hour"] > 0
    no_relay = next(b for b in d["baselines"] if b["name"] == "no-relay")
    assert no_relay["cost_usd_per_hour"] == 0 and no_relay["goodput_rps"] == 0
    assert no_relay["bcr_requests_per_usd"] == 0 and "bcr_undefined" not in no_relay
    assert no_relay["bcr_ratio"] is None and "goodput 0" in no_relay["ratio_undefined"]
    verdict = next(v for v in d["verdict"]["baselines"] if v["name"] == "no-relay")
    assert verdict["pdd_wins"] is True and verdict["outcome"] == "wins"
    assert verdict["bcr_ratio"] is None and "goodput 0" in verdict["ratio_undefined"]


def test_max_bcr_over_owned_chips_returns_the_free_fleet_of_most_goodput() -> None:
    """With chips owned and sunk and a free line, every fleet within them costs nothing: its
    BCR is unbounded, above any fleet that rents, so the plan of highest BCR is the free fleet
    of most goodput. A finite BCR read as tying an unbounded one, and the walk returned a fleet
    that rents 8 GPU-B (19.2 $/h) for its larger goodput."""
    r = run("solve", *FREE, "--max-bcr", "--no-verdict-check", "--format", "json")
    assert r.returncode == 0, r.stderr
    plan = _strict_json(r.stdout)["plan"]
    assert plan["cost_usd_per_hour"] == 0
    assert plan["bcr_requests_per_usd"] is None and "unbounded" in plan["bcr_undefined"]
    assert plan["chips"]["gpu-b"] <= 64 and plan["chips"]["gpu-a"] <= 64
    assert plan["goodput_rps"] > 4


def test_a_topology_plan_that_costs_nothing_has_an_unbounded_bcr(tmp_path: Path) -> None:
    """A topology whose entry site hosts every role on chips it owns at the default owned price
    of 0 serves its traffic for nothing: its BCR is unbounded (``null`` in the JSON, with
    ``bcr_undefined``), and ``--max-bcr`` returns that plan. The BCR read 0, and ``--max-bcr``
    returned a plan that leases lines and rents chips (157 $/h)."""
    text = (REPO / "examples" / "topologies" / "three-sites-n1.yaml").read_text()
    site_a = "      RLD: {chips: [gpu-a]}\n"
    assert text.count(site_a) == 1
    owned = "      MD: {chips: [gpu-a]}\n    chips:\n      gpu-a: {owned: 512}\n"
    topo = tmp_path / "free.yaml"
    topo.write_text(text.replace(site_a, site_a + owned))
    for mode in ([], ["--max-bcr"]):
        r = run("topology", str(topo), *mode, "--format", "json")
        assert r.returncode == 0, r.stderr
        d = _strict_json(r.stdout)
        assert d["cost_usd_per_hour"] == 0 and d["served_total_rps"] > 0, mode
        assert d["served_bcr_requests_per_usd"] is None, mode
        assert "unbounded" in d["bcr_undefined"], mode


def test_the_sentences_compare_with_a_free_fleet_in_words() -> None:
    """Where PDD's own fleet costs nothing, a baseline that serves its rate is compared in
    words (it read "it meets the TTFT targets at no rate" beside a table where it meets the SLA,
    the ratio to an unbounded BCR having no value); where a baseline costs nothing, PDD's cost
    is not "0x" of it."""
    pdd_free = ["--own", "gpu-a=24", "--own", "gpu-b=32", "--set", "inventory.owned_cost=sunk"]
    pdd_free += ["--set", "link.price_usd_per_month=0", "--no-verdict-check"]
    text = " ".join(run("solve", *pdd_free).stdout.split())
    assert (
        "One datacenter (96 gpu-a): 144.0 $/h; PDD costs nothing and PDD's BCR is unbounded "
        "against its finite one." in text
    ), text
    assert "both cost nothing and both BCRs are unbounded" in text
    assert (
        "One datacenter (96 gpu-a): 144.0 $/h, and it meets the TTFT targets at no rate" not in text
    )
    base_free = ["--own", "gpu-a=200", "--set", "inventory.owned_cost=sunk", "--no-verdict-check"]
    text = " ".join(run("solve", *base_free).stdout.split())
    assert (
        "One datacenter (96 gpu-a): 0.0 $/h; it costs nothing against PDD's 107.4 $/h and its "
        "BCR is unbounded against PDD's finite one." in text
    ), text
    assert "PDD costs 0x" not in text
