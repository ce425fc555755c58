"""The cache study: the chosen capacity is the best of an exhaustive grid, the bathtub's
capacity advice moves the traffic out of its valley, bad cache input fails in one line, and a
scenario without ``cache:`` is priced and timed as before."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from pddplan import tiers, timing
from pddplan.bathtub import analyze
from pddplan.deployment.caches import CacheNumbers, CacheTierNumbers
from pddplan.errors import ProfileError
from pddplan.io.loader import Registry, load_scenario
from pddplan.models import cachetier
from pddplan.solver import solve_scenario

REPO = Path(__file__).resolve().parents[3]
EXAMPLE = REPO / "examples" / "cache-tiers.yaml"


def _scenario(tmp_path: Path, doc: dict, name: str = "s.yaml") -> Path:
    p = tmp_path / name
    p.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return p


def _example() -> dict:
    return yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))


# ------------------------------------------------------------------------------ models


def test_overlap_is_the_two_stage_pipeline() -> None:
    # hand-computed: c = 2 s, l = 1 s over 4 layers: 1/4 + 2 = 2.25 s; no load: c
    assert cachetier.overlapped_prefill_s(2.0, 1.0, 4) == pytest.approx(2.25)
    assert cachetier.overlapped_prefill_s(2.0, 0.0, 4) == pytest.approx(2.0)
    got = cachetier.overlapped_prefill_s(np.array([1.0, 3.0]), np.array([2.0, 1.0]), 2)
    np.testing.assert_allclose(got, [0.5 + 2.0, 0.5 + 3.0])


def test_tier_load_reads_each_share_at_its_bandwidth() -> None:
    # 10 GB, 60% at 50 GB/s and 40% at 10 GB/s: 0.12 + 0.4 = 0.52 s
    got = cachetier.tier_load_s(np.array([10e9, 0.0]), (0.6, 0.4), (50e9, 10e9))
    np.testing.assert_allclose(got, [0.52, 0.0])


def test_prefill_without_cache_is_the_instance_prefill() -> None:
    rs = load_scenario(None, Registry.default())
    from pddplan.solver import PDD, build_problem

    pb = build_problem(rs, PDD)
    assert pb.cache is None
    inst = pb.options["P"][0]
    c = pb.classes
    base = inst.prefill_s(c.uncached_tokens, c.cached_tokens, pb.chunk_size_tokens)
    got = timing.prefill_s(inst, c.uncached_tokens, c.cached_tokens, pb.chunk_size_tokens)
    np.testing.assert_array_equal(got, base)
    slow = CacheNumbers(
        (CacheTierNumbers("t", 1e12, 1e9, 0.0),), pb.model.kv_bytes_per_token, pb.model.layers
    )
    loaded = timing.prefill_s(inst, c.uncached_tokens, c.cached_tokens, pb.chunk_size_tokens, slow)
    assert np.all(loaded >= base - 1e-15)
    assert np.any(loaded > base)


# ------------------------------------------------------------------------------ the study


def test_chosen_capacity_is_the_best_of_an_exhaustive_grid(tmp_path: Path) -> None:
    doc = _example()
    grid = [0.0, 16.0, 64.0, 128.0, 256.0, 512.0, 1024.0, 2048.0]
    doc["cache"]["tiers"] = [{"profile": "host-dram", "capacity_gb_per_node": grid}]
    rs = load_scenario(str(_scenario(tmp_path, doc)), Registry.default())
    st = tiers.study(rs)
    assert st.best is not None
    # every capacity solved on its own, outside the study
    costs = []
    for gb in grid:
        tok = tiers.capacity_tokens(rs, (gb,))
        (hits,) = tiers.hit_rates_by_capacity(rs, [tok])
        try:
            plan = solve_scenario(tiers.at_capacity(rs, (gb,), hits), baselines=False).plan
            costs.append(plan.cost_usd_per_hour if plan.meets_sla else np.inf)
        except Exception:  # no plan at this capacity
            costs.append(np.inf)
    best = int(np.argmin(costs))
    assert st.best.capacity_gb_per_node == (grid[best],)
    assert st.best.cost_usd_per_hour == pytest.approx(costs[best], rel=1e-12)
    plan = st.best.plan
    assert plan is not None
    assert plan.cache_cost_usd_per_hour > 0
    assert plan.cost_usd_per_hour == pytest.approx(
        sum(plan.role_cost_usd_per_hour.values())
        + plan.link_cost_usd_per_hour
        + plan.cache_cost_usd_per_hour
    )
    # more capacity never lowers the trace's hit rate (LRU's stack property)
    means = [o.mean_hit_rate for o in st.options]
    assert all(b >= a - 1e-12 for a, b in zip(means, means[1:], strict=False))


def test_max_bcr_mode_picks_the_highest_bcr() -> None:
    # four of the example's ten options: each max-BCR option walks the whole staircase
    few = {
        "cache.tiers.0.capacity_gb_per_node": [0, 256],
        "cache.tiers.1.capacity_gb_per_node": [0, 4096],
    }
    import pddplan

    rs = pddplan.load_scenario(str(EXAMPLE), overrides=few).resolved
    st = tiers.study(rs, max_bcr=True)
    assert st.mode == "max-bcr" and st.best is not None
    assert st.best.bcr_requests_per_usd == max(o.bcr_requests_per_usd for o in st.options)


def test_cli_json_matches_the_api() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "pddplan", "cache", str(EXAMPLE), "--format", "json"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    import pddplan

    res = pddplan.cache(str(EXAMPLE))
    assert res.to_json() == doc
    assert res.chosen is not None
    assert doc["chosen"]["cost_usd_per_hour"] == res.chosen["cost_usd_per_hour"]
    assert len(doc["options"]) == 10
    assert {
        "mean_hit_rate",
        "ttft_p50_s",
        "chips",
        "bcr_requests_per_usd",
        "cache_usd_per_hour",
    } <= set(doc["options"][0])


# ------------------------------------------------------------------------------ bathtub


def test_bathtub_capacity_advice_moves_traffic_out_of_the_valley(tmp_path: Path) -> None:
    doc = yaml.safe_load((REPO / "examples" / "long-context.yaml").read_text(encoding="utf-8"))
    doc["cache"] = {
        # options the plan can be sized on (bathtub plans the cache as solve does: at 0 GB
        # alone no plan fits this rate over the line)
        "tiers": [{"profile": "host-dram", "capacity_gb_per_node": [0.0, 64.0, 256.0]}],
        "hit_rate": {
            "sessions": {"requests": 3000, "first_turn_blocks_mean": 400, "max_blocks": 600},
            "warmup_s": 20,
        },
    }
    rs = load_scenario(str(_scenario(tmp_path, doc)), Registry.default())
    caps = [1e5, 1e6, 4e6, 1.6e7, 6.4e7]
    curve = tiers.capacity_curve(rs, caps)
    res = analyze(rs, step=0.02, reprovision=False, capacity_curve=curve)
    assert res.valleys and res.capacity_needed_tokens is not None
    line = next(a for a in res.advice if a.startswith("cache capacity"))
    assert "GB per P node" in line and "$/h" in line
    valley = max(res.valleys, key=lambda v: v.depth_fraction)

    def in_valley_share(rs_x) -> tuple[float, float]:
        plan = solve_scenario(rs_x, baselines=False).plan
        c = plan.problem.classes
        w = c.weight / c.weight.sum()
        inside = (c.hit_rate > valley.start_x) & (c.hit_rate < valley.end_x)
        return float(np.sum(w * inside)), float(np.sum(w * c.hit_rate))

    planned = tiers.solve(rs, baselines=False).scenario  # at the capacity chosen, as bathtub's
    assert planned is not None and planned.cache_capacity_gb == (256.0,)
    before, _ = in_valley_share(planned)
    need = res.capacity_needed_tokens
    (hits,) = tiers.hit_rates_by_capacity(rs, [need])
    tokens_per_gb = tiers.capacity_tokens(rs, (1.0,))
    after, mean = in_valley_share(tiers.at_capacity(rs, (need / tokens_per_gb,), hits))
    assert mean >= valley.end_x
    assert after < before


# ------------------------------------------------------------------------------ bad input


@pytest.mark.parametrize(
    ("patch", "needle"),
    [
        ({"read_gb_per_s": 0}, "read_gb_per_s"),
        ({"price": {"usd_per_gb_hour": -1.0, "source": "a price"}}, "usd_per_gb_hour"),
        ({"max_capacity_gb_per_node": 0}, "max_capacity_gb_per_node"),
    ],
)
def test_bad_cache_profile_names_file_and_key(tmp_path: Path, patch: dict, needle: str) -> None:
    base = yaml.safe_load((REPO / "profiles" / "caches" / "host-dram.yaml").read_text())
    bad = copy.deepcopy(base)
    bad.update(patch)
    p = _scenario(tmp_path, bad, "bad.yaml")
    proc = subprocess.run(
        [sys.executable, "-m", "pddplan", "profiles", "validate", str(p)],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert needle in proc.stdout + proc.stderr and "bad.yaml" in proc.stdout + proc.stderr


def test_capacity_beyond_the_node_names_the_key(tmp_path: Path) -> None:
    doc = _example()
    doc["cache"]["tiers"][0]["capacity_gb_per_node"] = [0, 4096]
    p = _scenario(tmp_path, doc)
    with pytest.raises(ProfileError) as exc:
        load_scenario(str(p), Registry.default())
    msg = str(exc.value)
    assert "cache.tiers[0].capacity_gb_per_node[1]" in msg and "0 to 2048" in msg


def test_both_hit_rate_sources_is_an_error(tmp_path: Path) -> None:
    doc = _example()
    doc["cache"]["hit_rate"]["trace"] = "../tests/data/mooncake_excerpt.jsonl"
    with pytest.raises(ProfileError, match="exactly one"):
        load_scenario(str(_scenario(tmp_path, doc)), Registry.default())


def test_trace_source_replays_the_shipped_excerpt(tmp_path: Path) -> None:
    doc = _example()
    doc["cache"]["hit_rate"] = {"trace": str(REPO / "tests" / "data" / "mooncake_excerpt.jsonl")}
    rs = load_scenario(str(_scenario(tmp_path, doc)), Registry.default())
    from pddplan.trace.analysis import analyze as analyze_trace
    from pddplan.trace.replay import replay_trace

    tok = 64_000.0
    (got,) = tiers.hit_rates_by_capacity(rs, [tok])
    ref = analyze_trace(replay_trace(REPO / "tests" / "data" / "mooncake_excerpt.jsonl", [tok]))
    np.testing.assert_array_equal(got, ref.hit_rate(0))


def test_a_falling_capacity_curve_names_file_and_key(tmp_path: Path) -> None:
    from pddplan.errors import OptionError
    from pddplan.io.capacity_curve import capacity_curve

    p = tmp_path / "curve.csv"
    p.write_text("capacity_tokens,mean_hit_rate\n1000,0.5\n2000,0.4\n", encoding="utf-8")
    with pytest.raises(ProfileError) as exc:
        capacity_curve(p)
    assert "curve.csv" in str(exc.value) and "mean_hit_rate" in str(exc.value)
    assert "never falls" in str(exc.value)
    with pytest.raises(OptionError, match="allowed 0 to 1"):
        capacity_curve({"capacity_tokens": [1.0, 2.0], "mean_hit_rate": [0.5, 1.5]})


def test_solve_of_a_cache_scenario_sizes_the_tiers() -> None:
    """``solve`` on a scenario with ``cache:`` tiers plans at the capacity it chooses (the
    ``cache`` block) and prices it; without ``cache:`` there is no block."""
    import pddplan

    res = pddplan.solve(str(REPO / "examples" / "cache-tiers.yaml"), verdict_check=False)
    assert res.cache is not None and res.to_json()["cache"] == res.cache
    assert res.plan.cache_cost_usd_per_hour == res.cache["cache_usd_per_hour"] > 0
    plain = pddplan.solve("default", verdict_check=False)
    assert plain.cache is None and "cache" not in plain.to_json()


def test_a_warmup_longer_than_the_trace_names_file_and_key(tmp_path: Path) -> None:
    """The hit-rate source's warm-up is a scenario key: an error names the file and
    cache.hit_rate.warmup_s, not an option (fuzz)."""
    from pddplan.errors import ProfileError

    doc = _example()
    doc["cache"]["hit_rate"]["sessions"]["requests"] = 200
    rs = load_scenario(str(_scenario(tmp_path, doc)), Registry.default())
    with pytest.raises(ProfileError, match="cache.hit_rate.warmup_s") as exc:
        tiers.hit_rates_by_capacity(rs, [tiers.capacity_tokens(rs, (0.0, 4096.0))])
    assert "leaves no requests" in str(exc.value)


# ------------------------------------------------------------- replays kept in the process


def _counted(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """A fresh memo, and a count of the replays :func:`tiers.hit_rates_by_capacity` runs."""
    from collections import OrderedDict

    monkeypatch.setattr(tiers, "_HITS", OrderedDict())
    calls: list[int] = []
    replay = tiers._hit_rates_by_capacity

    def counted(rs, caps):  # type: ignore[no-untyped-def]
        calls.append(1)
        return replay(rs, caps)

    monkeypatch.setattr(tiers, "_hit_rates_by_capacity", counted)
    return calls


def test_the_same_trace_and_capacities_replay_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A sweep's points and a report's sections ask for the same replay: it runs once, and
    the arrays handed out cannot be written (every caller shares them)."""
    calls = _counted(monkeypatch)
    doc = _example()
    doc["cache"]["hit_rate"]["sessions"]["requests"] = 300
    doc["cache"]["hit_rate"]["warmup_s"] = 0
    rs = load_scenario(str(_scenario(tmp_path, doc)), Registry.default())
    caps = [tiers.capacity_tokens(rs, (0.0, 64.0)), tiers.capacity_tokens(rs, (0.0, 512.0))]
    first = tiers.hit_rates_by_capacity(rs, caps)
    again = tiers.hit_rates_by_capacity(rs, list(caps))
    assert len(calls) == 1
    for a, b in zip(first, again, strict=True):
        np.testing.assert_array_equal(a, b)
        with pytest.raises(ValueError, match="read-only"):
            b[0] = 1.0
    # another capacity, or another session model, is another replay
    tiers.hit_rates_by_capacity(rs, caps[:1])
    doc["cache"]["hit_rate"]["sessions"]["seed"] = 7
    other = load_scenario(str(_scenario(tmp_path, doc, "other.yaml")), Registry.default())
    tiers.hit_rates_by_capacity(other, caps)
    assert len(calls) == 3


def test_a_trace_file_rewritten_in_place_is_replayed_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The memo reads the trace file's bytes, not its name or time: a file rewritten under the
    same name (within the file system's clock tick, with the same size even) is replayed."""
    calls = _counted(monkeypatch)
    lines = (REPO / "tests" / "data" / "mooncake_excerpt.jsonl").read_text().splitlines()
    trace = tmp_path / "t.jsonl"
    trace.write_text("\n".join(lines) + "\n", encoding="utf-8")
    doc = _example()
    doc["cache"]["hit_rate"] = {"trace": "t.jsonl"}
    rs = load_scenario(str(_scenario(tmp_path, doc)), Registry.default())
    (whole,) = tiers.hit_rates_by_capacity(rs, [64_000.0])
    trace.write_text("\n".join(lines[: len(lines) // 2]) + "\n", encoding="utf-8")
    (half,) = tiers.hit_rates_by_capacity(rs, [64_000.0])
    assert len(calls) == 2
    assert len(half) < len(whole)


def test_a_capacity_below_one_block_is_no_hit_and_no_replay(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A capacity that holds no whole block hits nothing, and is not replayed; where no
    capacity holds one, the unbounded cache's replay counts the requests."""
    from pddplan.trace import replay as replay_mod

    _counted(monkeypatch)
    asked: list[list[float]] = []
    real = replay_mod.replay_records

    def spy(records, file, caps, **kw):  # type: ignore[no-untyped-def]
        asked.append(list(caps))
        return real(records, file, caps, **kw)

    monkeypatch.setattr(replay_mod, "replay_records", spy)
    doc = _example()
    doc["cache"]["hit_rate"]["sessions"]["requests"] = 300
    doc["cache"]["hit_rate"]["warmup_s"] = 0
    rs = load_scenario(str(_scenario(tmp_path, doc)), Registry.default())
    b = float(rs.scenario.cache.hit_rate.block_tokens)
    none, some = tiers.hit_rates_by_capacity(rs, [b / 2, 64 * b])
    assert asked == [[64 * b]]
    assert len(none) == len(some) == 300 and not none.any() and some.any()
    (alone,) = tiers.hit_rates_by_capacity(rs, [0.0])
    assert asked[-1] == [float("inf")]
    np.testing.assert_array_equal(alone, none)


def test_paretos_grid_reaches_what_a_sized_cache_serves() -> None:
    # the grid's top was the line's limit at the workload's own hit rates (8.81 req/s on
    # cache-tiers), where a plan at the cache chosen serves up to 9.94 req/s
    import pddplan

    res = pddplan.pareto("cache-tiers", points=2, baselines=False)
    top = res.to_json()["grid"]["rates_rps"][-1]
    assert top > 9.9
    plan = pddplan.solve("cache-tiers", rate_rps=top * 0.999, verdict_check=False).plan
    assert plan.meets_sla


def test_a_p_instance_smaller_than_a_node_cannot_hold_a_nodes_cache() -> None:
    # tp4 on gpu-a's 8-chip nodes billed 4 nodes' cache (2048 GB each) for 2 nodes' chips,
    # beyond what a node of the host-dram profile holds; an instance of two nodes holds one
    # node's cache on one of them, as priced
    import pddplan
    from pddplan.errors import OverrideError, ProfileError

    with pytest.raises((ProfileError, OverrideError), match=r"chips_per_instance.*one node"):
        pddplan.load_scenario("cache-tiers", overrides={"roles.P.chips_per_instance": [4]})
    pddplan.load_scenario("cache-tiers", overrides={"roles.P.chips_per_instance": [16]})


def test_a_capacity_listed_twice_is_one_option() -> None:
    import pddplan
    from pddplan.tiers import capacity_options

    ls = pddplan.load_scenario(
        "cache-tiers", overrides={"cache.tiers.0.capacity_gb_per_node": [64, 64, 0]}
    )
    opts = capacity_options(ls.resolved)
    assert len(opts) == len(set(opts))


def test_the_cache_api_takes_own_and_max_chips_as_solve_does() -> None:
    # the CLI's --own and --max-chips had no API arguments (overrides only)
    import pddplan

    ov = {"inventory.owned_cost": "sunk"}
    a = pddplan.cache("cache-tiers", own={"gpu-a": 16}, overrides=ov)
    b = pddplan.cache("cache-tiers", overrides={**ov, "inventory.owned.gpu-a": 16})
    assert a.to_json() == b.to_json()
