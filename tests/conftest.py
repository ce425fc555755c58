"""Shared fixtures: the bundled registry, a builder of temporary profile directories, and the
paths of the broken-profile fixtures."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

# the suite keeps its parsed-YAML cache apart from the user's (subprocesses inherit it); a
# directory made here goes when this process ends (each pytest process, xdist's workers
# included, makes its own), so that runs do not pile them up in the temporary directory
if "PDDPLAN_CACHE_DIR" not in os.environ:
    _cache_dir = tempfile.mkdtemp(prefix="pddplan-test-cache-")
    os.environ["PDDPLAN_CACHE_DIR"] = _cache_dir
    atexit.register(shutil.rmtree, _cache_dir, ignore_errors=True)

from pddplan.io.loader import ENV_VAR, Registry, bundled_profiles_dir

FIXTURES = Path(__file__).parent / "fixtures"
BROKEN = FIXTURES / "broken"

#: A valid chip profile (H100-like numbers); ``{name}`` and ``{price}`` are filled in.
CHIP_TEMPLATE = """\
kind: chip
name: {name}
display_name: "Test chip {name}"
vendor: Test
datasheet:
  source: "unit-test datasheet"
  bf16_tflops: 989.0
  fp8_tflops: 1979.0
  memory_gb: 80.0
  memory_bandwidth_tb_per_s: 3.35
  scaleup_bandwidth_gb_per_s: 900.0
price:
  source: "unit-test price"
  rental_usd_per_hour: {price}
derates:
  source: "unit-test derates"
  compute_efficiency: 0.7
  compute_half_saturation_tokens: 64.0
  memory_bandwidth_efficiency: 0.8
  scaleup_efficiency: 0.9
  step_overhead_ms: 3.0
"""


def chip_yaml(name: str, price: float = 1.0) -> str:
    return CHIP_TEMPLATE.format(name=name, price=price)


@pytest.fixture
def bundled_registry() -> Registry:
    """The bundled profiles only (no user directories, no environment variable)."""
    return Registry(dirs=[bundled_profiles_dir()])


@pytest.fixture
def no_profiles_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make sure a PDDPLAN_PROFILES set in the caller's shell does not leak into a test."""
    monkeypatch.delenv(ENV_VAR, raising=False)


TmpProfiles = Callable[..., Path]


@pytest.fixture
def tmp_profiles(tmp_path: Path) -> TmpProfiles:
    """Build a profile directory under ``tmp_path``.

    ``tmp_profiles({"chips/foo.yaml": "...yaml...", ...})`` writes each file (dedented) and
    returns the directory, ready for ``--profiles`` or :meth:`Registry.default`.
    """
    counter = iter(range(1_000_000))

    def build(files: dict[str, str], root: str | None = None) -> Path:
        base = tmp_path / (root or f"profiles{next(counter)}")
        base.mkdir(parents=True, exist_ok=True)
        for rel, text in files.items():
            p = base / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(textwrap.dedent(text), encoding="utf-8")
        return base

    return build


@pytest.fixture
def broken_dir() -> Path:
    """``tests/fixtures/broken``: profiles that are broken on purpose, one fault each."""
    return BROKEN


@pytest.fixture(name="chip_yaml")
def chip_yaml_fixture() -> Callable[..., str]:
    """``chip_yaml(name, price=1.0)``: the text of a valid chip profile."""
    return chip_yaml
