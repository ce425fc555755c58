"""docs/api.md's examples run as doctests, from the repository root (they name its files)."""

from __future__ import annotations

import doctest
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_api_doc_examples(monkeypatch: pytest.MonkeyPatch, no_profiles_env: None) -> None:
    monkeypatch.chdir(ROOT)
    res = doctest.testfile(
        str(ROOT / "docs" / "api.md"),
        module_relative=False,
        optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE,
    )
    assert res.attempted > 10
    assert res.failed == 0
