"""What-if: sweep paths and values, break-even by bisection, chip ranking."""

from __future__ import annotations

from pathlib import Path

import pytest

from pddplan.errors import InfeasibleError, UsageError
from pddplan.io.loader import Registry, load_scenario
from pddplan.whatif import (
    Axis,
    breakeven,
    check_path,
    parse_set,
    parse_values,
    patch_for,
    rank_chips,
    ratio_jump,
    run_sweep,
    solve_point,
    validate_axes,
)


def test_parse_values_list_range_and_words() -> None:
    assert parse_values("1,2.5,x") == [1, 2.5, "x"]
    assert parse_values("10:100:30") == [10, 40, 70, 100]
    assert parse_values("0.1:0.3:0.1") == [0.1, 0.2, 0.3]
    with pytest.raises(UsageError):
        parse_values("5:1:1")
    with pytest.raises(UsageError):
        parse_set("no-equals-sign")


def test_patch_targets_the_named_profiles() -> None:
    rs = load_scenario(None, Registry.default())
    assert patch_for("link.bandwidth_gbit_per_s", 25, rs) == {
        "overrides": {"links": {rs.scenario.link: {"bandwidth_gbit_per_s": 25}}}
    }
    assert patch_for("chips.gpu-b.price_usd_per_hour", 3, rs) == {
        "overrides": {"chips": {"gpu-b": {"price": {"rental_usd_per_hour": 3}}}}
    }
    assert patch_for("sla.ttft_p99_s", 9, rs) == {"sla": {"ttft_p99_s": 9}}
    loaded = load_scenario(
        None, Registry.default(), patch_for("chips.gpu-b.price_usd_per_hour", 3.3, rs)
    )
    assert loaded.chips["gpu-b"].price.rental_usd_per_hour == 3.3


def test_unknown_path_gets_did_you_mean() -> None:
    rs = load_scenario(None, Registry.default())
    with pytest.raises(UsageError, match="did you mean 'link.bandwidth_gbit_per_s'"):
        check_path("link.bandwidth_gbitps", rs)


def test_bad_value_fails_before_any_point_is_solved() -> None:
    with pytest.raises(UsageError, match="greater than or equal to 0.001"):
        validate_axes(None, Registry.default(), [Axis("link.bandwidth_gbit_per_s", [100, -1])])


def test_sweep_rows_in_grid_order_with_infeasible_rows() -> None:
    axes = [Axis("link.bandwidth_gbit_per_s", [10, 100]), Axis("rate_rps", [1, 2])]
    rows = run_sweep(None, [], axes)
    assert [(r["link.bandwidth_gbit_per_s"], r["rate_rps"]) for r in rows] == [
        (10, 1),
        (10, 2),
        (100, 1),
        (100, 2),
    ]
    by = {(r["link.bandwidth_gbit_per_s"], r["rate_rps"]): r for r in rows}
    assert by[(10, 2)]["feasible"] is False and by[(10, 2)]["binding"] == "line utilization"
    assert by[(100, 2)]["feasible"] is True and by[(100, 2)]["cost_usd_per_hour"] > 0
    # cost never falls as the rate grows on the same line
    assert by[(100, 2)]["cost_usd_per_hour"] >= by[(100, 1)]["cost_usd_per_hour"]


def test_parallel_sweep_matches_serial() -> None:
    axes = [Axis("chips.gpu-b.price_usd_per_hour", [2.0, 2.4, 2.8, 3.2, 3.6, 4.0, 4.4, 4.8, 5.2])]
    serial = run_sweep(None, [], axes, jobs=1)
    parallel = run_sweep(None, [], axes, jobs=2)
    assert serial == parallel


def test_breakeven_crossing_is_a_root_of_the_ratio() -> None:
    reg = Registry.default()
    be = breakeven(
        "examples/pdd-paper.yaml", reg, "chips.gpu-b.price_usd_per_hour", "same-dc", 2.0, 8.0
    )
    assert be.value is not None and 2.0 < be.value < 8.0
    assert be.ratio_lo > 1.0 > be.ratio_hi
    lo = solve_point(
        "examples/pdd-paper.yaml",
        [],
        [Axis("chips.gpu-b.price_usd_per_hour", [be.value * 0.99])],
        [be.value * 0.99],
    )
    hi = solve_point(
        "examples/pdd-paper.yaml",
        [],
        [Axis("chips.gpu-b.price_usd_per_hour", [be.value * 1.01])],
        [be.value * 1.01],
    )
    assert lo["bcr_ratio_vs_same-dc"] >= 1.0 >= hi["bcr_ratio_vs_same-dc"]
    assert be.jump is None  # the ratio moves with the price continuously: it equals 1 there


def test_breakeven_over_the_rate_says_the_ratio_jumps_over_1_at_a_fleet_step() -> None:
    # the default scenario's ratio to same-dc is 0.927 at 0.99 req/s and 1.178 at 0.9944 req/s
    # (MD goes from 2 to 3 instances): it crosses 1 there and equals 1 nowhere
    from pddplan import api

    res = api.breakeven(param="rate_rps")
    assert res.value is not None and res.jump is not None
    below, above = res.jump
    assert below < 1.0 < above and above - below > 0.1
    note = res.report().notes[0]
    assert f"crosses 1 at rate_rps = {res.value:.6g} (jumps from {below:.4g} to {above:.4g}" in note
    assert "equals" not in note
    assert res.to_json()["breakeven"]["bcr_ratio_jump"] == {"below": below, "above": above}


def test_ratio_jump_tells_a_step_from_a_continuous_change() -> None:
    # bisection's last bracket [1.0, 1.01] and the segment of solved values beside it
    smooth = {0.0: 0.0, 0.98: 0.98, 1.0: 1.0, 1.01: 1.01, 2.0: 2.0}
    assert ratio_jump(smooth, 1.0, 1.01) is None
    step = {0.0: 0.8, 0.98: 0.9, 1.0: 0.9, 1.01: 1.2, 2.0: 1.3}
    assert ratio_jump(step, 1.0, 1.01) == (0.9, 1.2)
    assert ratio_jump(step, 1.0, 1.0) is None  # the ratio is 1 at a solved value


def test_breakeven_reports_no_crossing() -> None:
    be = breakeven(
        "examples/pdd-paper.yaml",
        Registry.default(),
        "chips.gpu-b.price_usd_per_hour",
        "same-dc",
        0.5,
        1.0,
    )
    assert be.value is None and be.ratio_lo > 1 and be.ratio_hi > 1


def test_rank_chips_per_role() -> None:
    reg = Registry.default()
    rs = load_scenario(None, reg)
    rows = rank_chips(rs, reg, "h100-sxm")
    by = {r["chip"]: r for r in rows}
    assert by["h100-sxm"]["prefill_advantage"] == pytest.approx(1.0)
    assert by["h100-sxm"]["decode_advantage"] == pytest.approx(1.0)
    # the decode-strong illustrative chip is better at decode than at prefill; the compute-strong
    # one is at least as good at prefill as the flagship (it is priced lower at equal compute)
    assert by["gpu-b"]["best_role"] == "decode"
    assert by["gpu-a"]["prefill_advantage"] > 1.0
    assert by["tpu-v5e"]["chips_per_instance"] is None  # 16 GB chips cannot hold 235 GB of weights


def test_rank_chips_prices_every_chip_with_the_scenarios_overrides(tmp_path) -> None:
    # a chip a role uses (gpu-b) and the reference no role uses (h100-sxm), both repriced by the
    # scenario's overrides.chips: chips rank prices them as solve does, not at the catalog's
    reg = Registry.default()
    text = reg.scenario_path(None).read_text(encoding="utf-8")
    text += (
        "overrides:\n  chips:\n"
        "    gpu-b: {price: {rental_usd_per_hour: 0.5}}\n"
        "    h100-sxm: {price: {rental_usd_per_hour: 100.0}}\n"
    )
    f = tmp_path / "s.yaml"
    f.write_text(text, encoding="utf-8")
    rs = load_scenario(str(f), reg)
    by = {r["chip"]: r for r in rank_chips(rs, reg, "h100-sxm")}
    assert by["gpu-b"]["price_usd_per_hour"] == 0.5
    assert by["h100-sxm"]["price_usd_per_hour"] == 100.0
    plain = {r["chip"]: r for r in rank_chips(load_scenario(None, reg), reg, "h100-sxm")}
    # the cost per token scales with the price: 0.5 / 2.5 of the catalog's
    assert by["gpu-b"]["decode_usd_per_mtok_output"] == pytest.approx(
        plain["gpu-b"]["decode_usd_per_mtok_output"] * 0.5 / plain["gpu-b"]["price_usd_per_hour"]
    )


def test_rank_chips_says_why_advantages_are_blank_when_the_reference_holds_no_instance() -> None:
    from pddplan import api

    res = api.rank_chips(reference="tpu-v5e")  # 16 GB chips cannot hold 235 GB of weights
    assert all(r["prefill_advantage"] is None and r["best_role"] is None for r in res.chips)
    note = res.report().notes[0]
    assert "reference tpu-v5e holds no instance of qwen3-235b-a22b" in note
    assert "advantage = " not in note
    assert "advantage = h100-sxm's cost" in api.rank_chips().report().notes[0]


def test_sweep_without_baselines_has_no_ratio_columns() -> None:
    rows = run_sweep(None, [], [Axis("rate_rps", [1, 2])], baselines=False)
    assert all(r["feasible"] for r in rows)
    assert not any(k.startswith("bcr_ratio_vs_") for r in rows for k in r)


def test_sweep_cli_plot_one_and_two_parameters(tmp_path) -> None:
    import subprocess
    import sys

    for sets, name in (
        (["--set", "rate_rps=1,2,3"], "one.png"),
        (["--set", "rate_rps=1,2", "--set", "chips.gpu-b.price_usd_per_hour=2.4,3.0"], "two.png"),
    ):
        out = tmp_path / name
        r = subprocess.run(
            [sys.executable, "-m", "pddplan", "sweep", *sets, "--plot", str(out), "-f", "csv"],
            capture_output=True,
            text=True,
            check=False,
        )
        assert r.returncode == 0, r.stderr
        assert out.stat().st_size > 5_000
        assert r.stdout.splitlines()[0].startswith("rate_rps")


def test_breakeven_names_an_end_where_the_baseline_cannot_be_sized() -> None:
    """At 25 Gbit/s the default scenario's plan without relay cannot be sized at all (the line
    would run above its cap): the error says so and names the value, not that the scenario has
    no such baseline."""
    with pytest.raises(InfeasibleError) as err:
        breakeven(None, Registry.default(), "link.bandwidth_gbit_per_s", "no-relay", 25.0, 100.0)
    msg = str(err.value)
    assert "link.bandwidth_gbit_per_s = 25 the no-relay baseline cannot be sized" in msg
    assert "utilization cap" in msg and "has no" not in msg
    # a scenario without a 'baseline:' chip has no same-dc baseline at all
    with pytest.raises(UsageError, match="has no same-dc baseline"):
        breakeven("examples/cache-tiers.yaml", Registry.default(), "rate_rps", "same-dc", 1, 2)


def test_sweep_csv_columns_do_not_depend_on_which_points_fit() -> None:
    """A sweep's CSV has one set of columns in one order whether its first point fits, a later
    one, or none (a script reading ``cost_usd_per_hour`` by name works on each)."""
    from pddplan import api
    from pddplan.report import render_csv
    from pddplan.whatif import PLAN_COLUMNS

    def header(rates: list[float]) -> list[str]:
        res = api.sweep(None, {"rate_rps": rates})
        return render_csv(res.report()).splitlines()[0].split(",")

    fits_first, fits_last, fits_none = header([1, 100]), header([100, 1]), header([50, 100])
    plan = ["rate_rps", *(c for c in PLAN_COLUMNS if c != "rate_rps")]  # the axis is one
    assert fits_first == fits_last
    assert fits_first[: len(plan)] == plan
    assert fits_first[-2:] == ["feasible", "binding"]  # after the BCR ratios
    # no point fits: the same plan columns, empty (no baseline was sized: no ratio columns)
    assert fits_none == [*plan, "feasible", "binding"]
    rows = api.sweep(None, {"rate_rps": [50]}).points
    assert rows[0]["cost_usd_per_hour"] is None and rows[0]["rate_rps"] == 50


def test_a_sweep_where_no_point_fits_shows_its_axis_and_what_binds_in_the_table() -> None:
    """The table and markdown formats leave out the plan columns no point has a value in (one
    line says so, and that CSV and JSON keep them), so an all-infeasible sweep shows what binds
    beside each point, not three continued tables of dashes; a point with a plan keeps them."""
    import io

    from pddplan import api
    from pddplan.report import header, render_csv, render_md, render_table

    def table(rates: list[float]) -> tuple[str, str, str]:
        rep = api.sweep(None, {"rate_rps": rates}).report()
        buf = io.StringIO()
        render_table(rep, buf, False)
        return buf.getvalue(), render_md(rep), render_csv(rep)

    text, md, csv = table([50, 60])
    assert "(continued)" not in text and header("cost_usd_per_hour") not in text
    assert "line utilization" in text and "left out, empty in every row: every plan column" in text
    assert "| rate [req/s] | feasible | binding |" in md
    assert "-f csv and -f json keep them" in md
    assert "cost_usd_per_hour" in csv.splitlines()[0]  # one schema in CSV
    text, md, _ = table([1, 60])  # one point fits: its plan is shown, nothing left out
    assert header("cost_usd_per_hour") in md and "left out" not in md
    assert "left out" not in text


def test_a_column_left_out_is_named_where_others_of_its_group_show() -> None:
    from pddplan.report import header, left_out
    from pddplan.results import Section

    sec = Section(
        "points",
        [{"a": 1, "b": None, "c": None}, {"a": None, "b": None, "c": 2}],
        omit_empty=("a", "b", "c"),
        omit_empty_name="every plan column",
    )
    assert sec.shown_columns() == (["a", "c"], ["b"])
    assert left_out(sec, ["b"]) == (
        f"(left out, empty in every row: {header('b')}; -f csv and -f json keep them)"
    )
    assert "every plan column" in left_out(sec, ["a", "b", "c"])
    assert Section("t", [{"a": None}]).shown_columns() == (["a"], [])  # only omit_empty's go


def test_rank_chips_prices_bought_chips_as_the_solve_does(tmp_path) -> None:
    # inventory.additional: buy: the solve prices a chip beyond the owned ones at its amortized
    # capex plus opex (Pricing.extra_usd_per_chip_hour); chips rank must rank at that price, not
    # at the rental, and leave a chip without capex unpriced rather than fall back to its rental
    from pddplan import api
    from pddplan.solver.problem import build_pricing

    reg = Registry.default()
    text = reg.scenario_path(None).read_text(encoding="utf-8")
    text += (
        "inventory: {additional: buy, opex_usd_per_chip_hour: 0.3, amortization_years: 5}\n"
        "overrides:\n  chips:\n"
        "    gpu-a: {price: {capex_usd: 20000}}\n"
        "    gpu-b: {price: {capex_usd: 30000}}\n"
    )
    f = tmp_path / "buy.yaml"
    f.write_text(text, encoding="utf-8")
    rs = load_scenario(str(f), reg)
    pricing = build_pricing(rs)
    assert pricing is not None
    by = {r["chip"]: r for r in rank_chips(rs, reg, "gpu-a")}
    for name in ("gpu-a", "gpu-b"):
        assert by[name]["price_usd_per_hour"] == pricing.extra_usd_per_chip_hour[name]
    assert by["gpu-a"]["price_usd_per_hour"] == pytest.approx(20000 / (5 * 8760) + 0.3)
    # the cost per token is the rented one's scaled by the price (the same sizes are chosen)
    plain = {r["chip"]: r for r in rank_chips(load_scenario(None, reg), reg, "gpu-a")}
    for name in ("gpu-a", "gpu-b"):
        scale = by[name]["price_usd_per_hour"] / plain[name]["price_usd_per_hour"]
        assert by[name]["decode_usd_per_mtok_output"] == pytest.approx(
            plain[name]["decode_usd_per_mtok_output"] * scale, rel=1e-12
        )
        assert by[name]["decode_chips_per_instance"] == plain[name]["decode_chips_per_instance"]
    # a chip whose profile has no capex (h200-sxm) is unpriced, its sizes still shown
    h200 = by["h200-sxm"]
    assert h200["price_usd_per_hour"] is None
    assert h200["prefill_usd_per_mtok_input"] is None and h200["prefill_advantage"] is None
    assert h200["chips_per_instance"] == plain["h200-sxm"]["chips_per_instance"]
    assert "no price.capex_usd" in h200["note"]
    res = api.rank_chips(str(f), reference="h200-sxm")
    notes = res.report().notes
    assert "the reference h200-sxm is unpriced" in notes[0]
    assert "capex amortized over 5 years plus 0.3 USD/(chip h)" in notes[1]
    assert "h200-sxm" in notes[1].split("unpriced, with no price.capex_usd:")[1]


def test_a_chip_that_misses_tpot_has_no_decode_advantage() -> None:
    # chips no decode size of which meets TPOT read a decode advantage of 0 beside a blank
    # decode cost; ties kept the profiles' directory order
    import pddplan

    rows = pddplan.rank_chips(overrides={"sla.tpot_ms": 12}).to_json()["chips"]
    missing = [
        r
        for r in rows
        if r.get("decode_usd_per_mtok_output") is None
        and r.get("prefill_usd_per_mtok_input") is not None
    ]
    assert missing and all(r["decode_advantage"] is None for r in missing)
    assert all(r["best_role"] == "prefill" for r in missing)


def test_chips_of_one_advantage_are_ranked_by_name(tmp_path: Path) -> None:
    # a copy of gpu-a named zz-a in a profile directory ranked before gpu-a (directory order)
    import pddplan

    root = Path(__file__).resolve().parents[3]
    (tmp_path / "chips").mkdir()
    text = (root / "profiles" / "chips" / "gpu-a.yaml").read_text(encoding="utf-8")
    (tmp_path / "chips" / "zz-a.yaml").write_text(
        text.replace("name: gpu-a", "name: zz-a"), encoding="utf-8"
    )
    rows = pddplan.rank_chips(profiles=[tmp_path]).to_json()["chips"]
    names = [r["chip"] for r in rows]
    assert names.index("gpu-a") < names.index("zz-a")
