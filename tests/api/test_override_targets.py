"""Override targets resolved against the catalog, and every list PATH settable with --set."""

from __future__ import annotations

from pathlib import Path

import pytest

import pddplan
from pddplan.api.values import parse_overrides
from pddplan.errors import ProfileError

ROOT = Path(__file__).resolve().parents[2]


def _misspelt(tmp_path: Path) -> Path:
    text = (ROOT / "examples" / "pdd-paper.yaml").read_text()
    assert "\n    gpu-b:" in text
    f = tmp_path / "bb.yaml"
    f.write_text(text.replace("\n    gpu-b:", "\n    gpu-bb:", 1))
    return f


def test_a_misspelt_override_target_is_an_error_in_solve(tmp_path: Path) -> None:
    # it was dropped without a word: the price quote in it ignored (175.40 instead of 171.40 $/h)
    with pytest.raises(ProfileError, match=r"overrides\.chips\.gpu-bb: .*did you mean 'gpu-b'"):
        pddplan.solve(_misspelt(tmp_path))


def test_a_misspelt_override_target_is_an_error_in_profiles_validate(tmp_path: Path) -> None:
    res = pddplan.validate_profiles([_misspelt(tmp_path)])
    rows = res.to_json()
    assert "did you mean 'gpu-b'" in str(rows)
    assert res.errors


@pytest.mark.parametrize("path", ["roles.P.layouts", "roles.RLD.layouts", "baseline.layouts"])
@pytest.mark.parametrize("text", ["tp", "[tp]", "tp,ep"])
def test_layouts_are_settable(path: str, text: str) -> None:
    overrides = parse_overrides([f"{path}={text}"], "solve")
    assert overrides[path] == text.strip("[]").split(",")
    rs = pddplan.load_scenario("pdd-paper", overrides=overrides)
    assert rs is not None


def test_an_unknown_override_group_keeps_its_message(tmp_path: Path) -> None:
    text = (ROOT / "examples" / "pdd-paper.yaml").read_text()
    f = tmp_path / "g.yaml"
    f.write_text(text.replace("\noverrides:\n  chips:", "\noverrides:\n  chipz:", 1))
    with pytest.raises(ProfileError, match=r"unknown override group 'chipz'; did you mean 'chips'"):
        pddplan.solve(f)
