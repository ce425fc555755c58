"""The pipelines' sizing on an executor gives the plan this process gives (same options, same
order), on local processes and, where Dask is installed, on a LocalCluster."""

from __future__ import annotations

from pathlib import Path

import pytest

from pddplan import api


def _doc(small_file: Path, **kw: object) -> dict[str, object]:
    return api.topology(small_file, resilient=True, **kw).report().json_document()  # type: ignore[arg-type]


def test_local_processes_same_plan(small_file: Path) -> None:
    assert _doc(small_file, jobs=2) == _doc(small_file)


def test_dask_same_plan(small_file: Path) -> None:
    pytest.importorskip("distributed")
    assert _doc(small_file, executor="dask", jobs=2) == _doc(small_file)
