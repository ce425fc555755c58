"""Owned inventory: exact pricing when owned chips are shared across roles (brute force)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from pddplan.errors import UsageError
from pddplan.io.loader import Registry, load_scenario
from pddplan.models import queueing
from pddplan.solver import Solver, build_problem
from pddplan.solver.plan import cost_split

# gpu-a serves P and RLD, h20 serves RLD and MD: owned chips of one kind are shared by roles
SHARED = {
    "roles": {
        "P": {"chips": ["gpu-a", "h800-sxm"], "chips_per_instance": [4, 8]},
        "RLD": {"chips": ["gpu-a", "h20"], "chips_per_instance": [4, 8]},
        "MD": {"chips": ["gpu-b", "h20"], "chips_per_instance": [4, 8]},
    }
}


def _problem(inventory: dict):
    rs = load_scenario(
        "examples/pdd-paper.yaml", Registry.default(), {**SHARED, "inventory": inventory}
    )
    return build_problem(rs)


def _brute_force(pb, rate: float) -> float:
    """Least cost over every routing, mode and option triple, each triple priced as a whole
    fleet (owned chips first) at the least counts of each pool."""
    s = Solver(pb)
    pr = pb.pricing
    best = math.inf
    for routing in pb.routings:
        route = s.route(rate, routing)
        if route.link_utilization > pb.link_utilization_cap:
            continue
        ps = [(p, z.instances) for p in pb.options["P"] if (z := s.size_prefill(p, rate, route))]
        for mode in pb.handover_modes:
            has_rld = bool(np.any(route.relay | ~pb.on_decode_side))
            for m in pb.options["MD"]:
                ctx, md_time, ext_busy, _, rld_time, _, _ = s.decode_load(route, m, mode)
                w = pb.classes.weight
                md = s.size_decode(m, rate, md_time, ctx, float(np.sum(w * ext_busy)))
                if md is None:
                    continue
                rlds: list[tuple[object, int] | None] = [None]
                if has_rld:
                    ctx_r = s.rld_context_tokens(route)
                    conc_r = float(np.sum(rate * w * rld_time))
                    rlds = []
                    for r in pb.options["RLD"]:
                        b_r = r.max_batch_at_tpot(ctx_r, pb.tpot_s)
                        if b_r >= 1:
                            n_r = max(math.ceil(conc_r / b_r - 1e-9), 1)
                            cap = pb.decode_slot_wait_probability_cap
                            while queueing.erlang_c_recursive(n_r * b_r, conc_r) > cap:
                                n_r += 1
                            rlds.append((r, n_r))
                for (p, n_p), rr in itertools.product(ps, rlds):
                    chips: dict[str, int] = {}
                    for inst, n in [(p, n_p), (m, md.instances), *([rr] if rr else [])]:
                        name = inst.chip.name  # type: ignore[attr-defined]
                        chips[name] = chips.get(name, 0) + n * inst.tensor_parallel  # type: ignore[attr-defined]
                    if any(chips.get(c, 0) > lim for c, lim in pb.max_chips.items()):
                        continue
                    best = min(best, pr.chips_cost_usd_per_hour(chips))
    return best + pb.wan.price_usd_per_hour


INVENTORIES = [
    {"owned": {"gpu-a": 24}, "owned_cost": "sunk"},
    {"owned": {"gpu-a": 12, "h20": 40}, "owned_cost": "sunk", "opex_usd_per_chip_hour": 0.3},
    {"owned": {"h20": 20}, "owned_cost": "sunk", "opex_usd_per_chip_hour": 0.9},
]


@pytest.mark.parametrize("rate", [0.8, 2.35, 5.0])
@pytest.mark.parametrize("inv", INVENTORIES)
def test_owned_inventory_matches_brute_force(rate: float, inv: dict) -> None:
    pb = _problem(inv)
    plan = Solver(pb).solve_rate(rate)
    assert plan.cost_usd_per_hour == pytest.approx(_brute_force(pb, rate), rel=1e-9)
    # the roles' costs and the split both add up to the plan's cost
    assert sum(plan.role_cost_usd_per_hour.values()) + plan.link_cost_usd_per_hour == (
        pytest.approx(plan.cost_usd_per_hour)
    )
    split = cost_split(plan)
    assert sum(c.cost_usd_per_hour for c in split) + plan.link_cost_usd_per_hour == (
        pytest.approx(plan.cost_usd_per_hour)
    )
    for c in split:
        assert c.owned + c.rented + c.bought == c.chips
        assert c.owned + c.owned_idle == inv["owned"].get(c.chip, 0)


def test_owned_chips_are_used_first_and_cut_the_cost() -> None:
    rented = Solver(_problem({})).solve_rate(2.35)
    owned = Solver(_problem({"owned": {"h20": 64}, "owned_cost": "sunk"})).solve_rate(2.35)
    assert owned.cost_usd_per_hour < rented.cost_usd_per_hour
    assert owned.chips_of().get("h20", 0) > 0


def test_amortized_owned_chip_needs_a_capex() -> None:
    with pytest.raises(UsageError, match="capex_usd"):
        _problem({"owned": {"gpu-b": 8}})


def test_bought_chips_are_new_purchases() -> None:
    rs = load_scenario(
        "examples/pdd-paper.yaml",
        Registry.default(),
        {
            **SHARED,
            "inventory": {"owned": {"h20": 16}, "additional": "buy"},
            "roles": {
                "P": {"chips": ["h100-sxm"], "chips_per_instance": [8]},
                "RLD": {"chips": ["h100-sxm"], "chips_per_instance": [8]},
                "MD": {"chips": ["h20"], "chips_per_instance": [8]},
            },
            "baseline": {"chip": "h100-sxm"},
        },
    )
    plan = Solver(build_problem(rs)).solve_rate(2.0)
    split = {c.chip: c for c in cost_split(plan)}
    assert split["h20"].owned == 16 and split["h20"].rented == 0
    assert split["h100-sxm"].bought == split["h100-sxm"].chips > 0
    assert split["h100-sxm"].new_capex_usd == split["h100-sxm"].bought * 30000.0
