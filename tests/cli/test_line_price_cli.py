"""The line price through the CLI: ``--set link.bandwidth_gbit_per_s=`` prices the line as the
API does, a sweep over bandwidth prices each point, and a bad price model is one line and an
exit code (issue 22, "line prices that follow bandwidth").

Runs ``python -m pddplan`` in a subprocess (``test_calibrate_cli.run``): only
``pddplan.cli.main`` maps an error to its exit code and one line on stderr.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from test_calibrate_cli import REPO, run  # python -m pddplan from the repository, CPU-limited

import pddplan
from pddplan import units

LINE = "wan-40g-cross-city"


def json_of(*args: str) -> Any:
    """The JSON document of ``pddplan ARGS -f json`` run on the 40G cross-city line."""
    cli = run(*args[:1], "--set", f"link={LINE}", *args[1:], "-f", "json")
    assert cli.returncode == 0, cli.stderr
    return json.loads(cli.stdout)


def test_solve_prices_the_overridden_bandwidth_as_the_api_does() -> None:
    got = json_of("solve", "--set", "link.bandwidth_gbit_per_s=25", "--no-verdict-check")
    api = pddplan.solve(
        overrides={"link": LINE, "link.bandwidth_gbit_per_s": 25}, verdict_check=False
    ).to_json()
    line = got["plan"]["line_cost_usd_per_hour"]
    # 25 Gbit/s pays the 25G tier (10,000 $/month), not the 40G line's 13,000 (17.81 $/h)
    assert line == pytest.approx(10_000 / units.HOURS_PER_MONTH)
    assert line == pytest.approx(api["plan"]["line_cost_usd_per_hour"])
    assert got["plan"]["cost_usd_per_hour"] == pytest.approx(api["plan"]["cost_usd_per_hour"])
    table = run(
        "solve", "--set", f"link={LINE}", "--set", "link.bandwidth_gbit_per_s=25",
        "--no-verdict-check", "-t", "summary",
    )  # fmt: skip
    assert table.returncode == 0, table.stderr
    flat = " ".join(table.stdout.split())
    assert f"line {LINE} at 25 Gbit/s (price from its tiers: 13.7 $/h)" in flat


def test_a_sweep_over_bandwidth_prices_each_point() -> None:
    rows = json_of("sweep", "--set", "link.bandwidth_gbit_per_s=25,100", "--no-baselines")["points"]
    for row in rows:
        bw = row["link.bandwidth_gbit_per_s"]
        one = pddplan.solve(
            overrides={"link": LINE, "link.bandwidth_gbit_per_s": bw},
            baselines=False,
            verdict_check=False,
        )
        plan = one.to_json()["plan"]
        assert row["cost_usd_per_hour"] == pytest.approx(plan["cost_usd_per_hour"])
        tier = {25: 10_000, 100: 20_000}[int(bw)]
        assert plan["line_cost_usd_per_hour"] == pytest.approx(tier / units.HOURS_PER_MONTH)


@pytest.mark.parametrize(
    ("tier", "what"),
    [
        ("usd_per_month: -6000}", "price.tiers[0].usd_per_month: Input should be greater"),
        ("usd_per_month: 60000}", "price.tiers: a faster tier must not cost less"),
    ],
)
def test_a_bad_price_tier_is_one_line_naming_file_and_key(tmp_path: Path, tier: str, what: str):
    text = (REPO / "profiles" / "links" / f"{LINE}.yaml").read_text()
    bad = text.replace("usd_per_month: 6000}", tier).replace(f"name: {LINE}", "name: bad-line")
    assert bad != text
    (tmp_path / "links").mkdir()
    (tmp_path / "links" / "bad-line.yaml").write_text(bad)
    scen = tmp_path / "s.yaml"
    scen.write_text(
        (REPO / "profiles" / "scenarios" / "default.yaml")
        .read_text()
        .replace("link: wan-100g-cross-city", "link: bad-line")
    )
    r = run("--profiles", str(tmp_path), "solve", str(scen))
    assert r.returncode == 1, r.stderr
    (line,) = r.stderr.strip().splitlines()
    assert "bad-line.yaml" in line and what in line


def test_a_bandwidth_above_the_tiers_is_refused_before_solving() -> None:
    r = run("solve", "--set", f"link={LINE}", "--set", "link.bandwidth_gbit_per_s=400")
    assert r.returncode != 0
    (line,) = r.stderr.strip().splitlines()
    assert "link.bandwidth_gbit_per_s=400" in line and "largest price tier (100 Gbit/s)" in line
