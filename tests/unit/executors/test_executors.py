"""Executors: the dask executor (a LocalCluster) gives the same results as the local one."""

from __future__ import annotations

from pathlib import Path

import pytest

import pddplan

ROOT = Path(__file__).resolve().parents[3]
PAPER = ROOT / "examples" / "pdd-paper.yaml"

pytest.importorskip("distributed")


@pytest.mark.slow
def test_robust_dask_equals_local() -> None:
    local = pddplan.robust(PAPER, samples=48, confidence=0.9, seed=5).to_json()
    dask = pddplan.robust(PAPER, samples=48, confidence=0.9, seed=5, executor="dask", jobs=2)
    assert dask.run.executor == "dask"
    assert dask.to_json() == local


def test_local_processes_equal_one_process() -> None:
    one = pddplan.robust(PAPER, samples=24, seed=2).to_json()
    two = pddplan.robust(PAPER, samples=24, seed=2, jobs=2).to_json()
    assert one == two


def test_sweep_dask_equals_local() -> None:
    axes = {
        "chips.gpu-b.price_usd_per_hour": [2.4, 2.6, 3.0],
        "link.bandwidth_gbit_per_s": [50, 100],
    }
    local = pddplan.sweep(PAPER, axes, baselines=False).to_json()
    dask = pddplan.sweep(PAPER, axes, baselines=False, executor="dask", jobs=2).to_json()
    assert dask == local
