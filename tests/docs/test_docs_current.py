"""The figures in README.md, docs/*.md and examples/measurements/README.md are what the
commands print now.

Every figure a pddplan command produces sits in a cog block (``docs/_gen.py``); this test
regenerates them all in memory and fails, naming the files, when one differs from the text.
"""

from __future__ import annotations

import io
import os
import sys
from pathlib import Path

import pytest

cogapp = pytest.importorskip("cogapp", reason="cogapp is in the dev extras")

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "docs"))
import _gen  # noqa: E402


def check(files: list[str]) -> tuple[int, str]:
    """Run ``cog --check`` over ``files`` from the repository root: (status, its output)."""
    out = io.StringIO()
    old = Path.cwd()
    os.chdir(ROOT)
    try:
        cog = cogapp.Cog()
        cog.set_output(stdout=out, stderr=out)
        status = cog.main(["cog", "--check", "--diff", "-I", "docs", *files])
    finally:
        os.chdir(old)
    return status, out.getvalue()


def stale(output: str) -> list[str]:
    """The files cog's check output names as changed."""
    return [
        ln.split()[1]
        for ln in output.splitlines()
        if ln.startswith(("Checking", "Cogging")) and "(changed)" in ln
    ]


def test_every_doc_is_checked() -> None:
    assert "README.md" in _gen.FILES
    assert "docs/solve.md" in _gen.FILES
    # it repeats docs/calibrate.md's held-out errors of the shipped measurements
    assert "examples/measurements/README.md" in _gen.FILES
    assert all(name in _gen.COMMAND for name in _gen.FILES if not name.startswith("docs/"))
    for name in _gen.FILES:
        assert (ROOT / name).is_file(), name


def test_docs_figures_are_current() -> None:
    status, output = check(list(_gen.FILES))
    assert status == 0, (
        f"figures in {', '.join(stale(output)) or 'the docs'} no longer match what the "
        f"commands print; regenerate them on purpose with `{_gen.COMMAND}` (from the "
        f"repository root) and review the diff\n{output}"
    )


def test_a_figure_edited_by_hand_fails(tmp_path: Path) -> None:
    """The check is not vacuous: an edited figure inside a cog block is caught."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index("<!-- [[[cog _gen.procurement")
    end = text.index("<!-- [[[end]]] -->", start)
    inner = text[start:end]
    edited = inner.replace("$/h", "$/day", 1)
    assert edited != inner
    copy = tmp_path / "README.md"
    copy.write_text(text[:start] + edited + text[end:], encoding="utf-8")
    status, output = check([str(copy)])
    assert status != 0
    assert str(copy) in stale(output)
