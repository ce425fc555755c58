"""Memo keys hashed once (pddplan.deployment.keys.HashedKey): equal values give one interned
key, and a key sent to another process is hashed there (a string's hash differs between
processes), never carried over."""

from __future__ import annotations

import pickle

import pytest

from pddplan.deployment import Instance
from pddplan.deployment.keys import HashedKey
from pddplan.io.loader import Registry


def test_equal_values_give_one_interned_key() -> None:
    a = HashedKey.of(("gpu-a", 8, (1.0, 2.0)))
    b = HashedKey.of(("gpu-a", 8, (1.0, 2.0)))
    assert a is b and hash(a) == hash(("gpu-a", 8, (1.0, 2.0)))
    assert HashedKey(("gpu-a", 8, (1.0, 2.0))) == a  # equal by value when not interned
    assert a != ("gpu-a", 8, (1.0, 2.0))  # never equal to the bare value


def test_an_unpickled_key_is_hashed_afresh() -> None:
    key = HashedKey(("gpu-a", 8))
    key._hash = 12345  # as if hashed in a process with another string hash seed
    again = pickle.loads(pickle.dumps(key))
    assert hash(again) == hash(("gpu-a", 8)) and again.value == key.value


def test_instances_of_equal_physics_share_one_physics_key() -> None:
    from pddplan.deployment import model_numbers

    reg = Registry.default()
    chip, model = reg.load("chip", "gpu-a"), model_numbers(reg.load("model", "qwen3-235b-a22b"))
    one, two = Instance(chip, model, 8), Instance(chip, model, 8)
    assert one.physics_key is two.physics_key
    assert Instance(chip, model, 4).physics_key != one.physics_key


def test_hash_once_keeps_the_dataclass_hash_and_leaves_it_behind_in_copies() -> None:
    """A model's and a link's numbers hash as their fields do, computed once; a pickle or a
    copy carries no hash (a string's differs in another process) and equals the original."""
    import copy
    import dataclasses
    import pickle

    from pddplan.deployment import LinkNumbers, ModelNumbers
    from pddplan.deployment.keys import hash_once

    link = LinkNumbers("wan", 100.0, 1.2e10, 0.02, 1.0, 0.1, 27.4)
    fields = tuple(getattr(link, f.name) for f in dataclasses.fields(link))
    assert hash(link) == hash(fields)
    assert link.__dict__["_hash_once"] == hash(fields)
    object.__setattr__(link, "_hash_once", 12345)  # the kept hash is the one returned
    assert hash(link) == 12345
    object.__setattr__(link, "_hash_once", hash(fields))
    for other in (pickle.loads(pickle.dumps(link)), copy.copy(link), copy.deepcopy(link)):
        assert "_hash_once" not in other.__dict__
        assert other == link and hash(other) == hash(link)
    assert dataclasses.replace(link, rtt_s=0.03) != link
    assert hash(dataclasses.replace(link, rtt_s=0.03)) != hash(link)
    assert ModelNumbers.__hash__ is not None and "_hash_once" not in repr(link)

    @dataclasses.dataclass
    class Mutable:
        x: int

    with pytest.raises(TypeError, match="frozen dataclass"):
        hash_once(Mutable)


def test_content_text_tells_models_apart_exactly_where_their_json_does() -> None:
    """The physics keys' text (:meth:`pddplan.spec.base.Strict.content_text`) in place of
    ``model_dump_json``: over the catalog's chips and workloads, and copies with one number
    changed (by a hair, to -0.0 from 0.0, back and forth), two texts are equal exactly when the
    two JSON dumps are; an excluded key changes neither."""
    reg = Registry.default()
    chip_groups = []
    for name in reg.index("chip"):
        chip = reg.load("chip", name)
        chip_groups += [chip.datasheet, chip.derates]
    workloads = [reg.load("workload", n) for n in reg.index("workload")]
    variants = []
    for m in [*chip_groups, *workloads]:
        floats = [k for k, v in m if isinstance(v, float) and not isinstance(v, bool)]
        variants.append(m)
        if floats:
            k = floats[0]
            v = getattr(m, k)
            variants.append(m.model_copy(update={k: v * (1 + 1e-15) if v else 1e-300}))
            variants.append(m.model_copy(update={k: v}))  # equal to the original, a new object
    zero = next(g for g in chip_groups for k, v in g if isinstance(v, float) and v == 0.0)
    zk = next(k for k, v in zero if isinstance(v, float) and v == 0.0)
    variants.append(zero.model_copy(update={zk: -0.0}))
    leave_out = frozenset({"source", "estimated", "notes"})
    texts = [m.content_text(leave_out) for m in variants]
    dumps = [m.model_dump_json(exclude=set(leave_out)) for m in variants]
    pairs = 0
    for i in range(len(variants)):
        for j in range(i + 1, len(variants)):
            if type(variants[i]) is type(variants[j]):
                pairs += 1
                assert (texts[i] == texts[j]) == (dumps[i] == dumps[j]), (texts[i], texts[j])
    assert pairs > 100
    assert texts[-1] != zero.content_text(leave_out)  # -0.0 is not 0.0
    renamed = zero.model_copy(update={"source": zero.source + " (again)"})
    assert renamed.content_text(leave_out) == zero.content_text(leave_out)


def test_content_text_of_every_bundled_profile_is_its_plain_form(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """content_text writes the values of a few exact types (float, int, str, bool, None) by
    their repr without its other tests: over every bundled profile of every kind, the text is
    the one every value taken through every test gives (no type taken the short way), a str
    enum (a subclass) included."""
    from enum import Enum

    from pddplan.spec import base

    class Color(str, Enum):
        RED = "red"

    reg = Registry.default()
    values: list = [[Color.RED, 1, 1.0, -0.0, None, True]]
    for kind in ("chip", "model", "link", "workload", "cache"):
        values += [reg.load(kind, name) for name in reg.index(kind)]
    assert len(values) > 30
    fast = [base.content_text(v) for v in values]
    monkeypatch.setattr(base, "_LEAF_TYPES", frozenset())  # every value the general way
    assert fast == [base.content_text(v) for v in values]
