"""The figures of a run: latency percentiles with batch-means half-widths, waits, pool loads.

:func:`run_figures` reads a :class:`~pddplan.sim.result.SimResult`'s per-request outcomes and
occupancy series into the flat mapping that :meth:`pddplan.sim.figures.SimFigures.from_engine`
reads. Pool integrals (busy time, tokens) count over the measured window: from the warm-up's
share of the arrival period to the last sample.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from pddplan.sim import policies
from pddplan.sim.figures import PERCENTILES
from pddplan.sim.plan import SimPlan
from pddplan.sim.resources import StepTable
from pddplan.sim.result import SimResult

#: Batches of consecutive measured requests for the percentiles' confidence half-widths.
CI_BATCHES = 10

#: Columns of the occupancy series, in the order of the handlers' ``SAMPLE`` rows.
SERIES_COLS = (
    "t_s",
    "prefill_queue",
    "line_flows",
    "line_busy_s",
    "line_bytes",
    "md_occupancy",
    "md_tokens",
    "md_busy_s",
    "rld_occupancy",
    "rld_tokens",
    "rld_busy_s",
)


def series(rows: list[tuple[float, ...]]) -> dict[str, np.ndarray]:
    """The occupancy samples as one array per column of :data:`SERIES_COLS`."""
    a = np.asarray(rows, dtype=float).reshape(-1, len(SERIES_COLS))
    return {k: a[:, i] for i, k in enumerate(SERIES_COLS)}


def _slope_per_s(t: np.ndarray, y: np.ndarray) -> float:
    """Least-squares slope of ``y`` over ``t`` [1/s]; 0 with fewer than three points."""
    if len(t) < 3 or float(np.ptp(t)) <= 0:
        return 0.0
    return float(np.polyfit(t, y, 1)[0])


def _batch_ci(x: np.ndarray, p: float) -> float:
    """95% half-width of the ``p``-th percentile by batch means [same unit as ``x``].

    The samples (in arrival order) are cut into :data:`CI_BATCHES` consecutive batches; the
    spread of the batch percentiles, over ``sqrt(batches)``, accounts for the correlation
    between neighbouring requests that queueing creates. nan with fewer than 20 samples per
    batch.
    """
    if len(x) < 20 * CI_BATCHES:
        return math.nan
    qs = [float(np.percentile(b, p)) for b in np.array_split(x, CI_BATCHES)]
    return float(1.96 * np.std(qs, ddof=1) / math.sqrt(CI_BATCHES))


def _mean(x: np.ndarray, empty: float) -> float:
    return float(np.mean(x)) if len(x) else empty


def _p99(x: np.ndarray, empty: float) -> float:
    return float(np.percentile(x, 99)) if len(x) else empty


@dataclass(frozen=True)
class _Window:
    """The measured window of the occupancy series: samples from ``i0`` on, ``dt_s`` long."""

    series: dict[str, np.ndarray]
    i0: int
    dt_s: float

    @classmethod
    def of(cls, res: SimResult) -> _Window:
        t = res.series["t_s"]
        win = t >= res.config.warmup_fraction * (t[-1] if len(t) else 0.0)
        i0 = int(np.argmax(win)) if np.any(win) else 0
        dt = float(t[-1] - t[i0]) if len(t) > 1 else 0.0
        return cls(res.series, i0, dt)

    def delta(self, col: str) -> float:
        """Growth of the integral ``col`` over the window."""
        s = self.series
        return float(s[col][-1] - s[col][self.i0]) if len(s["t_s"]) > 1 else 0.0

    def rate(self, col: str, instances: int) -> float:
        """Growth of ``col`` per second per instance over the window (nan when empty)."""
        return self.delta(col) / self.dt_s / instances if self.dt_s > 0 else math.nan

    def slope_per_s(self, col: str) -> float:
        return _slope_per_s(self.series["t_s"][self.i0 :], self.series[col][self.i0 :])

    def final(self, col: str) -> float:
        return float(self.series[col][-1]) if len(self.series["t_s"]) else 0.0


def run_figures(
    res: SimResult,
    plan: SimPlan,
    pre_s: np.ndarray,
    wrong: bool,
    catch_up_ok: bool,
    line_goodput_bytes_per_s: float = math.inf,
) -> dict[str, float]:
    """The run's flat figures (see :class:`~pddplan.sim.figures.SimFigures`).

    Parameters
    ----------
    res : the run's outcomes and series.
    plan : the fleet simulated.
    pre_s : [s] per request prefill time.
    wrong : the ``p-rld`` policy ran (relayed requests finished on RLD).
    catch_up_ok : whether Catch-Up converged on this MD.
    line_goodput_bytes_per_s : [B/s] the decode link's shared capacity (``inf`` when it is not
        shared, inside one datacenter).
    """
    m = res.measured & np.isfinite(res.ttft_s)
    w = _Window.of(res)
    span = (
        float(res.arrival_s[-1] - res.arrival_s[int(np.argmax(res.measured))]) if m.any() else 0.0
    )
    figs = _latency_figures(res, m)
    figs.update(_wait_figures(res, m, plan, pre_s, span, w))
    figs.update(_line_figures(w, line_goodput_bytes_per_s))
    figs.update(_load_figures(res, plan, span, w, wrong))
    figs.update(_pipeline_figures(res, m, wrong))
    figs["catch_up_converges"] = float(catch_up_ok)
    return figs


def _latency_figures(res: SimResult, m: np.ndarray) -> dict[str, float]:
    """Counts, TTFT percentiles and mean, TPOT mean and p99, RLD's share of output tokens."""
    tt = res.ttft_s[m]
    figs: dict[str, float] = {
        "requests": float(len(res.ttft_s)),
        "measured_requests": float(m.sum()),
        "unfinished_requests": float(np.sum(~np.isfinite(res.done_s))),
        "rate_rps": res.rate_rps,
    }
    for p in PERCENTILES:
        figs[f"ttft_p{p}_s"] = float(np.percentile(tt, p)) if len(tt) else math.nan
        figs[f"ci:ttft_p{p}_s"] = _batch_ci(tt, p)
    figs["ttft_mean_s"] = _mean(tt, math.nan)
    tp = res.tpot_s[m & (res.output_tokens > 1) & np.isfinite(res.tpot_s)]
    figs["tpot_mean_s"] = _mean(tp, math.nan)
    figs["tpot_p99_s"] = _p99(tp, math.nan)
    out = res.output_tokens[m]
    figs["rld_output_token_share"] = (
        float(np.sum(res.rld_tokens[m]) / np.sum(out)) if len(out) else math.nan
    )
    return figs


def _wait_figures(
    res: SimResult, m: np.ndarray, plan: SimPlan, pre_s: np.ndarray, span: float, w: _Window
) -> dict[str, float]:
    """Prefill load and waits, slot waits and MD stalls."""
    n_p = plan.roles["P"].instances
    figs: dict[str, float] = {
        "prefill_utilization": (
            float(np.sum(pre_s[res.measured]) / (n_p * span)) if span > 0 else math.nan
        )
    }
    pw = res.prefill_wait_s[m]
    figs["prefill_mean_wait_s"] = _mean(pw, math.nan)
    figs["prefill_wait_probability"] = float(np.mean(pw > 1e-12)) if len(pw) else math.nan
    mw = res.md_wait_s[m & np.isfinite(res.md_wait_s)]
    figs["md_mean_slot_wait_s"] = _mean(mw, 0.0)
    figs["md_p99_slot_wait_s"] = _p99(mw, 0.0)
    rw = res.rld_wait_s[m & np.isfinite(res.rld_wait_s)]
    figs["rld_mean_slot_wait_s"] = _mean(rw, 0.0)
    figs["rld_p99_slot_wait_s"] = _p99(rw, 0.0)
    st = res.stall_s[m & np.isfinite(res.stall_s)]
    figs["md_stall_mean_s"] = _mean(st, 0.0)
    figs["md_stall_max_s"] = float(np.max(st)) if len(st) else 0.0
    return figs


def _line_figures(w: _Window, goodput_bytes_per_s: float) -> dict[str, float]:
    """The line's byte load and its busy time over the measured window.

    ``link_utilization`` is the bytes the line carried over its capacity, the quantity the
    closed forms call link utilization (rate x mean payload / goodput). ``line_busy_fraction``
    is the share of time at least one flow is on the line: above the byte load when each flow is
    capped below the line's capacity (its streams' window), so that the line is busy without
    being full; the closed forms have no figure for it.
    """
    if w.dt_s <= 0:
        return {"link_utilization": math.nan, "line_busy_fraction": math.nan}
    load = w.delta("line_bytes") / (goodput_bytes_per_s * w.dt_s)
    return {"link_utilization": load, "line_busy_fraction": w.delta("line_busy_s") / w.dt_s}


def _load_figures(
    res: SimResult, plan: SimPlan, span: float, w: _Window, wrong: bool
) -> dict[str, float]:
    """Pool loads over the measured window and the token rates each side is asked for."""
    md_role = plan.roles["MD"]
    figs: dict[str, float] = {
        "md_tokens_per_s_per_instance": w.rate("md_tokens", md_role.instances),
        "md_busy_fraction": w.rate("md_busy_s", md_role.instances),
        "md_occupancy_slope_per_s": w.slope_per_s("md_occupancy"),
        "md_occupancy_final": w.final("md_occupancy"),
    }
    # demanded token rates: what each side is asked to decode per second of arrivals
    span_req = span if span > 0 else math.nan
    to_rld = np.where(
        (res.pipeline == policies.P_RLD_ANOMALOUS) | ((res.pipeline == policies.P_RLD_MD) & wrong),
        res.output_tokens,
        res.rld_tokens,
    )
    rld_demand = float(np.sum(to_rld[res.measured])) / span_req
    md_demand = float(np.sum((res.output_tokens - to_rld)[res.measured])) / span_req
    figs["md_demand_tokens_per_s"] = md_demand
    figs["rld_demand_tokens_per_s"] = rld_demand
    rr = plan.rld
    if rr is not None:
        figs["rld_tokens_per_s_per_instance"] = w.rate("rld_tokens", rr.instances)
        figs["rld_busy_fraction"] = w.rate("rld_busy_s", rr.instances)
        figs["rld_occupancy_slope_per_s"] = w.slope_per_s("rld_occupancy")
        figs["rld_occupancy_final"] = w.final("rld_occupancy")
        occ = w.series["rld_occupancy"]
        figs["rld_occupancy_max"] = float(np.max(occ)) if len(w.series["t_s"]) else 0.0
        # capacity: a full batch at the mean context of what RLD decodes
        sel = to_rld > 0
        ctx = (
            float(np.mean(res.output_tokens[sel] / 2 + res.input_tokens[sel])) if sel.any() else 0.0
        )
        tab = StepTable(rr.instance, rr.batch_per_instance, max(ctx, 1.0) * 2)
        cap = rr.instances * rr.batch_per_instance / tab.step_s(rr.batch_per_instance, ctx)
        figs["rld_capacity_tokens_per_s"] = cap
        figs["rld_offered_load"] = rld_demand / cap if cap > 0 else math.nan
        md_per = md_demand / md_role.instances
        figs["rld_to_md_load_ratio_per_instance"] = (
            (rld_demand / rr.instances) / md_per if md_per > 0 else math.nan
        )
    figs["rld_to_md_token_ratio"] = rld_demand / md_demand if md_demand > 0 else math.nan
    return figs


def _pipeline_figures(res: SimResult, m: np.ndarray, wrong: bool) -> dict[str, float]:
    """Each pipeline's share of the measured requests and its TTFT percentiles."""
    figs: dict[str, float] = {}
    for p_id, name in policies.PIPELINE_NAMES.items():
        sel = m & (res.pipeline == p_id)
        if not sel.any():
            continue
        key = policies.P_RLD_WRONG if (wrong and p_id == policies.P_RLD_MD) else name
        figs[f"pipeline:{key}:share"] = float(sel.sum() / m.sum())
        for p in PERCENTILES:
            figs[f"pipeline:{key}:ttft_p{p}_s"] = float(np.percentile(res.ttft_s[sel], p))
            figs[f"ci:pipeline:{key}:ttft_p{p}_s"] = _batch_ci(res.ttft_s[sel], p)
    return figs
