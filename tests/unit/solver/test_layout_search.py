"""Parallel layouts in the search: options per layout, plans that name theirs, plan files."""

from __future__ import annotations

import json

import numpy as np

from pddplan import api
from pddplan.io.loader import Registry, load_scenario
from pddplan.sim.plan import plan_from_json
from pddplan.solver import PDD, build_problem

ALL = ["tp", "ep", "ep-tbo"]
PATCH = {"roles": {r: {"chips": ["gpu-a"], "layouts": ALL} for r in ("P", "RLD", "MD")}}


def test_default_searches_tensor_parallel_only() -> None:
    pb = build_problem(load_scenario("examples/pdd-paper.yaml", Registry.default()), PDD)
    assert pb.options["P"] and all(o.lay.is_pure_tp for o in pb.options["P"])


def test_listed_layouts_are_searched_for_a_moe_model() -> None:
    rs = load_scenario("examples/pdd-paper.yaml", Registry.default(), PATCH)
    assert rs.model.name == "qwen3-235b-a22b"  # mixture of experts: ep layouts exist
    pb = build_problem(rs, PDD)
    labels = {o.lay.label for o in pb.options["P"]}
    assert labels == {"tp8", "tp1-dp8-ep8", "tp1-dp8-ep8-tbo"}


def test_a_plan_names_its_layout_and_simulate_finds_it_again() -> None:
    r = api.solve("examples/pdd-paper.yaml", overrides={"roles.P.layouts": ALL})
    doc = json.loads(json.dumps(r.to_json(), default=float))
    p_role = doc["plan"]["roles"]["P"]
    assert p_role["layout"] == r.plan.roles["P"][0].lay.label
    sp = plan_from_json(doc, r.outcome.plan.problem)
    assert sp.roles["P"].instance.lay.label == p_role["layout"]


def test_decode_loads_of_every_md_option_are_each_option_s_own() -> None:
    # Sizing.decode_loads (one decode_split over every MD option's extend terms) gives each
    # option the values Sizing.decode_load gives it alone, to the bit, on every route and mode
    from pddplan.solver import Solver
    from pddplan.solver.cache import SearchCache

    patch = {"roles": {r: {"chips": ["*"], "layouts": ALL} for r in ("P", "RLD", "MD")}}
    pb = build_problem(load_scenario("examples/pdd-paper.yaml", Registry.default(), patch), PDD)
    mds = pb.options["MD"]
    assert len(mds) > 10
    batched, alone = Solver(pb, SearchCache()), Solver(pb, SearchCache())
    for routing in pb.routings[:: max(len(pb.routings) // 3, 1)]:
        for mode in pb.handover_modes:
            route = batched.route(1.7, routing)
            for m, got in zip(mds, batched.decode_loads(route, mds, mode), strict=True):
                want = alone.decode_load(alone.route(1.7, routing), m, mode)
                assert got[0] == want[0]
                assert all(
                    np.asarray(g).tobytes() == np.asarray(w).tobytes()
                    for g, w in zip(got[1:], want[1:], strict=True)
                )
