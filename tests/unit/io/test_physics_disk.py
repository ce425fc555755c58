"""Instances' physics tables kept from one run to the next (pddplan.io.physics_disk): the same
values as computing them, keyed by the instance's physics and pddplan's code, written only for
tables that grew, never for sampled physics, and off with the parse cache."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pddplan.deployment import chips as chips_mod
from pddplan.deployment import model_numbers
from pddplan.io import parse_cache, physics_disk
from pddplan.io.loader import Registry


@pytest.fixture
def store(cache: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The parse cache of the test's own (``cache``), no physics table read or kept before."""
    monkeypatch.setattr(physics_disk, "_transient", False)
    monkeypatch.setattr(physics_disk, "_SIZES", {})
    monkeypatch.setattr(chips_mod, "_PHYSICS", {})
    return cache


def _instance(**derates: float) -> chips_mod.Instance:
    reg = Registry.default()
    chip = reg.load("chip", "gpu-a")
    if derates:
        chip = chip.model_copy(update={"derates": chip.derates.model_copy(update=derates)})
    model = model_numbers(reg.load("model", "qwen3-235b-a22b"))
    return chips_mod.Instance(chip, model, 8)


def _entries(d: Path) -> set[str]:
    return {p.name for p in d.glob("*.pickle")} if d.is_dir() else set()


def test_kept_tables_are_the_computed_values(store: Path) -> None:
    inst = _instance()
    b = inst.max_batch_at_tpot(20_000.0, 0.05)
    e = inst.extend_affine(20_000.0)
    assert physics_disk.save(chips_mod._PHYSICS) >= 1
    assert physics_disk.save(chips_mod._PHYSICS) == 0  # nothing grew since
    kept = _entries(store)
    chips_mod._PHYSICS.clear()
    again = _instance()
    table = again.cache("batch")
    assert table == {(20_000.0, 0.05): b}  # read back, not computed
    assert again.max_batch_at_tpot(20_000.0, 0.05) == b and again.extend_affine(20_000.0) == e
    assert _entries(store) == kept


def test_another_chip_s_numbers_are_another_entry(store: Path) -> None:
    a, b = _instance(), _instance(step_overhead_ms=1.5)
    assert a.physics_key != b.physics_key
    assert physics_disk._name(a.physics_key) != physics_disk._name(b.physics_key)
    a.max_batch_at_tpot(20_000.0, 0.05)
    b.max_batch_at_tpot(20_000.0, 0.05)
    assert physics_disk.save(chips_mod._PHYSICS) == 2


def test_sampled_physics_is_never_written(store: Path) -> None:
    _instance(step_overhead_ms=1.25).max_batch_at_tpot(20_000.0, 0.05)
    physics_disk.transient()
    assert physics_disk.save(chips_mod._PHYSICS) == 0 and not _entries(store)


def test_a_damaged_entry_is_computed_afresh_with_a_note(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    inst = _instance()
    b = inst.max_batch_at_tpot(20_000.0, 0.05)
    physics_disk.save(chips_mod._PHYSICS)
    name = physics_disk._name(inst.physics_key)
    (store / f"{name}.pickle").write_bytes(b"not a pickle")
    chips_mod._PHYSICS.clear()
    assert _instance().max_batch_at_tpot(20_000.0, 0.05) == b
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "physics tables computed afresh" in err[0]
    parse_cache.put(name, ["not", "tables"])  # readable, but not tables
    chips_mod._PHYSICS.clear()
    parse_cache._NOTED.clear()  # a new run: one note a run
    assert _instance().max_batch_at_tpot(20_000.0, 0.05) == b
    assert "physics tables computed afresh" in capsys.readouterr().err


def test_off_with_the_parse_cache(store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(parse_cache.ENV_DIR, "off")
    parse_cache.cache_dir.cache_clear()
    _instance().max_batch_at_tpot(20_000.0, 0.05)
    assert physics_disk.save(chips_mod._PHYSICS) == 0 and not _entries(store)


def test_writes_stop_at_the_cap(store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(physics_disk, "MAX_WRITES", 2)
    for v in (1.1, 1.2, 1.3):
        _instance(step_overhead_ms=v).max_batch_at_tpot(20_000.0, 0.05)
    assert physics_disk.save(chips_mod._PHYSICS) == 2 and len(_entries(store)) == 2


def test_the_oldest_entries_go_past_the_bound(store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(physics_disk, "MAX_KEPT", 2)
    parse_cache.put("unrelated", {"a": 1})  # another kind of entry is never removed
    names = []
    for v in (1.1, 1.2, 1.3):
        inst = _instance(step_overhead_ms=v)
        inst.max_batch_at_tpot(20_000.0, 0.05)
        assert physics_disk.save(chips_mod._PHYSICS) == 1
        names.append(physics_disk._name(inst.physics_key) + ".pickle")
        older = store / names[0]
        if older.exists():
            os.utime(older, ns=(1, 1))  # written long ago
    assert _entries(store) == {"unrelated.pickle", *names[1:]}


def test_two_runs_of_a_command_give_the_same_output(tmp_path: Path) -> None:
    # the first run computes the tables and keeps them, the second reads them
    env = dict(os.environ, **{parse_cache.ENV_DIR: str(tmp_path / "cache")})
    args = [sys.executable, "-m", "pddplan", "solve", "--no-verdict-check", "-f", "json"]
    first = subprocess.run(args, env=env, capture_output=True, text=True, check=True)
    kept = _entries(tmp_path / "cache")
    second = subprocess.run(args, env=env, capture_output=True, text=True, check=True)
    assert first.stdout == second.stdout and first.stdout.startswith("{")
    assert _entries(tmp_path / "cache") == kept  # nothing new the second time
    off = dict(os.environ, **{parse_cache.ENV_DIR: "off"})
    third = subprocess.run(args, env=off, capture_output=True, text=True, check=True)
    assert third.stdout == first.stdout


def test_a_changed_instance_class_field_changes_the_key() -> None:
    # the key is the repr of the physics key's value: every number of the chip, model, layout
    inst = _instance()
    changed = dataclasses.replace(inst, memory_utilization=0.85)
    assert physics_disk._name(inst.physics_key) != physics_disk._name(changed.physics_key)


def test_what_a_session_remembers_is_bounded(store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the sizes read are kept for as many keys as the in-process tables; a transient process
    # keeps none (it writes nothing)
    monkeypatch.setattr(physics_disk, "_SIZES_MAX", 2)
    for v in (1.1, 1.2, 1.3):
        _instance(step_overhead_ms=v).max_batch_at_tpot(20_000.0, 0.05)
    assert 0 < len(physics_disk._SIZES) <= 2
    physics_disk.transient()
    physics_disk._SIZES.clear()
    _instance(step_overhead_ms=1.4).max_batch_at_tpot(20_000.0, 0.05)
    assert not physics_disk._SIZES
