"""Errors on bundled files name them ("bundled scenario pdd-paper"), not their install path."""

from __future__ import annotations

from pathlib import Path

import pytest

from pddplan.cli import _fail
from pddplan.io.loader import Registry, bundled_names

REG = Registry.default()


def test_bundled_paths_become_names() -> None:
    scen = REG.scenarios()["pdd-paper"]
    chip = REG.index("chip")["gpu-b"]
    msg = f"{scen}:39: overrides.x: bad (with the overrides of {chip})"
    assert bundled_names(msg) == (
        "bundled scenario pdd-paper, line 39: overrides.x: bad "
        "(with the overrides of bundled chip profile gpu-b)"
    )
    assert bundled_names(f"{REG.scenarios()['default']}: bad") == "bundled scenario default: bad"


def test_a_users_file_keeps_its_path(tmp_path: Path) -> None:
    f = tmp_path / "pdd-paper.yaml"
    assert bundled_names(f"{f}:3: bad") == f"{f}:3: bad"


def test_the_command_line_prints_the_name(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        _fail(f"{REG.scenarios()['pdd-paper']}:4: rate_rps: bad", 1)
    assert exc.value.code == 1
    err = capsys.readouterr().err
    assert err == "pddplan: error: bundled scenario pdd-paper, line 4: rate_rps: bad\n"
