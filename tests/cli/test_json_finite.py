"""No command's JSON carries a non-finite number or a number written as a string.

Over every command, on every bundled scenario (and every bundled link for ``transfer``), through
the API: the CLI prints exactly ``Result.to_json()`` (``report.emit`` renders the same
document), so one process checks them all. The document is serialised with
``allow_nan=False`` (an ``inf`` or ``NaN`` left in it fails) and walked for strings that read
as numbers (``"inf"``, ``"0.5"``); ``schema_version`` and names are text.
"""

from __future__ import annotations

import json
import math
import re
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import pddplan
from pddplan.io.loader import Registry
from pddplan.results.transfer import TransferResult

ROOT = Path(__file__).resolve().parents[2]
REGISTRY = Registry.default()
SCENARIOS = sorted(REGISTRY.scenarios())
LINKS = sorted(REGISTRY.index("link"))
NUMERIC = re.compile(r"^\s*[+-]?(inf|infinity|nan|\d+\.?\d*(e[+-]?\d+)?|\.\d+)\s*$", re.I)
TEXT_KEYS = {"schema_version", "name", "chip", "model", "link", "source"}
MEASURED = ROOT / "examples" / "measurements"


def _bad(o: Any, path: str = "") -> Iterator[str]:
    if isinstance(o, dict):
        for k, v in o.items():
            if isinstance(v, str) and k in TEXT_KEYS:
                continue
            yield from _bad(v, f"{path}.{k}")
    elif isinstance(o, list):
        for i, v in enumerate(o):
            yield from _bad(v, f"{path}[{i}]")
    elif isinstance(o, float) and not math.isfinite(o):
        yield f"{path}: {o!r}"
    elif isinstance(o, str) and NUMERIC.match(o):
        yield f"{path}: {o!r} (a number as a string)"


def _check(make: Callable[[], Any]) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        doc = make().to_json()
    json.dumps(doc, allow_nan=False)  # raises on inf or NaN
    assert not list(_bad(doc))


SCENARIO_COMMANDS: dict[str, Callable[[str], Any]] = {
    "solve": lambda s: pddplan.solve(s),
    "bathtub": lambda s: pddplan.bathtub(s),
    "report": lambda s: pddplan.plan_report(s),
    "robust": lambda s: pddplan.robust(s, samples=8, seed=0),
    "simulate": lambda s: pddplan.simulate(s, requests=200),
    "chips-rank": lambda s: pddplan.rank_chips(s),
    "sweep": lambda s: pddplan.sweep(s, [("rate_rps", [1.0, 5.0])]),
    "validate": lambda s: pddplan.validate_profiles([str(REGISTRY.scenarios()[s])]),
}


@pytest.mark.parametrize(
    "scenario",
    # the default scenario in every run; the others (some 40 s of CPU) in the slow set
    [s if s == "default" else pytest.param(s, marks=pytest.mark.slow) for s in SCENARIOS],
)
@pytest.mark.parametrize("command", sorted(SCENARIO_COMMANDS))
def test_scenario_command_json_is_finite(command: str, scenario: str) -> None:
    _check(lambda: SCENARIO_COMMANDS[command](scenario))


def test_breakeven_json_is_finite() -> None:
    # its default parameter (gpu-b's price) is in the scenarios that rent gpu-b
    for s in ("default", "pdd-paper"):
        _check(lambda s=s: pddplan.breakeven(s))


@pytest.mark.parametrize("link", LINKS)
def test_transfer_json_is_finite(link: str) -> None:
    _check(lambda: TransferResult(pddplan.transfer(link)))


@pytest.mark.parametrize(
    "make",
    [
        lambda: pddplan.step(
            model="llama-3.3-70b",
            chip="h100-sxm",
            tp=8,
            batch=16,
            input_tokens=1,
            context_tokens=4096,
        ),
        lambda: pddplan.calibrate(
            MEASURED / "h100-published.csv", chip="h100-sxm", model="llama-3.3-70b"
        ),
        lambda: pddplan.calibrate_link(
            MEASURED / "synthetic-multisize-link.csv", link="wan-100g-cross-city"
        ),
        lambda: pddplan.hitrate(
            ROOT / "tests" / "data" / "mooncake_excerpt.jsonl", cache_tokens="64k,unbounded"
        ),
        lambda: pddplan.list_profiles("chips"),
        lambda: pddplan.show_profile("h100-sxm"),
        lambda: pddplan.topology(ROOT / "examples" / "topologies" / "national.yaml"),
        lambda: pddplan.topology("default"),
        pytest.param(
            lambda: pddplan.horizon(ROOT / "examples" / "agent-diurnal.yaml"),
            marks=pytest.mark.slow,
        ),
    ],
    ids=[
        "step",
        "calibrate",
        "calibrate-link",
        "hitrate",
        "profiles-list",
        "profiles-show",
        "topology",
        "topology-two-site",
        "horizon",
    ],
)
def test_other_command_json_is_finite(make: Callable[[], Any]) -> None:
    _check(make)
