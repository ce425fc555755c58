"""``plan.changed``: the search's copy of a plan or a prefill sizing with some fields changed is
the copy ``dataclasses.replace`` makes, field by field (the same objects in every field it does
not change), for plans of every kind a solve returns, candidates included; and ``plan.made``,
the plan builder's record, is the one ``Plan(**fields)`` makes."""

from __future__ import annotations

import dataclasses

import pytest

from pddplan.io.loader import Registry, load_scenario
from pddplan.solver import solve_scenario
from pddplan.solver.answer import _problems
from pddplan.solver.modes import PlanSearch
from pddplan.solver.plan import Plan, PrefillSizing, changed, made


def _plans() -> list[Plan]:
    """Final plans (the solve's and its baselines') and a candidate without figures."""
    rs = load_scenario(None, Registry.default())
    out = solve_scenario(rs)
    candidate = PlanSearch(_problems(rs, None)).candidate_rate(2.0)
    assert not candidate.prefill.has_figures
    return [out.plan, *out.baselines, candidate]


def _same_fields(a: object, b: object) -> None:
    assert type(a) is type(b)
    assert a.__dict__.keys() == b.__dict__.keys()
    for f in dataclasses.fields(a):  # type: ignore[arg-type]
        assert getattr(a, f.name) is getattr(b, f.name), f.name


@pytest.mark.parametrize("cls", [Plan, PrefillSizing])
def test_the_records_are_plain_frozen_dataclasses(cls: type) -> None:
    """What makes a shallow copy equal to ``replace``: every field an ``__init__`` argument,
    no ``__post_init__``, and (below) nothing else kept in an instance's ``__dict__``."""
    assert cls.__dataclass_params__.frozen
    assert not hasattr(cls, "__post_init__")
    assert all(f.init for f in dataclasses.fields(cls))


def test_changed_is_replace_on_the_plans_a_solve_returns() -> None:
    plans = _plans()
    assert len(plans) >= 4
    for plan in plans:
        fields = {f.name for f in dataclasses.fields(plan)}
        assert plan.__dict__.keys() == fields
        assert plan.prefill.__dict__.keys() == {f.name for f in dataclasses.fields(PrefillSizing)}
        for changes in (
            {"fleet_goodput_rps": 1.25},
            {"meets_sla": False, "binding": [*plan.binding, "SLA: test"]},
            {"binding": [], "handover_inputs": None},
            {"prefill": changed(plan.prefill, ttft_s=(0.1, 0.2, 0.3), attainment=0.5)},
        ):
            new = changed(plan, **changes)
            _same_fields(new, dataclasses.replace(plan, **changes))
            assert new is not plan
            for name, value in changes.items():
                assert getattr(new, name) is value
        before = dict(plan.__dict__)
        changed(plan, rate_rps=9.0)
        assert plan.__dict__ == before  # the record copied is left as it was
        q = changed(plan.prefill, ttft_s=(1.0, 2.0, 3.0))
        _same_fields(q, dataclasses.replace(plan.prefill, ttft_s=(1.0, 2.0, 3.0)))


def test_a_name_that_is_not_a_field_raises_as_replace_does() -> None:
    plan = _plans()[0]
    with pytest.raises(TypeError, match="no field 'goodput'"):
        changed(plan, goodput=1.0)
    with pytest.raises(TypeError):
        dataclasses.replace(plan, goodput=1.0)
    with pytest.raises(dataclasses.FrozenInstanceError):  # still frozen
        changed(plan, rate_rps=1.0).rate_rps = 2.0  # type: ignore[misc]


def test_the_plans_build_plan_makes_are_the_records_init_makes() -> None:
    """``made`` (what ``build_plan`` makes its plans with) gives the record ``Plan(**fields)``
    gives: the same object in every field, kept in the same order, still frozen; a field left
    out raises ``TypeError`` as ``__init__`` would."""
    names = [f.name for f in dataclasses.fields(Plan)]
    for plan in _plans():
        assert list(plan.__dict__) == names
        values = {n: getattr(plan, n) for n in names}
        by_init = Plan(**values)
        _same_fields(made(Plan, **values), by_init)
        assert list(made(Plan, **values).__dict__) == list(by_init.__dict__)
        with pytest.raises(dataclasses.FrozenInstanceError):
            made(Plan, **values).rate_rps = 2.0  # type: ignore[misc]
        misspelt = {("problme" if n == "problem" else n): v for n, v in values.items()}
        with pytest.raises(TypeError, match="missing: problem; not fields: problme"):
            made(Plan, **misspelt)  # as many fields, one of them not Plan's
        with pytest.raises(TypeError, match="in its order; missing: ; not fields: $"):
            made(Plan, **dict(reversed(values.items())))  # every field, in another order
        del values["problem"]
        with pytest.raises(TypeError, match="missing: problem"):
            made(Plan, **values)


def test_bcr_rule_and_its_infinite_values() -> None:
    """The BCR rule (:func:`pddplan.solver.plan.bcr`): goodput per dollar; 0 for a fleet that
    serves nothing, whatever it costs (nothing included); unbounded for one that serves and
    costs nothing. The max-BCR and budget walks compare such values with ``modes._close``: an
    unbounded BCR ties only another unbounded one, never a finite one."""
    import math

    from pddplan.solver.modes import _close
    from pddplan.solver.plan import bcr

    assert bcr(2.0, 7200.0) == 1.0
    assert bcr(0.0, 0.0) == 0.0 and bcr(0.0, 10.0) == 0.0
    assert bcr(1.0, 0.0) == math.inf
    assert _close(math.inf, math.inf)
    assert not _close(951.4, math.inf) and not _close(math.inf, 951.4)
    assert _close(1.0, 1.0 + 1e-12) and not _close(1.0, 1.001)
