"""Unit tests of workloads named by file path: ``is_workload_path``, the registry's lookup, a
scenario's ``workload: FILE.yaml`` (relative to the scenario file) and the ``workload`` override
(relative to the working directory)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pddplan.errors import NotFoundError, OverrideError, ProfileError
from pddplan.io.loader import Registry, bundled_profiles_dir, is_workload_path, load_scenario
from pddplan.io.overrides import ScenarioSource

BUNDLED_WORKLOAD = bundled_profiles_dir() / "workloads" / "agent-64k.yaml"
DEFAULT_SCENARIO = bundled_profiles_dir() / "scenarios" / "default.yaml"


def _workload_copy(folder: Path, stem: str) -> Path:
    """The bundled agent-64k workload saved as ``folder/stem.yaml`` (named ``stem``)."""
    text = BUNDLED_WORKLOAD.read_text(encoding="utf-8").replace("name: agent-64k", f"name: {stem}")
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{stem}.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def _scenario_with(folder: Path, workload: str, extra: str = "") -> Path:
    """The bundled default scenario, with ``workload: VALUE``, saved in ``folder``."""
    lines = DEFAULT_SCENARIO.read_text(encoding="utf-8").splitlines()
    assert sum(ln.startswith("workload:") for ln in lines) == 1
    text = "\n".join(f"workload: {workload}" if ln.startswith("workload:") else ln for ln in lines)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "scen.yaml"
    path.write_text(text + "\n" + extra, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("agent-64k", False),
        ("prod", False),
        ("prod.yaml", True),
        ("prod.YML", True),
        ("traces/prod", True),
        ("./prod", True),
        ("/abs/prod.yaml", True),
        (f"dir{os.sep}prod", True),
    ],
)
def test_is_workload_path(value: str, expected: bool) -> None:
    assert is_workload_path(value) is expected


def test_registry_resolves_a_workload_file_relative_to_base_dir(tmp_path: Path) -> None:
    wl = _workload_copy(tmp_path / "w", "prod")
    reg = Registry.default()
    assert reg.path("workload", "prod.yaml", base_dir=tmp_path / "w") == wl
    assert reg.path("workload", str(wl)) == wl  # absolute: base_dir plays no part


def test_registry_missing_workload_file_names_the_path(tmp_path: Path) -> None:
    reg = Registry.default()
    with pytest.raises(NotFoundError) as err:
        reg.path("workload", "gone.yaml", base_dir=tmp_path, origin="workload: in s.yaml")
    msg = str(err.value)
    assert msg.startswith("gone.yaml: workload file not found (")
    assert str(tmp_path / "gone.yaml") in msg and "workload: in s.yaml" in msg
    assert err.value.exit_code == 2


def test_paths_are_only_workloads(tmp_path: Path) -> None:
    # only a workload may be named by its file: a model value is always a profile name
    with pytest.raises(NotFoundError, match="no model profile named 'x.yaml'"):
        Registry.default().path("model", "x.yaml")


def test_unknown_workload_name_keeps_did_you_mean_and_mentions_paths() -> None:
    with pytest.raises(NotFoundError) as err:
        Registry.default().path("workload", "agent-64")
    msg = str(err.value)
    assert "did you mean 'agent-64k'" in msg
    assert "a path to a workload file" in msg


def test_scenario_workload_path_is_relative_to_the_scenario_file(tmp_path: Path) -> None:
    _workload_copy(tmp_path / "plans" / "data", "prod")
    scen = _scenario_with(tmp_path / "plans", "data/prod.yaml")
    rs = load_scenario(str(scen), Registry.default())
    assert rs.workload.name == "prod"
    assert rs.workload.input_tokens.model_dump() == {"fixed": 64512}


def test_scenario_workload_path_takes_its_overrides(tmp_path: Path) -> None:
    _workload_copy(tmp_path, "prod")
    extra = "overrides:\n  workloads:\n    prod.yaml: {hit_rate: {shift: -0.1}}\n"
    rs = load_scenario(str(_scenario_with(tmp_path, "prod.yaml", extra)), Registry.default())
    assert rs.workload.hit_rate.shift == pytest.approx(-0.1)


def test_scenario_missing_workload_file_is_not_found_with_its_line(tmp_path: Path) -> None:
    scen = _scenario_with(tmp_path, "missing.yaml")
    line = next(
        i for i, ln in enumerate(scen.read_text().splitlines(), 1) if ln.startswith("workload:")
    )
    with pytest.raises(NotFoundError) as err:
        load_scenario(str(scen), Registry.default())
    msg = str(err.value)
    assert msg.startswith("missing.yaml: workload file not found (")
    assert f"workload: in {scen}, line {line}" in msg
    assert not isinstance(err.value, ProfileError)  # exit 2, not a malformed file


def test_scenario_unknown_workload_name_is_still_a_profile_error(tmp_path: Path) -> None:
    scen = _scenario_with(tmp_path, "agent-64")
    with pytest.raises(ProfileError, match="did you mean 'agent-64k'.*path to a workload file"):
        load_scenario(str(scen), Registry.default())


def test_workload_file_of_the_wrong_kind_names_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "prod.yaml"
    bad.write_text("kind: chip\nname: prod\n", encoding="utf-8")
    with pytest.raises(ProfileError, match=r"prod\.yaml:1: kind: expected kind 'workload'"):
        load_scenario(str(_scenario_with(tmp_path, "prod.yaml")), Registry.default())


def test_override_workload_path_is_relative_to_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _workload_copy(tmp_path / "cwd", "prod")
    # a scenario in another folder: the override's relative path is not read from there
    scen = _scenario_with(tmp_path / "elsewhere", "agent-64k")
    monkeypatch.chdir(tmp_path / "cwd")
    src = ScenarioSource.open(str(scen), Registry.default())
    rs = src.resolve({"workload": "prod.yaml", "workload.hit_rate.shift": -0.05})
    assert rs.workload.name == "prod"
    assert rs.workload.hit_rate.shift == pytest.approx(-0.05)


def test_override_missing_workload_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    src = ScenarioSource.open(None, Registry.default())
    with pytest.raises(NotFoundError) as err:
        src.resolve({"workload": "gone/prod.yaml"})
    assert str(err.value).startswith("gone/prod.yaml: workload file not found (")
    assert "override workload=gone/prod.yaml" in str(err.value)


def test_override_unknown_workload_name(tmp_path: Path) -> None:
    src = ScenarioSource.open(None, Registry.default())
    with pytest.raises(OverrideError, match="did you mean 'agent-64k'.*path to a workload file"):
        src.resolve({"workload": "agent-64"})


def test_a_source_loads_each_profile_once_and_a_new_source_reads_edits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a source is a snapshot: its variants share the profiles it loaded (a robust study
    # resolves hundreds), and a new source (a new command, a new notebook load) reads them again
    from pddplan.io import loader

    user = tmp_path / "mine"
    (user / "chips").mkdir(parents=True)
    chip = user / "chips" / "gpu-a.yaml"
    chip.write_text((bundled_profiles_dir() / "chips" / "gpu-a.yaml").read_text("utf-8"), "utf-8")
    reg = Registry.default([user])
    calls: list[tuple[Path, str]] = []
    real = loader._load_cached

    def counted(path: Path, kind: str):  # type: ignore[no-untyped-def]
        calls.append((path, kind))
        return real(path, kind)

    monkeypatch.setattr("pddplan.io.overrides._load_cached", counted)
    src = ScenarioSource.open(None, reg)
    one = src.resolve({"rate_rps": 1.5})
    first = len(calls)
    assert first > 0 and ("chip" in {k for _, k in calls})
    two = src.resolve({"rate_rps": 2.5, "link.rtt_ms": 30.0})
    assert len(calls) == first  # nothing loaded again
    assert two.chips["gpu-a"] is one.chips["gpu-a"] and two.link.rtt_ms == 30.0
    price = one.chips["gpu-a"].price.rental_usd_per_hour
    text = chip.read_text("utf-8").replace(
        f"rental_usd_per_hour: {price:g}", f"rental_usd_per_hour: {price + 1:g}"
    )
    assert text != chip.read_text("utf-8")
    chip.write_text(text, "utf-8")
    os.utime(chip, ns=(1, 1))
    assert src.resolve({"rate_rps": 1.5}).chips["gpu-a"].price.rental_usd_per_hour == price
    again = ScenarioSource.open(None, reg).resolve({"rate_rps": 1.5})
    assert again.chips["gpu-a"].price.rental_usd_per_hour == price + 1
