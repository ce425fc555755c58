"""Fixtures of the io tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from pddplan.io import parse_cache, yamldoc


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A parse cache of the test's own (``PDDPLAN_CACHE_DIR``), nothing read before kept."""
    d = tmp_path / "cache"
    monkeypatch.setenv(parse_cache.ENV_DIR, str(d))
    parse_cache.cache_dir.cache_clear()
    yamldoc._read_yaml_cached.cache_clear()
    yield d
    parse_cache.cache_dir.cache_clear()
    yamldoc._read_yaml_cached.cache_clear()
