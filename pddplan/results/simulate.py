"""The result of ``simulate``: run settings, fleet, simulated figures, the comparison with the
closed forms, pool loads (for the P-RLD oscillation) and the occupancy time series."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from pddplan.results.base import Report, Result, Row, Section
from pddplan.results.tables import TABLES as _TABLES
from pddplan.sim import policies
from pddplan.sim.figures import SimFigures

if TYPE_CHECKING:
    from pddplan.sim.result import SimResult

_FIGURES = (
    "ttft_p50_s",
    "ttft_p90_s",
    "ttft_p99_s",
    "ttft_mean_s",
    "tpot_mean_s",
    "tpot_p99_s",
    "rld_output_token_share",
    "link_utilization",
    "line_busy_fraction",
    "prefill_utilization",
    "prefill_wait_probability",
    "prefill_mean_wait_s",
    "md_mean_slot_wait_s",
    "md_p99_slot_wait_s",
    "rld_mean_slot_wait_s",
    "rld_p99_slot_wait_s",
    "md_stall_mean_s",
    "md_stall_max_s",
    "unfinished_requests",
)

_SPARK = " .:-=+*#%@"
#: Offered load above which a pool is reported as saturated [-].
SATURATED_LOAD = 0.9


def sparkline(values: np.ndarray, width: int = 60) -> str:
    """A one-line text chart of ``values`` (resampled to ``width`` characters)."""
    v = np.asarray(values, dtype=float)
    if len(v) == 0:
        return ""
    idx = np.linspace(0, len(v) - 1, min(width, len(v))).round().astype(int)
    v = v[idx]
    hi = float(np.max(v))
    if hi <= 0:
        return _SPARK[0] * len(v)
    levels = np.minimum((v / hi * (len(_SPARK) - 1)).round().astype(int), len(_SPARK) - 1)
    return "".join(_SPARK[i] for i in levels)


def pipeline_rows(res: SimResult | SimFigures) -> list[Row]:
    f = res if isinstance(res, SimFigures) else SimFigures.from_engine(res.figures)
    return [
        {
            "pipeline": name,
            "share": pf.share,
            "ttft_p50_s": pf.ttft_s[50],
            "ttft_p90_s": pf.ttft_s[90],
            "ttft_p99_s": pf.ttft_s[99],
        }
        for name, pf in f.pipelines.items()
    ]


def pool_rows(res: SimResult) -> list[Row]:
    f = res.figures
    plan = res.plan
    md = plan.roles["MD"]
    rows: list[Row] = [
        {
            "pool": "MD",
            "instances": md.instances,
            "slots": md.instances * md.batch_per_instance,
            "demand_tokens_per_s": f["md_demand_tokens_per_s"],
            "tokens_per_s_per_instance": f["md_tokens_per_s_per_instance"],
            "busy_fraction": f["md_busy_fraction"],
            "occupancy_final": f["md_occupancy_final"],
            "occupancy_slope_per_s": f["md_occupancy_slope_per_s"],
            "offered_load": None,
        }
    ]
    rr = plan.rld
    if rr is not None:
        rows.append(
            {
                "pool": "RLD",
                "instances": rr.instances,
                "slots": rr.instances * rr.batch_per_instance,
                "demand_tokens_per_s": f["rld_demand_tokens_per_s"],
                "tokens_per_s_per_instance": f["rld_tokens_per_s_per_instance"],
                "busy_fraction": f["rld_busy_fraction"],
                "occupancy_final": f["rld_occupancy_final"],
                "occupancy_slope_per_s": f["rld_occupancy_slope_per_s"],
                "offered_load": f["rld_offered_load"],
            }
        )
    return rows


def stability_verdict(res: SimResult) -> str:
    """``stable``, or which pool is overloaded (offered load >= 1 or a growing backlog) or
    saturated (offered load >= :data:`SATURATED_LOAD`: stable in the long run, long queues)."""
    f = res.figures
    out = []
    if res.plan.rld is not None:
        load = f.get("rld_offered_load", 0.0)
        if load >= 1.0 or _grows(f, "rld", res.plan.rld.instances):
            out.append("RLD overloaded")
        elif load >= SATURATED_LOAD:
            out.append("RLD saturated")
    if _grows(f, "md", res.plan.roles["MD"].instances):
        out.append("MD overloaded")
    return ", ".join(out) if out else "stable"


def _grows(f: dict[str, Any], pool: str, instances: int) -> bool:
    """Occupancy growing by more than one request per instance per 100 s of arrivals."""
    return f.get(f"{pool}_occupancy_slope_per_s", 0.0) > 0.01 * instances


#: The simulation report's tables, by ``--table`` name.
TABLES = _TABLES["simulate"]


@dataclass(frozen=True)
class SimulateResult(Result):
    """A simulation of a plan beside the closed forms' figures for the same fleet and rate.

    Attributes
    ----------
    sim : the engine's run (per-request outcomes, series, configuration).
    figures : the simulated figures, typed.
    closed_form : the closed forms' figures for the simulated fleet at the simulated rate.
    comparison : one row per compared figure (closed form, simulated, CI, gap, flag).
    verdict : ``stable`` or which pool is overloaded or saturated.
    scenario, plan_source : what was simulated and where the plan came from.
    regime_notes : where the plan sits in a regime the closed forms are known to miss.
    """

    sim: SimResult
    figures: SimFigures
    closed_form: SimFigures
    comparison: list[Row]
    verdict: str
    scenario: str
    plan_source: str
    regime_notes: list[str] = field(default_factory=list)

    def report(self) -> Report:
        rep = simulate_report(self.sim, self.comparison, self.scenario, self.plan_source)
        rep.notes.extend(self.regime_notes)
        return rep


def _ratio_row(name: str, f: Mapping[str, float]) -> Row:
    """A load ratio's row: its value, or (where MD decodes no token, its denominator) none,
    with why: unbounded where RLD decodes some, undefined where neither pool does."""
    value = f[name]
    if math.isfinite(value):
        return {"figure": name, "value": value, "note": ""}
    rld = f.get("rld_demand_tokens_per_s", 0.0)
    why = (
        "unbounded: MD decodes no token, RLD every one"
        if rld > 0
        else "undefined: neither pool decodes a token"
    )
    return {"figure": name, "value": None, "note": why}


def _finite_rows(rows: list[Row]) -> list[Row]:
    """Rows with infinite or NaN numbers as None (JSON null, an empty CSV cell): the closed
    forms give no finite figure for an overloaded pool."""
    out: list[Row] = []
    for r in rows:
        out.append(
            {k: None if isinstance(v, float) and not math.isfinite(v) else v for k, v in r.items()}
        )
    return out


def simulate_report(
    res: SimResult,
    comparison: list[Row],
    scenario: str,
    plan_source: str,
) -> Report:
    cfg = res.config
    figures = SimFigures.from_engine(res.figures)
    f = figures.scalars
    run: list[Row] = [
        {"setting": "scenario", "value": scenario},
        {"setting": "plan", "value": plan_source},
        {"setting": "rate_rps", "value": res.rate_rps},
        {"setting": "requests", "value": int(f["requests"])},
        {"setting": "measured_requests", "value": int(f["measured_requests"])},
        {"setting": "seed", "value": cfg.seed},
        {"setting": "policy", "value": cfg.policy},
        {"setting": "handover", "value": res.handover},
        {"setting": "sample", "value": cfg.sample},
        {"setting": "routing_threshold_hit_rate", "value": res.plan.routing.hit_rate},
        {"setting": "events", "value": res.events},
        {"setting": "wall_s", "value": res.wall_s},
        {
            "setting": "requests_per_wall_s",
            "value": f["requests"] / res.wall_s if res.wall_s > 0 else None,
        },
        {"setting": "verdict", "value": stability_verdict(res)},
    ]
    fleet: list[Row] = [
        {
            "role": role,
            "chip": r.instance.chip.name,
            "chips_per_instance": r.instance.tensor_parallel,
            "instances": r.instances,
            "batch_per_instance": r.batch_per_instance or None,
        }
        for role, r in res.plan.roles.items()
    ]
    figs: list[Row] = [{"figure": k, "value": f[k]} for k in _FIGURES if k in f]
    load = [
        _ratio_row(name, f)
        for name in ("rld_to_md_load_ratio_per_instance", "rld_to_md_token_ratio")
        if name in f
    ]
    comparison = _finite_rows(comparison)
    sections = [
        Section("run", run),
        Section("fleet", fleet),
        Section("simulated", figs),
        Section("ttft by pipeline (simulated)", pipeline_rows(figures)),
        Section("closed form vs simulation", comparison),
        Section("pool loads", pool_rows(res)),
        Section("load ratios", load),
    ]
    s = res.series
    payload: dict[str, Any] = {
        "scenario": scenario,
        "plan_source": plan_source,
        "settings": {r["setting"]: r["value"] for r in run},
        "fleet": fleet,
        "figures": figures.flat(pipelines=False),
        "ttft_by_pipeline_s": {r["pipeline"]: r for r in pipeline_rows(figures)},
        "comparison": comparison,
        "pools": pool_rows(res),
        # each ratio with why it is null where it is (its figure in "figures" is null too)
        "load_ratios": load,
        "series": {
            k: [float(x) for x in v]
            for k, v in s.items()
            if k.endswith(("t_s", "queue", "flows", "occupancy"))
        },
    }
    notes = list(res.notes)
    if res.config.policy == "p-rld":
        notes.append(
            f"policy p-rld: relayed ({policies.P_RLD_WRONG.split('(')[1].rstrip(')')}) requests "
            "finish on RLD, the pipeline the brief excludes; compare with --policy allowed"
        )
    chart = None
    if len(s.get("t_s", [])) > 1:
        lines = [f"occupancy over the arrival period (0 .. {float(s['t_s'][-1]):.4g} s):"]
        if res.plan.rld is not None:
            lines.append(
                f"  RLD |{sparkline(s['rld_occupancy'])}| max {float(np.max(s['rld_occupancy'])):.4g}"
            )
        lines.append(
            f"  MD  |{sparkline(s['md_occupancy'])}| max {float(np.max(s['md_occupancy'])):.4g}"
        )
        lines.append(
            f"  P q |{sparkline(s['prefill_queue'])}| max {float(np.max(s['prefill_queue'])):.4g}"
        )
        chart = "\n".join(lines)
    return Report("pddplan simulate", sections, payload, notes, chart)
