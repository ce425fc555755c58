"""The public API: loading, validated overrides (the same messages as a file), typed results."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import pddplan
from pddplan.errors import OverrideError, PddplanError, ProfileError, UsageError

ROOT = Path(__file__).resolve().parents[2]
NEG = {"link.bandwidth_gbit_per_s": -5}


def test_negative_bandwidth_override_names_key_and_range() -> None:
    with pytest.raises(PddplanError) as info:
        pddplan.solve("default", overrides=NEG)
    exc = info.value
    assert isinstance(exc, OverrideError) and isinstance(exc, UsageError)
    assert exc.exit_code == 2
    assert str(exc) == (
        "overrides: link.bandwidth_gbit_per_s: Input should be greater than or equal to 0.001 (got -5); allowed range [0.001, 1e+06]"
    )
    assert exc.key == "link.bandwidth_gbit_per_s" and exc.value == -5


def test_override_gets_the_message_a_scenario_file_gets(tmp_path: Path) -> None:
    text = (ROOT / "profiles/scenarios/default.yaml").read_text()
    text += "overrides:\n  links:\n    wan-100g-cross-city:\n      bandwidth_gbit_per_s: -5\n"
    bad = tmp_path / "bad.yaml"
    bad.write_text(text)
    with pytest.raises(ProfileError) as from_file:
        pddplan.load_scenario(bad)
    with pytest.raises(OverrideError) as from_api:
        pddplan.load_scenario("default", overrides=NEG)
    assert from_file.value.detail == from_api.value.detail
    assert "overrides.links.wan-100g-cross-city.bandwidth_gbit_per_s" in str(from_file.value)


def test_sweep_set_gets_the_same_error() -> None:
    with pytest.raises(OverrideError) as api:
        pddplan.sweep("default", {"link.bandwidth_gbit_per_s": [100, -5]})
    assert (
        api.value.detail
        == "Input should be greater than or equal to 0.001 (got -5); allowed range [0.001, 1e+06]"
    )
    cli = subprocess.run(
        [sys.executable, "-m", "pddplan", "sweep", "--set", "link.bandwidth_gbit_per_s=100,-5"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert cli.returncode == 2 and cli.stdout == ""
    assert cli.stderr.strip() == (
        "pddplan: error: --set link.bandwidth_gbit_per_s=-5: "
        "Input should be greater than or equal to 0.001 (got -5); allowed range [0.001, 1e+06]"
    )


@pytest.mark.parametrize(
    ("path", "guess"),
    [
        ("link.bandwidth_gbitps", "link.bandwidth_gbit_per_s"),
        ("sla.ttft_p99", "sla.ttft_p99_s"),
        ("chips.gpu-b.price_usd_per_hr", "chips.gpu-b.price_usd_per_hour"),
        ("workload.hit_rate.shfit", "workload.hit_rate.shift"),
    ],
)
def test_typo_override_gets_did_you_mean(path: str, guess: str) -> None:
    with pytest.raises(OverrideError, match=f"did you mean '{guess}'") as info:
        pddplan.solve("default", overrides={path: 1})
    assert info.value.unknown_key and info.value.key == path
    with pytest.raises(OverrideError, match=f"did you mean '{guess}'"):
        pddplan.sweep("default", {path: [1, 2]})


def test_other_bad_values_are_validated_like_a_file() -> None:
    with pytest.raises(OverrideError, match="p50 <= p90 <= p99"):
        pddplan.load_scenario(overrides={"sla.ttft_p50_s": 50})
    with pytest.raises(OverrideError, match="less than or equal to 1"):
        pddplan.load_scenario(overrides={"workload.hit_rate.shift": 3})
    with pytest.raises(OverrideError, match="no link profile named 'nope'"):
        pddplan.load_scenario(overrides={"link": "nope"})


def test_overrides_change_the_plan_as_the_cli_sweep_does() -> None:
    slow = pddplan.solve(overrides={"link.bandwidth_gbit_per_s": 50})
    assert slow.plan.rate_rps == pytest.approx(2.0)
    row = pddplan.sweep(axes={"link.bandwidth_gbit_per_s": [50]}).points[0]
    assert row["cost_usd_per_hour"] == pytest.approx(slow.cost_usd_per_hour)


def test_loaded_scenario_is_reused_and_stacks_overrides() -> None:
    ls = pddplan.load_scenario("default", overrides={"chips.gpu-b.price_usd_per_hour": 3.0})
    assert ls.chips["gpu-b"].price.rental_usd_per_hour == 3.0
    a = pddplan.solve(ls, overrides={"rate_rps": 1.5})
    b = pddplan.solve("default", overrides={"chips.gpu-b.price_usd_per_hour": 3.0, "rate_rps": 1.5})
    assert a.to_json() == b.to_json()
    # a profile swap, then a key of the swapped profile
    ls2 = ls.with_overrides({"link": "wan-10g-cross-city", "link.rtt_ms": 9})
    assert ls2.link.name == "wan-10g-cross-city" and ls2.link.rtt_ms == 9


def test_model_copy_validates_updates() -> None:
    link = pddplan.load_scenario().link
    assert link.model_copy(update={"bandwidth_gbit_per_s": 50}).bandwidth_gbit_per_s == 50
    with pytest.raises(
        ProfileError, match="bandwidth_gbit_per_s: Input should be greater than or equal to 0.001"
    ):
        link.model_copy(update={"bandwidth_gbit_per_s": -5})
    with pytest.raises(ProfileError, match="did you mean 'bandwidth_gbit_per_s'"):
        link.model_copy(update={"bandwidth_gbitps": 5})


def test_option_errors_name_the_option_not_a_flag() -> None:
    with pytest.raises(
        UsageError, match=r"^rate_rps must be a finite number in \[1e-06, 1e\+06\], not 0$"
    ):
        pddplan.solve(rate_rps=0)
    with pytest.raises(UsageError, match="^max_chips names chips the scenario does not use: h20"):
        pddplan.solve(max_chips={"h20": 8})
    r = subprocess.run(
        [sys.executable, "-m", "pddplan", "solve", "--max-chips", "h20=8"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert r.returncode == 2
    assert r.stderr.strip() == (
        "pddplan: error: --max-chips names chips the scenario does not use: h20"
    )


def test_infeasible_is_a_typed_error() -> None:
    with pytest.raises(pddplan.InfeasibleError) as info:
        pddplan.solve(rate_rps=500.0)
    assert info.value.exit_code == 3


def test_results_have_rows_sections_and_json() -> None:
    r = pddplan.solve(explain=True)
    assert [s.title for s in r.sections()][:2] == ["plan", "summary"]
    assert r.rows()[0]["role"] == "P"
    assert r.rows("hit-rate classes")[0]["route"]
    doc = r.to_json()
    assert doc["schema_version"] and json.loads(json.dumps(doc)) == doc
    assert set(r.ttft_by_pipeline_s) == set(doc["plan"]["ttft_by_pipeline_s"])


def test_sweep_reads_the_scenario_once(monkeypatch: pytest.MonkeyPatch) -> None:
    import pddplan.io.loader as loader
    import pddplan.io.overrides as overrides

    calls: list[Path] = []
    real = loader.read_yaml

    def counting(path: Path) -> loader.YamlDoc:
        calls.append(path)
        return real(path)

    monkeypatch.setattr(loader, "read_yaml", counting)
    monkeypatch.setattr(overrides, "read_yaml", counting)
    few = pddplan.sweep(axes={"link.bandwidth_gbit_per_s": [50, 100]}, baselines=False)
    n_few = len(calls)
    calls.clear()
    many = pddplan.sweep(
        axes={"link.bandwidth_gbit_per_s": [40, 50, 60, 70, 80, 90, 100]}, baselines=False
    )
    assert len(few.points) == 2 and len(many.points) == 7
    assert len(calls) == n_few <= 3  # the scenario and the overridden profile, once each


def test_api_names_survive_importing_their_submodules() -> None:
    import pddplan.bathtub  # noqa: F401  (the module of the same name)
    from pddplan.bathtub import analyze  # noqa: F401
    from pddplan.calibrate import fit_derates  # noqa: F401

    assert callable(pddplan.bathtub) and pddplan.bathtub.__module__ == "pddplan.api"
    assert pddplan.calibrate.__module__ == "pddplan.api"


def test_import_pddplan_stays_light() -> None:
    code = "import sys, pddplan; print('numpy' in sys.modules, 'pddplan.api' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.split() == ["False", "False"]


def test_the_public_names_are_one_list() -> None:
    """The package root's lazily loaded names are exactly what pddplan.api exports (the root
    cannot import the API to read its list: that would load it on ``import pddplan``)."""
    import pddplan.api as api_pkg

    assert set(pddplan._API) == set(api_pkg.__all__) - {"solve_result"}
    assert set(pddplan._API) <= set(pddplan.__all__)
