"""What a price sweep's point keeps from the point before: the chip's instances, repriced
(:func:`pddplan.deployment.chips.repriced`), the scenario's validation
(:meth:`ScenarioSource._with_overrides`) and the options every problem of one scenario shares.

Each is checked against what it replaces: instances built afresh on the new chip, the full
validation of the patched document, and each problem's own options.
"""

from __future__ import annotations

import dataclasses
from functools import cached_property

import numpy as np
import pytest

from pddplan.deployment import Instance
from pddplan.deployment.chips import repriced
from pddplan.errors import ProfileError
from pddplan.io import loader
from pddplan.io.loader import Registry, _deep_merge, validate
from pddplan.io.overrides import ScenarioSource
from pddplan.io.yamldoc import YamlDoc
from pddplan.solver.problem import NO_RELAY, build_problem, instance_key, layout_options
from pddplan.spec import Scenario

MULTI = """kind: scenario
name: multi
model: qwen3-235b-a22b
workload: agent-64k
link: wan-100g-cross-city
rdma: rdma-400g
roles:
  P: {chips: [gpu-a, h100-sxm], chips_per_instance: [8, 16]}
  RLD: {chips: [gpu-a], chips_per_instance: [8]}
  MD: {chips: [gpu-b, h200-sxm], chips_per_instance: [8, 16], layouts: [tp, ep]}
baseline: {chip: gpu-a, chips_per_instance: 8}
sla: {ttft_p50_s: 5, ttft_p90_s: 10, ttft_p99_s: 20, tpot_ms: 50}
rate_rps: 2.35
"""

#: Every derived number an instance keeps (its cached properties).
DERIVED = sorted(n for n, v in vars(Instance).items() if isinstance(v, cached_property))


@pytest.fixture
def src(tmp_path) -> ScenarioSource:
    path = tmp_path / "multi.yaml"
    path.write_text(MULTI)
    return ScenarioSource.open(str(path), Registry.default())


def _same(a, b) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.array_equal(a, b)
    return bool(a == b)


def _fresh(inst: Instance) -> Instance:
    return Instance(inst.chip, inst.model, inst.tensor_parallel, inst.memory_utilization, inst.lay)


def test_a_price_point_reprices_the_chips_instances(src: ScenarioSource) -> None:
    first = src.resolve({"chips.gpu-b.price_usd_per_hour": 1.25})
    pb1 = build_problem(first)
    for o in pb1.options["MD"]:  # the derived numbers a search computes
        o.decode_step_s(8, 4096.0)
        _ = [getattr(o, n) for n in DERIVED]
    second = src.resolve({"chips.gpu-b.price_usd_per_hour": 3.5})
    pb2 = build_problem(second)
    old = [o for o in pb1.options["MD"] if o.chip.name == "gpu-b"]
    new = [o for o in pb2.options["MD"] if o.chip.name == "gpu-b"]
    assert [instance_key(o) for o in new] == [instance_key(o) for o in old] and new
    for a, b in zip(old, new, strict=True):
        assert b is not a and b.chip is second.chips["gpu-b"]
        assert b.price_usd_per_hour == 3.5 * b.tensor_parallel != a.price_usd_per_hour
        # kept from the first point, not computed again (the very objects, before any use
        # on the new instance) ...
        for name in DERIVED:
            assert b.__dict__[name] is a.__dict__[name], name
        # ... and equal to what an instance built on the new chip computes
        fresh = _fresh(b)
        for name in DERIVED:
            assert _same(getattr(b, name), getattr(fresh, name)), name
        assert float(b.decode_step_s(8, 4096.0)) == float(fresh.decode_step_s(8, 4096.0))
        assert b == fresh
    # a chip the point leaves alone keeps its very instances
    kept = [o for o in pb2.options["MD"] if o.chip.name == "h200-sxm"]
    h200 = [o for o in pb1.options["MD"] if o.chip.name == "h200-sxm"]
    assert kept and all(a is b for a, b in zip(h200, kept, strict=True))


def test_a_changed_datasheet_builds_the_instances_again(src: ScenarioSource) -> None:
    a = src.resolve({"chips.gpu-b.price_usd_per_hour": 1.25})
    b = src.resolve({"chips.gpu-b.datasheet.memory_bandwidth_tb_per_s": 2.0})
    insts = [o for o in build_problem(a).options["MD"] if o.chip.name == "gpu-b"]
    assert repriced(insts, b.chips["gpu-b"]) is None
    assert repriced(insts, a.chips["h200-sxm"]) is None  # another chip altogether
    rebuilt = [o for o in build_problem(b).options["MD"] if o.chip.name == "gpu-b"]
    for x, y in zip(insts, rebuilt, strict=True):
        assert y.physics_key != x.physics_key
        assert y.chip.datasheet.memory_bandwidth_tb_per_s == 2.0


def test_a_negative_zero_is_not_the_same_physics(src: ScenarioSource) -> None:
    """-0.0 equals 0.0 as a number and in a model's equality, but not in the numbers computed
    from it nor in the physics key: a variant that differs so is built again."""
    key = "chips.gpu-b.derates.step_overhead_ms"
    a = src.resolve({key: 0.0, "chips.gpu-b.price_usd_per_hour": 1.0})
    b = src.resolve({key: -0.0, "chips.gpu-b.price_usd_per_hour": 2.0})
    assert a.chips["gpu-b"].derates == b.chips["gpu-b"].derates  # pydantic's equality
    insts = [o for o in build_problem(a).options["MD"] if o.chip.name == "gpu-b"]
    assert repriced(insts, b.chips["gpu-b"]) is None
    rebuilt = [o for o in build_problem(b).options["MD"] if o.chip.name == "gpu-b"]
    for x, y in zip(insts, rebuilt, strict=True):
        assert y.physics_key != x.physics_key and y.physics_key == _fresh(y).physics_key


def test_layout_options_keys_on_the_model_too(src: ScenarioSource) -> None:
    """A twin on another model object is not repriced: the instances hold their model."""
    rs = src.resolve({})
    chip = rs.chips["gpu-b"]
    pb = build_problem(rs)
    other = dataclasses.replace(pb.model)  # an equal model, another object
    assert other == pb.model and other is not pb.model
    got = layout_options(chip, other, 8, 0.9, ("tp",))
    assert got and all(o.model is other for o in got)


@pytest.mark.parametrize(
    "overrides",
    [
        {"chips.gpu-b.price_usd_per_hour": 2.5},
        {"chips.gpu-a.price_usd_per_hour": 3.5, "chips.h200-sxm.price_usd_per_hour": 9.0},
        {"chips.gpu-b.datasheet.memory_gb": 80},
    ],
)
def test_an_overrides_only_patch_validates_as_the_file_would(
    src: ScenarioSource, overrides: dict
) -> None:
    patch, _ = src.patch(overrides)
    assert patch.keys() == {"overrides"}
    doc = YamlDoc(data=_deep_merge(src.doc.data, patch), lines={}, file=src.doc.file)
    full = validate(Scenario, doc)
    fast = src._with_overrides(doc)
    assert fast is not None
    assert fast == full and fast.model_fields_set == full.model_fields_set
    assert fast.model_dump_json() == full.model_dump_json()
    assert src.resolve(overrides).scenario == full


@pytest.mark.parametrize(
    "block",
    [3, {"chips": 3}, {"chips": {"gpu-b": 3}}, {"chips": {"gpu-b": {1: 2}}}, {7: {}}],
    ids=["not-a-mapping", "kind", "profile", "field-key", "kind-key"],
)
def test_a_malformed_overrides_block_goes_to_the_full_validation(
    src: ScenarioSource, block
) -> None:
    """A block the schema rejects is left to the full validation, which reports it (a file's
    own block is validated when the source resolves its base, before any patch)."""
    doc = YamlDoc(data={**src.doc.data, "overrides": block}, lines={}, file=src.doc.file)
    assert src._with_overrides(doc) is None
    with pytest.raises(ProfileError, match="overrides"):
        validate(Scenario, doc)


def test_the_problems_of_one_scenario_share_its_options(src: ScenarioSource) -> None:
    rs = src.resolve({"chips.gpu-b.price_usd_per_hour": 1.75})
    pdd, no_relay = build_problem(rs), build_problem(rs, NO_RELAY)
    for role in ("P", "RLD", "MD"):
        assert pdd.options[role] is not no_relay.options[role]  # each problem's own list
        assert all(a is b for a, b in zip(pdd.options[role], no_relay.options[role], strict=True))
    # a problem restricted to some instance kinds still holds those alone
    keep = {r: frozenset(instance_key(o) for o in pdd.options[r][:1]) for r in ("P", "MD")}
    only = build_problem(rs, only=keep)
    assert [instance_key(o) for o in only.options["P"]] == [instance_key(pdd.options["P"][0])]
    assert only.options["RLD"] == []


@pytest.mark.parametrize("scenario", ["default", "pdd-paper", "long-context"])
def test_resolve_with_and_without_the_fast_path(scenario: str, monkeypatch) -> None:
    """Every estimated input of a scenario (the verdict check's and robust study's overrides)
    at random values, valid or not, two at a time: the resolved scenario, or the error, is
    the same with the overrides-only validation as with the full one."""
    from pddplan.robust.inputs import collect_inputs

    name = "examples/long-context.yaml" if scenario == "long-context" else scenario
    src = ScenarioSource.open(name, Registry.default())
    found, _ = collect_inputs(src.base)
    paths = [i.path for i in found if src.patch({i.path: i.point})[0].keys() == {"overrides"}]
    assert len(paths) >= 4  # chips', links' and the model's estimated keys
    rng = np.random.default_rng(3)
    points = []
    for _ in range(40):
        picked = rng.choice(len(paths), size=2, replace=False)
        points.append(
            {
                paths[int(k)]: float(rng.choice([-1.0, 0.0, rng.uniform(0.01, 5.0), 1e9]))
                for k in picked
            }
        )

    def outcome(ov: dict):
        try:
            rs = src.resolve(ov)
        except Exception as exc:  # the error a point gets, compared as text
            return (type(exc).__name__, str(exc))
        profiles = [rs.model, rs.workload, rs.link, rs.rdma, *rs.chips.values()]
        # JSON keeps -0.0 apart from 0.0, which the models' equality does not
        dumps = [p.model_dump_json() for p in profiles]
        return (rs.scenario.model_dump_json(), rs.scenario.model_fields_set, dumps, rs)

    fast = [outcome(ov) for ov in points]
    assert any(len(f) == 4 for f in fast) and any(len(f) == 2 for f in fast)
    # neither the overrides-only validation nor a profile's group patch
    # (:func:`pddplan.io.loader._groups_patched`)
    monkeypatch.setattr(ScenarioSource, "_with_overrides", lambda self, doc: None)
    monkeypatch.setattr(loader, "_groups_patched", lambda *args: None)
    assert fast == [outcome(ov) for ov in points]
