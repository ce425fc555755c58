"""A profile whose overrides change whole groups alone (:func:`pddplan.io.loader.
_groups_patched`: a price sweep's point changes the chip's ``price`` group) is the very object
the full validation of the merged document gives: compared field by field (JSON, which keeps
-0.0 apart from 0.0), by the fields set at every level and by ``repr``; a value the schema
rejects is left to the full validation, whose error it keeps."""

from __future__ import annotations

import math

import numpy as np
import pytest
from pydantic import BaseModel, Field, ValidationError, field_validator, model_validator

from pddplan.io import loader
from pddplan.io.loader import (
    Registry,
    _deep_merge,
    _group_fields,
    _groups_patched,
    read_yaml,
)
from pddplan.io.overrides import ScenarioSource
from pddplan.spec import KINDS, Strict

#: The bundled profiles of every kind whose schema has groups, one or two of each.
PROFILES = [
    ("chip", "gpu-b"),
    ("chip", "h200-sxm"),
    ("model", "qwen3-235b-a22b"),
    ("model", "deepseek-v3"),
    ("workload", "agent-64k"),
    ("cache", "host-dram"),
]


def _fields_set(obj) -> object:
    """The fields set of a model and of every model it holds, as a nested structure."""
    if not isinstance(obj, BaseModel):
        return None
    return (
        type(obj).__name__,
        sorted(obj.model_fields_set),
        {k: _fields_set(getattr(obj, k)) for k in type(obj).model_fields},
    )


def _full(cls, merged):
    try:
        return cls.model_validate(merged)
    except ValidationError:
        return None


def _values(rng: np.random.Generator, v: object) -> list[object]:
    """Values for a leaf that held ``v``: near it, at the edges, of the wrong type."""
    out: list[object] = [None, "x", [1], {"a": 1}, True]
    if isinstance(v, bool):
        return [*out, not v]
    if isinstance(v, int | float):
        x = float(v)
        out += [0.0, -0.0, -1.0, math.inf, 1e12, x * float(rng.uniform(0.5, 2.0)), int(abs(x)) + 1]
    elif isinstance(v, list):
        out += [list(reversed(v)), [*v, *v]]
    elif isinstance(v, str):
        out += [v + "-other", ""]
    return out


def _leaves(data: dict, prefix: tuple = ()) -> list[tuple[tuple, object]]:
    out = []
    for k, v in data.items():
        if isinstance(v, dict):
            out += _leaves(v, (*prefix, k))
        else:
            out.append(((*prefix, k), v))
    return out


def _nest(path: tuple, value: object) -> dict:
    for k in reversed(path):
        value = {k: value}
    return value  # type: ignore[return-value]


@pytest.mark.parametrize(("kind", "name"), PROFILES, ids=[f"{k}-{n}" for k, n in PROFILES])
def test_a_group_override_validates_as_the_whole_document(kind: str, name: str) -> None:
    cls = KINDS[kind]
    groups = _group_fields(cls)
    assert groups  # the schema has groups to patch
    base = read_yaml(Registry.default().path(kind, name))
    rng = np.random.default_rng(11)
    cases = 0
    agreed = 0
    for group in groups:
        if not isinstance(base.data.get(group), dict):
            continue
        for path, v in _leaves(base.data[group]):
            for value in _values(rng, v):
                ov = {group: _nest(path, value)}
                merged = _deep_merge(base.data, ov)
                full = _full(cls, merged)
                fast = _groups_patched(cls, base.data, merged, ov)
                cases += 1
                if full is None:
                    assert fast is None, (group, path, value)
                    continue
                assert fast is not None, (group, path, value)
                assert fast.model_dump_json() == full.model_dump_json()
                assert _fields_set(fast) == _fields_set(full)
                assert repr(fast) == repr(full) and fast == full
                # the groups the override leaves are the profile's very objects
                kept = _groups_patched(cls, base.data, _deep_merge(base.data, ov), ov)
                for other in groups:
                    if other != group:
                        assert getattr(kept, other) is getattr(fast, other)
                agreed += 1
    assert cases >= 10 and 0 < agreed < cases  # valid and rejected values both met


def test_two_groups_and_a_new_key_at_once() -> None:
    cls = KINDS["chip"]
    base = read_yaml(Registry.default().path("chip", "gpu-b"))
    ov = {"price": {"rental_usd_per_hour": 7.5}, "derates": {"compute_efficiency": 0.5}}
    merged = _deep_merge(base.data, ov)
    fast = _groups_patched(cls, base.data, merged, ov)
    assert (
        fast is not None and fast.model_dump_json() == cls.model_validate(merged).model_dump_json()
    )
    # a key that is not a group (a top-level string) goes to the full validation
    assert _groups_patched(cls, base.data, merged, {**ov, "notes": "x"}) is None
    # a key the schema does not know
    assert _groups_patched(cls, base.data, merged, {"pricing": {}}) is None


class _Part(Strict):
    x: float


class _Two(Strict):
    a: _Part
    b: _Part


def test_a_document_with_an_alias_goes_to_the_full_validation() -> None:
    """A YAML alias makes one container two places of the document: a patch through one is
    seen at the other (:func:`~pddplan.io.loader._deep_merge`), which validating the patched
    group alone would miss."""
    part = {"x": 1.0}
    doc = {"a": part, "b": part}  # as a loader that keeps an alias's sharing gives it
    ov = {"a": {"x": 3.0}}
    merged = _deep_merge(doc, ov)
    assert _Two.model_validate(merged).b.x == 3.0  # the full validation sees both places
    assert _groups_patched(_Two, doc, merged, ov) is None
    plain = {"a": {"x": 1.0}, "b": {"x": 1.0}}  # no alias: patched alone
    got = _groups_patched(_Two, plain, _deep_merge(plain, ov), ov)
    assert got is not None and (got.a.x, got.b.x) == (3.0, 1.0)


def test_a_base_the_schema_rejects_goes_to_the_full_validation() -> None:
    """An override may mend the profile's own fault: the base then does not validate alone,
    and the full validation decides."""
    cls = KINDS["chip"]
    base = read_yaml(Registry.default().path("chip", "gpu-b"))
    data = {**base.data, "price": {**base.data["price"], "rental_usd_per_hour": -1.0}}
    ov = {"price": {"rental_usd_per_hour": 3.0}}
    merged = _deep_merge(data, ov)
    assert _groups_patched(cls, data, merged, ov) is None
    assert cls.model_validate(merged).price.rental_usd_per_hour == 3.0


def test_a_schema_with_its_own_validators_has_no_groups() -> None:
    class Part(Strict):
        x: float

    class Checked(Strict):
        a: Part
        b: Part

        @model_validator(mode="after")
        def _a_below_b(self) -> Checked:
            if self.a.x > self.b.x:
                raise ValueError("a above b")
            return self

    class Plain(Strict):
        a: Part
        n: float = 1.0

    class Aliased(Strict):
        a: Part = Field(validation_alias="aa")
        b: Part

    class Derived(Strict):
        a: Part
        n: float = Field(default_factory=lambda data: data["a"].x * 2)

    assert _group_fields(Checked) == {}
    assert _group_fields(Plain) == {"a": Part}
    assert _group_fields(Aliased) == {"b": Part}  # the file's key is not the field's name
    assert _group_fields(Derived) == {}  # ``n`` would keep the base's ``a``


def test_a_price_sweep_point_shares_the_chip_groups(tmp_path, monkeypatch) -> None:
    """Resolved through a scenario source: the price point's chip holds the loaded profile's
    datasheet and derates (what :func:`pddplan.deployment.chips.repriced` checks first), and
    equals the chip the full validation gives."""
    src = ScenarioSource.open("default", Registry.default())
    a = src.resolve({"chips.gpu-b.price_usd_per_hour": 2.25}).chips["gpu-b"]
    b = src.resolve({"chips.gpu-b.price_usd_per_hour": 3.25}).chips["gpu-b"]
    assert a.datasheet is b.datasheet and a.derates is b.derates and a.price is not b.price
    monkeypatch.setattr(loader, "_groups_patched", lambda *args: None)
    c = src.resolve({"chips.gpu-b.price_usd_per_hour": 3.25}).chips["gpu-b"]
    assert c.datasheet is not b.datasheet
    assert c.model_dump_json() == b.model_dump_json() and _fields_set(c) == _fields_set(b)


class _Fragile(Strict):
    x: float

    @field_validator("x")
    @classmethod
    def _not_seven(cls, v: float) -> float:
        if v == 7.0:
            raise TypeError("seven")  # not a ValidationError: pydantic lets it through
        return v


class _HoldsFragile(Strict):
    a: _Fragile
    b: _Fragile


def test_a_base_that_raises_goes_to_the_full_validation() -> None:
    """A validator's own fault (an error pydantic does not turn into a ValidationError) in a
    group the override replaces: the full validation, which never sees it, decides."""
    doc = {"a": {"x": 7.0}, "b": {"x": 1.0}}
    ov = {"a": {"x": 2.0}}
    merged = _deep_merge(doc, ov)
    assert _HoldsFragile.model_validate(merged).a.x == 2.0
    assert _groups_patched(_HoldsFragile, doc, merged, ov) is None


@pytest.mark.parametrize(("kind", "name"), PROFILES, ids=[f"{k}-{n}" for k, n in PROFILES])
def test_the_file_as_loaded_stands_for_its_validation(kind: str, name: str) -> None:
    """With the caller's load of the file (kept validated in the parse cache, so no schema is
    built for the whole profile), the patched profile is the one the full validation gives;
    a load that fails, or gives another kind, leaves the base to be validated here."""
    from pddplan.io.loader import _load_cached

    cls = KINDS[kind]
    path = Registry.default().path(kind, name)
    base = read_yaml(path)
    found = [
        (g, p, v)
        for g in _group_fields(cls)
        if isinstance(base.data.get(g), dict)
        for p, v in _leaves(base.data[g])
        if isinstance(v, float) and v > 0
    ]
    # a workload's hit rates are lists: its shift, as the verdict check sets it
    ov = {found[0][0]: _nest(found[0][1], found[0][2] * 1.5)} if found else {}
    ov = ov or {"hit_rate": {"shift": 0.01}}
    full = _full(cls, _deep_merge(base.data, ov))
    assert full is not None

    def failing() -> object:
        raise ValueError("the file alone does not load")

    for loaded in (lambda: _load_cached(path, kind), failing, lambda: object()):
        # a fresh document each time: the validated base is kept per document object
        doc = read_yaml(path).data.copy()
        fast = _groups_patched(cls, doc, _deep_merge(doc, ov), ov, loaded)
        assert fast is not None
        assert fast.model_dump_json() == full.model_dump_json()
        assert _fields_set(fast) == _fields_set(full) and repr(fast) == repr(full)
