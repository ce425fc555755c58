"""`profiles validate` reads the search path as the commands read it (one loader, one rule)."""

from __future__ import annotations

from pathlib import Path

import pytest

import pddplan

REPO = Path(__file__).resolve().parents[3]


def _by_file(profiles: Path) -> dict[str, tuple[str, str]]:
    res = pddplan.validate_profiles(profiles=[profiles])
    return {str(r["file"]): (str(r["status"]), str(r["error"])) for r in res.files}


def test_a_profile_without_kind_passes_as_the_commands_read_it(tmp_path: Path) -> None:
    # the commands load profiles/chips/NAME.yaml as a chip even without `kind:`; validate
    # read the same file with no kind and failed it ("unknown kind None")
    text = (REPO / "profiles" / "chips" / "gpu-a.yaml").read_text(encoding="utf-8")
    (tmp_path / "chips").mkdir()
    f = tmp_path / "chips" / "gpu-a.yaml"
    f.write_text(text.replace("kind: chip\n", ""), encoding="utf-8")
    assert "kind:" not in f.read_text(encoding="utf-8").split("name:")[0]
    res = pddplan.solve(overrides={"rate_rps": 1.0}, profiles=[tmp_path])
    assert res.plan is not None  # the commands read it
    assert _by_file(tmp_path)[str(f)] == ("ok", "")
    # a file whose kind disagrees with its directory still fails, as in the commands
    f.write_text(text.replace("kind: chip", "kind: model"), encoding="utf-8")
    status, error = _by_file(tmp_path)[str(f)]
    assert status == "error" and "expected kind 'chip', found 'model'" in error


def test_scenarios_on_the_search_path_are_validated(tmp_path: Path) -> None:
    # with no files, validate checked the chips, models, links, workloads and caches of the
    # search path, and none of its scenarios: a broken scenario passed
    (tmp_path / "scenarios").mkdir()
    bad = tmp_path / "scenarios" / "mine.yaml"
    text = (REPO / "profiles" / "scenarios" / "default.yaml").read_text(encoding="utf-8")
    bad.write_text(text.replace("model: ", "model: no-such-model-", 1), encoding="utf-8")
    rows = _by_file(tmp_path)
    status, error = rows[str(bad)]
    assert status == "error" and "no-such-model-" in error
    bundled = REPO / "profiles" / "scenarios" / "default.yaml"
    assert rows[str(bundled)] == ("ok", "")


def test_a_broken_profile_is_one_error_line_though_scenarios_load_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # with the search path's scenarios validated, each one that loads the broken chip failed
    # with the chip's own error, and the line was printed once per scenario
    from pddplan.cli import main

    (tmp_path / "chips").mkdir()
    text = (REPO / "profiles" / "chips" / "gpu-a.yaml").read_text(encoding="utf-8")
    (tmp_path / "chips" / "gpu-a.yaml").write_text(
        text.replace("bf16_tflops: 989.0", "bf16_tflops: -1"), encoding="utf-8"
    )
    with pytest.raises(SystemExit) as exc:
        main(["--profiles", str(tmp_path), "profiles", "validate"])
    errors = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("pddplan: error")]
    assert exc.value.code == 1
    assert len(errors) == 1 and "gpu-a.yaml" in errors[0] and "bf16_tflops" in errors[0]
