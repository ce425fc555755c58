"""Quick fuzz mode: a few hundred generated bad or odd inputs on every input surface.

Every case must end in success with sane output or in one clean error line; never a traceback,
a run over the time limit, or exit 0 on nonsense (see fuzz_harness.py for the classes and the
oracles). The long mode is ``python benchmarks/fuzz.py --cases 5000``.
"""

from __future__ import annotations

import warnings

import pytest
from fuzz_harness import HOSTILE_YAML, SURFACES, Case, alias_bomb, cases, run_case
from hypothesis import HealthCheck, Phase, given, settings
from time_limits import cpu_limit_s

BAD = ("traceback", "slow", "silent")
SLOW = {"profile", "robust", "uncertain", "report", "layouts", "inventory", "cache", "free"}
QUICK = settings(
    max_examples=40,
    database=None,
    deadline=None,
    derandomize=True,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=list(HealthCheck),
)


@pytest.mark.parametrize(
    "surface",
    # the surfaces whose every case is a solve (or several) run in the slow set
    [pytest.param(s, marks=pytest.mark.slow) if s in SLOW else s for s in sorted(SURFACES)],
)
def test_quick_fuzz(surface: str) -> None:
    seen: list[str] = []

    @QUICK
    @given(cases((surface,)))
    def one(case: Case) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            o = run_case(case)
        if o.kind in BAD:
            seen.append(f"{o.kind}: {o.detail or o.stderr.strip()[-300:]}\n  {case.describe()}")

    one()
    assert not seen, "\n".join(seen[:5])


@pytest.mark.parametrize("label,text", HOSTILE_YAML, ids=[h[0] for h in HOSTILE_YAML])
def test_hostile_yaml_is_one_clean_error(label: str, text: bytes) -> None:
    o = run_case(Case("yaml", ["profiles", "validate", "scen.yaml"], {"scen.yaml": text}))
    assert o.kind in ("error", "ok"), (label, o)
    if o.kind == "error":
        assert o.exit_code == 1
        errors = [ln for ln in o.stderr.splitlines() if ln.startswith("pddplan: error:")]
        assert len(errors) == 1 and "scen.yaml" in errors[0], o.stderr


def test_alias_bomb_fails_fast_and_small() -> None:
    import resource

    text = alias_bomb(10).encode()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # CPU time, not wall-clock time: a billion-laughs expansion would take far more than 1 s
    o = run_case(
        Case("yaml", ["profiles", "validate", "bomb.yaml"], {"bomb.yaml": text}),
        time_limit_s=cpu_limit_s(1.0),
    )
    assert o.elapsed_s < cpu_limit_s(1.0), o
    assert o.kind == "error" and o.exit_code == 1, o
    assert "aliases" in o.stderr
    grown_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert grown_kb < 200 * 1024
