"""The public Python API: each command of the CLI as a function that returns a typed result.

Every function takes a scenario by bundled name or file path (``None``: the bundled default),
or a :class:`LoadedScenario` from :func:`load_scenario`, plus keyword-only options named as in
the library (``rate_rps``, ``budget_usd_per_hour``, ``max_chips``...). ``overrides`` maps dotted
paths to values (see :mod:`pddplan.io.overrides`) and is validated exactly as the same values in a
scenario file: a bad key or value raises :class:`~pddplan.errors.OverrideError` naming the key
and the allowed range. Errors are subclasses of :class:`~pddplan.errors.PddplanError`; nothing
is printed.

Example::

    >>> import pddplan
    >>> r = pddplan.solve("default")
    >>> r.to_json()["plan"]["cost_usd_per_hour"] > 0
    True
"""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pddplan.api.profiles import list_profiles, profile_schema, show_profile, validate_profiles
from pddplan.api.step import step
from pddplan.errors import OptionError, ProfileError, UsageError

if TYPE_CHECKING:
    from pddplan.io.loader import Registry, ResolvedScenario
    from pddplan.io.overrides import ScenarioSource
    from pddplan.results import (
        BathtubResult,
        BreakevenResult,
        CalibrateResult,
        ChipsRankResult,
        HitrateResult,
        LinkCalibrateResult,
        PlanReportResult,
        RobustResult,
        SimulateResult,
        SolveResult,
        SweepResult,
    )
    from pddplan.sim.requests import Requests
    from pddplan.solver import Outcome, Problem
    from pddplan.spec import Chip, Link, Model, Scenario, Workload
    from pddplan.transfer import TransferResult

__all__ = [
    "LoadedScenario",
    "PddplanWarning",
    "bathtub",
    "breakeven",
    "calibrate",
    "calibrate_link",
    "hitrate",
    "list_profiles",
    "plan_report",
    "load_scenario",
    "profile_schema",
    "rank_chips",
    "robust",
    "show_profile",
    "simulate",
    "solve",
    "solve_result",
    "step",
    "sweep",
    "transfer",
    "validate_profiles",
]

PathLike = str | os.PathLike[str]
Profiles = Sequence[PathLike] | None
Overrides = Mapping[str, Any] | None
Progress = Callable[[int, int], None]


class PddplanWarning(UserWarning):
    """A diagnostic of the library (the CLI prints these on stderr)."""


def _warn(msg: str) -> None:
    warnings.warn(msg, PddplanWarning, stacklevel=3)


# ------------------------------------------------------------------------------ scenarios


@dataclass(frozen=True)
class LoadedScenario:
    """A scenario with its profiles loaded and its overrides validated.

    Keeps the parsed document, so that further overrides (:meth:`with_overrides`, or the
    ``overrides`` of any API function) are validated from memory, as the file with them would be.
    Its specs are frozen; editing them with ``model_copy(update=...)`` validates the update.
    """

    source: ScenarioSource
    overrides: Mapping[str, Any]
    resolved: ResolvedScenario = field(repr=False)

    @property
    def name(self) -> str:
        return self.resolved.scenario.name

    @property
    def file(self) -> str:
        return self.resolved.file

    @property
    def spec(self) -> Scenario:
        return self.resolved.scenario

    @property
    def model(self) -> Model:
        return self.resolved.model

    @property
    def workload(self) -> Workload:
        return self.resolved.workload

    @property
    def link(self) -> Link:
        return self.resolved.link

    @property
    def rdma(self) -> Link:
        return self.resolved.rdma

    @property
    def chips(self) -> Mapping[str, Chip]:
        return self.resolved.chips

    @property
    def registry(self) -> Registry:
        return self.source.registry

    def with_overrides(self, overrides: Overrides) -> LoadedScenario:
        """This scenario with more overrides (later ones win), validated."""
        from pddplan.io.overrides import copy_overrides

        if not overrides:
            return self
        merged = {**self.overrides, **copy_overrides(overrides)}
        return LoadedScenario(self.source, merged, self.source.resolve(merged))


def _registry(profiles: Profiles) -> Registry:
    from pddplan.io.loader import Registry

    return Registry.default([Path(p) for p in profiles or ()])


def load_scenario(
    name_or_path: PathLike | None = None,
    *,
    overrides: Overrides = None,
    profiles: Profiles = None,
) -> LoadedScenario:
    """Load a scenario (bundled name or YAML file; None: the bundled default).

    Parameters
    ----------
    name_or_path : a bundled scenario's name or a scenario file.
    overrides : ``{"dotted.path": value}``, validated as the same values in the file would be.
    profiles : extra profile directories, searched before ``PDDPLAN_PROFILES`` and the bundled
        profiles (the CLI's ``--profiles``).
    """
    from pddplan.io.overrides import ScenarioSource, copy_overrides

    src = ScenarioSource.open(
        None if name_or_path is None else str(name_or_path), _registry(profiles)
    )
    ov = copy_overrides(overrides)
    return LoadedScenario(src, ov, src.resolve(ov))


ScenarioLike = PathLike | LoadedScenario | None


def _load(scenario: ScenarioLike, overrides: Overrides, profiles: Profiles) -> LoadedScenario:
    if isinstance(scenario, LoadedScenario):
        if profiles:
            raise OptionError(
                "profiles", "applies when a scenario is loaded; pass them to load_scenario"
            )
        return scenario.with_overrides(overrides)
    return load_scenario(scenario, overrides=overrides, profiles=profiles)


# ---------------------------------------------------------------------------------- solve


def solve(
    scenario: ScenarioLike = None,
    *,
    overrides: Overrides = None,
    profiles: Profiles = None,
    rate_rps: float | None = None,
    budget_usd_per_hour: float | None = None,
    max_chips: Mapping[str, int] | None = None,
    max_rate_rps: float | None = None,
    max_bcr: bool = False,
    explain: bool = False,
    baselines: bool = True,
    own: Mapping[str, int] | None = None,
) -> SolveResult:
    """Size P / RLD / MD and compare with the same-datacenter and no-relay baselines.

    Without ``rate_rps`` or ``budget_usd_per_hour`` the scenario's rate is the target;
    ``max_bcr`` (or a scenario without a rate) asks for the plan of highest BCR.

    Parameters
    ----------
    rate_rps : [req/s] target rate: the least-cost plan serving it.
    budget_usd_per_hour : [USD/h] the plan with the most goodput within it.
    max_chips : inventory limits, chip name -> chips (the baselines obey them too).
    own : chips owned, chip name -> chips (the scenario's ``inventory.owned``): used first, at
        their amortized capex (or opex only when ``inventory.owned_cost`` is ``sunk``).
    max_rate_rps : [req/s] upper bound on the rate when no target is given.
    max_bcr : ignore the scenario's rate: the plan of highest BCR.
    explain : add one row per hit-rate class (``classes``).
    baselines : also size the baselines at the plan's rate.

    Raises
    ------
    InfeasibleError : no plan meets the SLA within the limits.
    """
    if sum((rate_rps is not None, budget_usd_per_hour is not None, bool(max_bcr))) > 1:
        raise UsageError("give one of rate_rps, budget_usd_per_hour and max_bcr")
    if rate_rps is not None and not rate_rps > 0:
        raise OptionError("rate_rps", "must be above 0")
    if rate_rps is not None:
        _number_in("rate_rps", rate_rps, 1e-6, 1e6)
    if budget_usd_per_hour is not None and not budget_usd_per_hour >= 0:
        raise OptionError("budget_usd_per_hour", "must be at least 0")
    if budget_usd_per_hour is not None:
        _number_in("budget_usd_per_hour", budget_usd_per_hour, 0, 1e9)
    if max_rate_rps is not None and not max_rate_rps >= 0:
        raise OptionError("max_rate_rps", "must be at least 0")
    if max_rate_rps is not None:
        _number_in("max_rate_rps", max_rate_rps, 0, 1e6)
    ls = _load(scenario, overrides, profiles)
    limits = _chip_counts("max_chips", max_chips, ls, least=1)
    unknown = [c for c in limits if c not in ls.chips]
    if unknown:
        raise OptionError(
            "max_chips", f"names chips the scenario does not use: {', '.join(unknown)}"
        )
    owned = _chip_counts("own", own, ls, least=0)
    inventory = {f"limits.max_chips.{k}": v for k, v in limits.items()}
    inventory.update({f"inventory.owned.{k}": v for k, v in owned.items()})
    if inventory:  # in the scenario, so that the baselines obey them too
        ls = ls.with_overrides(inventory)
    from pddplan.solver import solve_scenario

    out = solve_scenario(
        ls.resolved,
        explain_relay=True,
        rate_rps=rate_rps,
        budget_usd_per_hour=budget_usd_per_hour,
        max_chips=limits,
        max_rate_rps=max_rate_rps,
        max_bcr=max_bcr,
        baselines=baselines,
    )
    return solve_result(out, explain=explain)


def _chip_counts(
    option: str, counts: Mapping[str, int] | None, ls: LoadedScenario, *, least: int
) -> dict[str, int]:
    """``counts`` checked: whole numbers of at least ``least``, chip names of the catalog (an
    unknown name gets a did-you-mean: ``h100`` -> ``h100-sxm``)."""
    import difflib

    out: dict[str, int] = {}
    catalog = list(ls.registry.index("chip"))
    for name, n in (counts or {}).items():
        if isinstance(n, bool) or not isinstance(n, int) or n < least:
            kind = "a positive" if least > 0 else "a"
            raise OptionError(
                option, f"expects CHIP=N with N {kind} whole number, not {name}={n!r}"
            )
        if name not in catalog:
            guess = difflib.get_close_matches(name, catalog, n=1, cutoff=0.5)
            if not guess:
                guess = [c for c in catalog if c.startswith(name)][:1]
            hint = (
                f"; did you mean {guess[0]!r}?"
                if guess
                else " (see `pddplan profiles list --kind chips`)"
            )
            raise OptionError(option, f": no chip named {name!r}{hint}")
        out[name] = n
    return out


def solve_result(out: Outcome, *, explain: bool = False) -> SolveResult:
    """The :class:`SolveResult` of a planner outcome: TTFT by pipeline, the classes (with
    ``explain``) and the closed forms' regime warnings, computed now."""
    from pddplan.results.solve import SolveResult
    from pddplan.sim.compare import regime_warning_for_plan
    from pddplan.solver import Solver

    solver = Solver(out.problem)
    by_pipe = solver.ttft_by_pipeline(out.plan)
    wait = by_pipe.pop("_wait")
    classes = _class_rows(out, solver) if explain else None
    warns = [f"closed forms: {w}" for w in regime_warning_for_plan(out.problem, out.plan)]
    return SolveResult(out, by_pipe, wait["mean_wait_s"], classes, warns)


def _class_rows(out: Outcome, solver: Any) -> list[dict[str, Any]]:
    """One row per hit-rate class: its route, prefill, WAN transfer and mean TTFT (the solver's
    timeline, :meth:`~pddplan.solver.Solver.class_ttft_mean_s`)."""
    plan = out.plan
    pb = solver.pb
    c = pb.classes
    r = plan.route
    p_inst, _n = plan.roles["P"]  # type: ignore[misc]
    pre = solver.prefill_s(p_inst)
    ttft = solver.class_ttft_mean_s(plan)
    names = {0: "P-MD" if pb.topology.cross_dc else "P-D", 1: "P-RLD-MD", 2: "P-RLD (anomalous)"}
    return [
        {
            "hit_rate": float(c.hit_rate[k]),
            "input_tokens": float(c.input_tokens[k]),
            "output_tokens": float(c.output_tokens[k]),
            "share": float(c.weight[k]),
            "route": names[int(r.pipeline[k])],
            "prefill_s": float(pre[k]),
            "wan_bytes": float(pb.wan_bytes[k]),
            "wan_s": float(r.wan_s[k]),
            "rdma_s": float(r.rdma_s[k]),
            "ttft_mean_s": float(ttft[k]),
            "eager_tokens": float(r.eager_tokens[k]),
        }
        for k in range(len(c))
    ]


# -------------------------------------------------------------------------------- bathtub


def bathtub(
    scenario: ScenarioLike = None,
    *,
    overrides: Overrides = None,
    profiles: Profiles = None,
    step: float = 0.01,
    tolerance: float = 0.02,
    reprovision: bool = True,
    capacity_curve: PathLike | Mapping[str, Any] | None = None,
) -> BathtubResult:
    """The return on a request against its prefix hit rate: valleys, singular points, advice.

    Parameters
    ----------
    step : [-] hit-rate grid step (0.001 to 0.1).
    tolerance : [-] least valley depth, as a fraction of its rims (0 to 1).
    reprovision : also solve the best plan per hit rate.
    capacity_curve : a capacity curve CSV (``pddplan hitrate --curve-out``), or a mapping with
        arrays ``capacity_tokens`` and ``mean_hit_rate``.
    """
    if not 0.001 <= step <= 0.1:
        raise OptionError("step", f"must be between 0.001 and 0.1, not {step!r}")
    if not 0.0 <= tolerance <= 1.0:
        raise OptionError("tolerance", f"must be between 0 and 1, not {tolerance!r}")
    ls = _load(scenario, overrides, profiles)
    curve = _capacity_curve(capacity_curve)
    from pddplan.bathtub import analyze, curve_rows
    from pddplan.results.bathtub import BathtubResult

    res = analyze(
        ls.resolved, step=step, tolerance=tolerance, reprovision=reprovision, capacity_curve=curve
    )
    pb = res.outcome.problem
    keep = pb.on_decode_side
    return BathtubResult(res, curve_rows(res), pb.classes.hit_rate[keep], pb.classes.weight[keep])


def _capacity_curve(curve: PathLike | Mapping[str, Any] | None) -> dict[str, Any] | None:
    import numpy as np

    if curve is None:
        return None
    if isinstance(curve, Mapping):
        caps = np.asarray(curve["capacity_tokens"], dtype=float)
        means = np.asarray(curve["mean_hit_rate"], dtype=float)
        order = np.argsort(caps)
        return {"capacity_tokens": caps[order], "mean_hit_rate": means[order]}
    return read_capacity_curve(Path(curve))


def read_capacity_curve(path: Path) -> dict[str, Any]:
    """Read a capacity curve CSV: columns capacity_tokens and mean_hit_rate."""
    import csv

    import numpy as np

    from pddplan.errors import ProfileError

    caps, means = [], []
    try:
        fh = path.open(newline="", encoding="utf-8")
    except OSError as exc:
        raise ProfileError(f"cannot read file: {exc.strerror}", file=str(path)) from None
    with fh:
        reader = csv.DictReader(fh)
        for col in ("capacity_tokens", "mean_hit_rate"):
            if reader.fieldnames is None or col not in reader.fieldnames:
                raise ProfileError(
                    f"missing column {col!r} (have: {reader.fieldnames})", file=str(path), line=1
                )
        for i, row in enumerate(reader, start=2):
            try:
                cap = row["capacity_tokens"].strip()
                caps.append(float("inf") if cap in ("unbounded", "inf") else float(cap))
                means.append(float(row["mean_hit_rate"]))
            except ValueError:
                raise ProfileError(
                    "not a number", file=str(path), key="capacity_tokens/mean_hit_rate", line=i
                ) from None
    if not caps:
        raise ProfileError("the capacity curve is empty", file=str(path))
    order = np.argsort(caps)
    return {"capacity_tokens": np.asarray(caps)[order], "mean_hit_rate": np.asarray(means)[order]}


# ------------------------------------------------------------------------------ what-if


def _axes(axes: Mapping[str, Sequence[Any]] | Sequence[tuple[str, Sequence[Any]]]) -> list[Any]:
    from pddplan.whatif import Axis

    items = list(axes.items()) if isinstance(axes, Mapping) else list(axes)
    if not items:
        raise OptionError("axes", "needs at least one PATH with values")
    out = []
    for path, values in items:
        vals = [values] if isinstance(values, str | int | float) else list(values)
        if not vals:
            raise OptionError("axes", f"{path}: needs at least one value")
        out.append(Axis(str(path), vals))
    if len({a.path for a in out}) != len(out):
        raise OptionError("axes", "sweeps each PATH once")
    from pddplan import limits

    points = math.prod(len(a.values) for a in out)
    limits.GRID_POINTS.check(points, "the sweep grid's points")
    return out


def _number_in(option: str, value: Any, lo: float, hi: float, *, open_lo: bool = False) -> None:
    """Raise :class:`OptionError` unless ``value`` is a finite number in ``[lo, hi]``."""
    ok = (
        not isinstance(value, bool)
        and isinstance(value, int | float)
        and math.isfinite(value)
        and (lo < value if open_lo else lo <= value)
        and value <= hi
    )
    if not ok:
        left = "(" if open_lo else "["
        raise OptionError(
            option, f"must be a finite number in {left}{lo:g}, {hi:g}], not {value!r}"
        )


def sweep(
    scenario: ScenarioLike = None,
    axes: Mapping[str, Sequence[Any]] | Sequence[tuple[str, Sequence[Any]]] = (),
    *,
    overrides: Overrides = None,
    profiles: Profiles = None,
    baselines: bool = True,
    jobs: int = 1,
    progress: Progress | None = None,
    executor: str = "local",
    scheduler: str | None = None,
) -> SweepResult:
    """Solve the scenario at every point of the grid ``axes`` (PATH -> values, their product).

    Every PATH and value is validated (from the parsed document in memory) before the first
    point is solved; infeasible points are rows with the binding constraint.

    Parameters
    ----------
    axes : dotted PATH -> list of values (see :mod:`pddplan.io.overrides`).
    baselines : also size the baselines at each point (the ``bcr_ratio_vs_*`` columns).
    jobs : solve points on this many local processes, or Dask workers of a LocalCluster (the
        order stays the grid's).
    progress : called with (points done, points) as the sweep goes (local executor).
    executor : ``local`` or ``dask`` (:mod:`pddplan.executors`; ``pip install 'pddplan[dask]'``).
    scheduler : a Dask scheduler's address; without it ``dask`` starts a LocalCluster.
    """
    from pddplan.results.whatif import SweepResult
    from pddplan.whatif import check_axes, sweep_rows

    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise OptionError("jobs", f"must be a whole number >= 1, not {jobs!r}")
    ax = _axes(axes)
    ls = _load(scenario, overrides, profiles)
    check_axes(ls.source, ls.overrides, ax)
    if executor != "local" or scheduler is not None:
        from pddplan.executors import make_executor
        from pddplan.whatif import sweep_on

        with make_executor(executor, jobs=jobs, scheduler=scheduler) as ex:
            rows = sweep_on(ex, ls.source, ls.overrides, ax, baselines=baselines)
    else:
        rows = sweep_rows(
            ls.source, ls.overrides, ax, jobs=jobs, progress=progress, baselines=baselines
        )
    return SweepResult({a.path: list(a.values) for a in ax}, rows)


# --------------------------------------------------------------------------------- robust


def robust(
    scenario: ScenarioLike = None,
    *,
    samples: int = 1000,
    confidence: float = 0.9,
    seed: int | None = 0,
    executor: str = "local",
    scheduler: str | None = None,
    jobs: int = 1,
    rate_rps: float | None = None,
    max_chips: Mapping[str, int] | None = None,
    overrides: Overrides = None,
    profiles: Profiles = None,
) -> RobustResult:
    """The point plan under sampled inputs, the cheapest plan that meets every SLA target with
    probability >= ``confidence``, and which estimate moves BCR and SLA attainment most.

    Every estimated input (profiles' ``estimated:`` keys, the rate, the hit-rate shift, the
    anomalous share) is drawn from the default distribution of its kind or the scenario's
    ``uncertainty:`` block (docs/robust.md); the same samples evaluate every candidate plan.

    Parameters
    ----------
    samples : how many scenarios to draw (Latin hypercube).
    confidence : the probability the robust plan must meet every SLA target with, in (0, 1).
    seed : the draws' seed (None: fresh entropy, not reproducible).
    executor : ``local`` or ``dask`` (:mod:`pddplan.executors`); the result is the same.
    scheduler : a Dask scheduler's address; without it ``dask`` starts a LocalCluster.
    jobs : local processes, or workers of the LocalCluster.
    rate_rps : [req/s] the target rate (default: the scenario's).
    max_chips : inventory limits, chip name -> chips.

    Raises
    ------
    OptionError : a confidence outside (0, 1), fewer than 2 samples, an unknown executor.
    ProfileError : a distribution the scenario's ``uncertainty:`` block gets wrong (names it).
    InfeasibleError : no plan meets the SLA at the point estimate.
    """
    from pddplan.results.robust import RobustResult
    from pddplan.robust import run_robust
    from pddplan.solver import Outcome

    if isinstance(samples, bool) or not isinstance(samples, int) or samples < 2:
        raise OptionError("samples", f"must be a whole number >= 2, not {samples!r}")
    if not isinstance(confidence, int | float) or not 0 < confidence < 1:
        raise OptionError("confidence", f"must be between 0 and 1 (exclusive), not {confidence!r}")
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise OptionError("jobs", f"must be a whole number >= 1, not {jobs!r}")
    if rate_rps is not None and not rate_rps > 0:
        raise OptionError("rate_rps", "must be above 0")
    ov = dict(overrides or {})
    if rate_rps is not None:
        ov["rate_rps"] = rate_rps
    ls = _load(scenario, ov, profiles)
    limits = dict(max_chips or {})
    unknown = [c for c in limits if c not in ls.chips]
    if unknown:
        raise OptionError(
            "max_chips", f"names chips the scenario does not use: {', '.join(unknown)}"
        )
    run = run_robust(
        ls.source,
        ls.overrides,
        samples=samples,
        confidence=float(confidence),
        seed=seed,
        executor=executor,
        scheduler=scheduler,
        jobs=jobs,
        max_chips=limits,
    )
    point = solve_result(run.point)
    rp = solve_result(run.robust.outcome) if run.robust is not None else None
    assert isinstance(run.point, Outcome)
    return RobustResult(run, point, rp)


def breakeven(
    scenario: ScenarioLike = None,
    *,
    param: str = "chips.gpu-b.price_usd_per_hour",
    against: str = "same-dc",
    lo: float | None = None,
    hi: float | None = None,
    tolerance: float = 1e-3,
    overrides: Overrides = None,
    profiles: Profiles = None,
) -> BreakevenResult:
    """The value of ``param`` in ``[lo, hi]`` at which PDD's BCR equals a baseline's.

    Parameters
    ----------
    param : dotted PATH of the parameter (see :func:`sweep`).
    against : ``same-dc`` or ``no-relay``.
    lo, hi : the search interval (default: a quarter and four times the parameter's value in
        the scenario).
    tolerance : [-] bisection stops within this fraction of the interval.
    """
    from pddplan.results.whatif import BreakevenResult
    from pddplan.whatif import breakeven_on

    if against not in ("same-dc", "no-relay"):
        raise OptionError("against", f"must be same-dc or no-relay, not {against!r}")
    ls = _load(scenario, overrides, profiles)
    if lo is None or hi is None:
        from pddplan.io.overrides import check_path

        check_path(param, ls.resolved)
        cur = current_value(ls.resolved, param)
        if not isinstance(cur, int | float) or isinstance(cur, bool) or cur <= 0:
            raise OptionError(
                "lo", f"and hi are needed: {param} has no positive number to search around"
            )
        lo = cur / 4 if lo is None else lo
        hi = cur * 4 if hi is None else hi
    _number_in("lo", lo, -1e12, 1e12)
    _number_in("hi", hi, -1e12, 1e12)
    _number_in("tolerance", tolerance, 1e-9, 1.0)
    if not hi > lo:
        raise OptionError("hi", "must be above lo")
    be = breakeven_on(ls.source, ls.overrides, param, against, lo, hi, tolerance)
    return BreakevenResult(
        be.path, be.against, be.lo, be.hi, be.value, be.ratio_lo, be.ratio_hi, be.iterations
    )


def plan_report(
    scenario: ScenarioLike = None,
    *,
    overrides: Overrides = None,
    profiles: Profiles = None,
    rate_rps: float | None = None,
    max_chips: Mapping[str, int] | None = None,
    own: Mapping[str, int] | None = None,
    bandwidths_gbit_per_s: Sequence[float] | None = None,
    hit_rate_shifts: Sequence[float] = (-0.1, -0.05, 0.0, 0.05),
) -> PlanReportResult:
    """Everything a procurement report shows (:class:`~pddplan.results.planreport.
    PlanReportResult`): the plan with its classes and baselines, the bathtub on it, a line
    bandwidth x hit-rate shift sweep (default bandwidths: a quarter, half, the scenario's and
    twice it), the assumptions with their sources (estimates flagged) and the warnings."""
    from pddplan.results.planreport import BANDWIDTH_PATH, SHIFT_PATH
    from pddplan.results.planreport import PlanReportResult as Result

    sol = solve(
        scenario,
        overrides=overrides,
        profiles=profiles,
        rate_rps=rate_rps,
        max_chips=max_chips,
        own=own,
        explain=True,
    )
    ls = _load(scenario, overrides, profiles)
    inv: dict[str, Any] = {f"inventory.owned.{k}": v for k, v in (own or {}).items()}
    inv.update({f"limits.max_chips.{k}": v for k, v in (max_chips or {}).items()})
    if rate_rps is not None:
        inv["rate_rps"] = rate_rps
    if inv:
        ls = ls.with_overrides(inv)
    bt = bathtub(ls, reprovision=False)
    bw = ls.link.bandwidth_gbit_per_s
    bws = list(bandwidths_gbit_per_s or [round(bw * f, 3) for f in (0.25, 0.5, 1.0, 2.0)])
    sw = sweep(ls, [(BANDWIDTH_PATH, bws), (SHIFT_PATH, list(hit_rate_shifts))])
    warns = [*sol.warnings, *sol.report().notes]
    bad = len(sw.points) - sw.feasible_points
    if bad:
        warns.append(
            f"{bad} of {len(sw.points)} sweep points have no plan (the line or TTFT binds): see "
            "the binding column"
        )
    chips = set(sol.plan.chips_of()) | {c for b in sol.baselines for c in b.chips_of()}
    return Result(sol, bt, sw, assumption_rows(ls.resolved, chips), warns)


def assumption_rows(rs: ResolvedScenario, chips: set[str]) -> list[dict[str, Any]]:
    """One row per sourced group of numbers the plan rests on (profiles of the model, the
    workload, the links and the chips in ``chips``, and the scenario's revenue): its values,
    its source and which of them are estimates."""
    from pydantic import BaseModel

    rows: list[dict[str, Any]] = []

    def walk(profile: str, group: str, obj: Any) -> None:
        if not isinstance(obj, BaseModel):
            return
        if "source" in type(obj).model_fields:
            values = {
                k: v
                for k, v in obj.model_dump(exclude_none=True).items()
                if k not in ("source", "estimated", "kind", "name", "display_name", "notes")
                and not isinstance(v, dict | list)
            }
            text = ", ".join(
                f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in values.items()
            )
            est = list(getattr(obj, "estimated", []) or [])
            rows.append(
                {
                    "profile": profile,
                    "group": group or "-",
                    "values": text[:160] + ("..." if len(text) > 160 else ""),
                    "source": obj.source,  # type: ignore[attr-defined]
                    "estimated": ", ".join(est),
                }
            )
        for name in type(obj).model_fields:
            sub = getattr(obj, name)
            if isinstance(sub, BaseModel):
                walk(profile, f"{group}.{name}" if group else name, sub)

    walk(f"model {rs.model.name}", "", rs.model)
    walk(f"workload {rs.workload.name}", "", rs.workload)
    walk(f"link {rs.link.name}", "", rs.link)
    walk(f"rdma {rs.rdma.name}", "", rs.rdma)
    for name in sorted(chips):
        if name in rs.chips:
            walk(f"chip {name}", "", rs.chips[name])
    if rs.scenario.revenue is not None:
        walk(f"scenario {rs.scenario.name}", "revenue", rs.scenario.revenue)
    return rows


def current_value(rs: ResolvedScenario, path: str) -> Any:
    """The value a dotted PATH (as in ``overrides``) has in a resolved scenario, or None."""
    from pddplan.io.overrides import ALIASES

    parts = path.split(".")
    obj: Any
    if parts[0] == "chips" and len(parts) > 2:
        obj, parts = rs.chips.get(parts[1]), parts[2:]
        if len(parts) == 1 and parts[0] in ALIASES:
            parts = list(ALIASES[parts[0]])
    elif parts[0] in ("link", "rdma", "model", "workload"):
        obj, parts = getattr(rs, parts[0]), parts[1:]
    else:
        obj = rs.scenario
    for part in parts:
        obj = obj.get(part) if isinstance(obj, dict) else getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def rank_chips(
    scenario: ScenarioLike = None,
    *,
    model: str | None = None,
    workload: str | None = None,
    reference: str = "h100-sxm",
    overrides: Overrides = None,
    profiles: Profiles = None,
) -> ChipsRankResult:
    """Every chip of the catalog priced for prefill and for decode (``pddplan chips rank``).

    Parameters
    ----------
    model, workload : profile names (default: the scenario's).
    reference : the balanced flagship chip whose cost the advantages divide.
    """
    from pddplan.results.whatif import ChipsRankResult
    from pddplan.whatif import rank_chips as _rank

    if isinstance(scenario, LoadedScenario):
        reg = scenario.registry
    else:
        reg = _registry(profiles)
    swaps: dict[str, Any] = {}
    if model:
        reg.path("model", model)
        swaps["model"] = model
    if workload:
        reg.path("workload", workload)
        swaps["workload"] = workload
    reg.path("chip", reference)
    if isinstance(scenario, LoadedScenario):
        ls = _load(scenario, {**swaps, **(overrides or {})}, profiles)
    else:
        from pddplan.io.overrides import ScenarioSource

        src = ScenarioSource.open(None if scenario is None else str(scenario), reg)
        ov = {**swaps, **(overrides or {})}
        ls = LoadedScenario(src, ov, src.resolve(ov))
    rs = ls.resolved
    rows = _rank(rs, ls.registry, reference)
    return ChipsRankResult(
        rows, rs.model.name, rs.workload.name, reference, rs.scenario.sla.tpot_ms
    )


# ------------------------------------------------------------------------------- simulate


def simulate(
    scenario: ScenarioLike = None,
    *,
    plan: PathLike | Mapping[str, Any] | SolveResult | None = None,
    requests: int = 20_000,
    seed: int = 0,
    rate_rps: float | None = None,
    policy: str = "allowed",
    handover: str = "plan",
    sample: str = "classes",
    trace: PathLike | None = None,
    warmup_fraction: float = 0.05,
    overrides: Overrides = None,
    profiles: Profiles = None,
    progress: Progress | None = None,
) -> SimulateResult:
    """Simulate a plan request by request, beside the closed forms' figures.

    Parameters
    ----------
    plan : a plan (``solve`` JSON file or document, or a :class:`SolveResult`); default: solve
        the scenario now (at ``rate_rps`` if given).
    requests : requests to simulate.
    seed : random seed (same seed, same run).
    rate_rps : [req/s] arrival rate (default: the plan's).
    policy : ``allowed`` or ``p-rld`` (relayed requests finish on RLD, to see RLD overload).
    handover : ``plan``, ``one-shot``, ``catch-up`` or ``adaptive``.
    sample : ``classes`` (the solver's request classes) or ``workload`` (its distributions).
    trace : replay a trace's arrivals, lengths and prefix hits (unbounded cache).
    warmup_fraction : [-] share of the first requests left out of the statistics.
    """

    from pddplan.results.simulate import SimulateResult, stability_verdict
    from pddplan.sim import SimConfig, SimPlan
    from pddplan.sim import simulate as run_simulation
    from pddplan.sim.compare import (
        closed_form_figures,
        closed_form_plan,
        comparison_rows,
        regime_warning_for_plan,
        with_rate,
    )
    from pddplan.sim.figures import SimFigures
    from pddplan.sim.plan import plan_from_json, read_plan_file
    from pddplan.sim.policies import check_policy, resolve_handover
    from pddplan.solver import PDD, build_problem, check_options, solve_scenario

    check_policy(policy)
    resolve_handover(handover, "one-shot")  # reject a bad hand-over before solving
    if sample not in ("classes", "workload"):
        raise OptionError("sample", f"must be classes or workload, not {sample!r}")
    if not 0.0 <= warmup_fraction < 1.0:
        raise OptionError("warmup_fraction", "must be at least 0 and below 1")
    if rate_rps is not None and not rate_rps > 0:
        raise OptionError("rate_rps", "must be above 0")
    if rate_rps is not None:
        _number_in("rate_rps", rate_rps, 1e-6, 1e6)
    if isinstance(requests, bool) or not isinstance(requests, int) or requests < 1:
        raise OptionError("requests", f"must be a whole number >= 1, not {requests!r}")
    from pddplan import limits

    limits.SIM_REQUESTS.check(requests)
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**63:
        raise OptionError("seed", f"must be a whole number from 0 to 2**63 - 1, not {seed!r}")
    if trace is not None and sample != "classes":
        raise OptionError("sample", "does not apply to a trace, which replays its own requests")
    ls = _load(scenario, overrides, profiles)
    rs = ls.resolved
    if plan is not None:
        problem = build_problem(rs, PDD)
        check_options(problem)
        from pddplan.results.solve import SolveResult

        if isinstance(plan, SolveResult):
            splan = plan_from_json(plan.to_json(), problem, "<SolveResult>")
            source = "a SolveResult"
        elif isinstance(plan, Mapping):
            splan = plan_from_json(dict(plan), problem, "<plan>")
            source = "a plan document"
        else:
            splan = read_plan_file(Path(plan), problem)
            source = str(plan)
        if splan.rld is None and problem.topology.anomalous_filter:
            # a plan without RLD sends every request, anomalous ones included, over the line
            # (the instances are the same options of the same chips: only the classes change)
            problem = build_problem(rs, replace(PDD, anomalous_filter=False))
    else:
        out = solve_scenario(rs, rate_rps=rate_rps, baselines=False)
        problem, splan = out.problem, SimPlan.of(out.plan)
        source = f"solved now at {splan.rate_rps:.4g} req/s"
    resolve_handover(handover, splan.handover)
    cfg = SimConfig(
        requests=requests,
        seed=seed,
        rate_rps=rate_rps,
        policy=policy,
        handover=handover,
        sample=sample,
        warmup_fraction=warmup_fraction,
    )
    reqs = None
    if trace is not None:
        reqs = _trace_requests(Path(trace), problem, rate_rps, requests, seed)
        cfg = replace(cfg, requests=len(reqs), rate_rps=None, sample="trace")
    res = run_simulation(
        problem, splan, cfg, requests=reqs, workload=rs.workload, progress=progress
    )
    at_rate = with_rate(splan, res.rate_rps)
    cf_plan = closed_form_plan(problem, at_rate, res.rate_rps)
    closed = closed_form_figures(problem, cf_plan)
    figures = SimFigures.from_engine(res.figures)
    rows = comparison_rows(closed, figures)
    notes = [
        "closed forms: " + w.replace("; check with `pddplan simulate`", "")
        for w in regime_warning_for_plan(problem, cf_plan)
    ]
    name = str(scenario) if isinstance(scenario, str | os.PathLike) else ls.name
    return SimulateResult(res, figures, closed, rows, stability_verdict(res), name, source, notes)


def _trace_requests(
    path: Path, problem: Problem, rate: float | None, limit: int, seed: int
) -> Requests:
    """Requests replayed from a trace: arrivals, lengths and hits (unbounded prefix cache)."""
    import numpy as np

    from pddplan.sim.requests import replay
    from pddplan.trace.replay import replay_trace

    tr = replay_trace(path, [math.inf])
    n = min(len(tr), limit)
    if n < 1:
        raise UsageError(f"{path}: the trace has no requests")
    t_s = np.asarray(tr.timestamp_ms[:n], dtype=float) / 1e3
    if not np.all(np.isfinite(t_s)):
        raise UsageError(f"{path}: the trace has no timestamps; it cannot be replayed in time")
    inp = np.asarray(tr.input_tokens[:n], dtype=float)
    hit = np.where(inp > 0, np.asarray(tr.hit_tokens[:n, 0], dtype=float) / np.maximum(inp, 1), 0.0)
    if rate is not None and n > 1:
        span = float(np.max(t_s) - np.min(t_s))
        if span > 0:
            t_s = (t_s - np.min(t_s)) * ((n - 1) / span) / rate
    cv = problem.wan.jitter_cv if problem.topology.cross_dc else 0.0
    return replay(
        t_s,
        hit,
        inp,
        np.asarray(tr.output_tokens[:n], dtype=float),
        cv,
        np.random.default_rng(seed),
    )


# -------------------------------------------------------------------------------- hitrate

DEFAULT_BINS = (0.0, 0.9, 0.93, 0.95, 0.97, 0.98, 0.99, 1.0)


def hitrate(
    trace: PathLike,
    *,
    cache_tokens: str | Sequence[float | int | str] | None = None,
    block_tokens: int = 512,
    bins: str | Sequence[float] | None = None,
    warmup_s: float = 0.0,
    anomalous_input_tokens: int = 32768,
    anomalous_output_tokens: int = 500,
    workload_out: PathLike | None = None,
    curve_out: PathLike | None = None,
    max_points: int = 50,
    skip_bad_lines: bool = False,
    trace_format: str = "auto",
    jobs: int = 0,
    made_by: str | None = None,
    warn: Callable[[str], None] | None = None,
) -> HitrateResult:
    """A request trace turned into a workload: hit-rate distributions, lengths, rate, and what
    prefix-cache capacity does to them.

    Parameters
    ----------
    trace : Mooncake-style JSONL (hash ids) or CSV (cached tokens); ``.gz`` is read too.
    cache_tokens : [tokens] LRU capacities to replay (``"64k,unbounded"`` or a list); default
        unbounded. The workload profile uses the first.
    block_tokens : [tokens] per hash-id block.
    bins : hit-rate bin edges from 0 to 1 (default: the brief's seven bins).
    warmup_s : [s] from the first arrival that warm the cache, left out of the statistics.
    anomalous_input_tokens, anomalous_output_tokens : [tokens] a request is anomalous with
        input >= the first and output < the second.
    workload_out : write a workload profile (YAML) there; its name is the file's stem.
    curve_out : write the capacity curve (CSV) there.
    max_points : points per length distribution in the workload profile.
    skip_bad_lines : skip and count malformed lines instead of stopping.
    trace_format : ``auto`` (from the suffix), ``jsonl`` or ``csv``.
    jobs : parser processes for big JSONL traces (0: usable CPUs, at most 4).
    made_by : how the workload profile says it was made (default: this call).
    warn : receives diagnostics (default: :class:`PddplanWarning` warnings).
    """
    from pddplan.results.hitrate import HitrateResult, build_report
    from pddplan.trace.analysis import analyze
    from pddplan.trace.records import detect_format
    from pddplan.trace.replay import UNBOUNDED, parse_capacities, replay_trace
    from pddplan.trace.workload import workload_document, write_workload

    say = warn or _warn
    trace = Path(trace)
    if not trace.is_file():
        raise UsageError(f"trace file not found: {trace}")
    for opt, value, least in (
        ("block_tokens", block_tokens, 1),
        ("anomalous_input_tokens", anomalous_input_tokens, 1),
        ("anomalous_output_tokens", anomalous_output_tokens, 1),
        ("max_points", max_points, 2),
        ("jobs", jobs, 0),
    ):
        if value < least:
            raise OptionError(opt, f"must be >= {least}, not {value}")
    if not math.isfinite(warmup_s) or warmup_s < 0:
        raise OptionError("warmup_s", f"must be a number of seconds >= 0, not {warmup_s:g}")
    edges = _bins(bins)
    caps_text = (
        cache_tokens
        if cache_tokens is None or isinstance(cache_tokens, str)
        else ",".join(str(c) for c in cache_tokens)
    )
    if detect_format(trace, trace_format) == "csv" and caps_text:
        raise OptionError(
            "cache_tokens",
            "needs a JSONL trace with hash_ids; a CSV trace carries its own cached tokens",
        )
    caps = parse_capacities(caps_text, block_tokens) if caps_text else [UNBOUNDED]
    replay = replay_trace(
        trace,
        caps,
        block_tokens=block_tokens,
        fmt=trace_format,
        skip_bad_lines=skip_bad_lines,
        jobs=jobs or None,
        warn=say,
    )
    analysis = analyze(
        replay,
        warmup_s=warmup_s,
        edges=edges,
        anomalous_input_tokens=anomalous_input_tokens,
        anomalous_output_tokens=anomalous_output_tokens,
    )
    if replay.bad_lines:
        first = replay.bad_line_messages[0] if replay.bad_line_messages else ""
        say(f"skipped {replay.bad_lines} bad lines (first: {first})")
    workload_file = curve_file = None
    if workload_out is not None:
        out_path = Path(workload_out)
        label = "an unbounded" if math.isinf(caps[0]) else f"a {int(caps[0])}-token LRU"
        cmd = made_by or f"pddplan.hitrate({str(trace)!r})"
        s = analysis.stats
        cache = "logged cached tokens" if replay.format == "csv" else f"{label} prefix cache"
        source = (
            f"request trace {trace.name} ({replay.format}, {s.requests} requests"
            + (f" after a {warmup_s:g} s warm-up" if warmup_s else "")
            + f"), hit rates from {'the ' if replay.format == 'csv' else ''}{cache}"
            + (f" in {block_tokens}-token blocks" if replay.format == "jsonl" else "")
            + f"; anomalous = input >= {anomalous_input_tokens} and output < "
            f"{anomalous_output_tokens} tokens; made by: {cmd}"
        )
        doc = workload_document(
            out_path.stem,
            source,
            analysis.workload_inputs(0),
            edges=analysis.edges,
            anomalous_input_tokens=anomalous_input_tokens,
            anomalous_output_tokens=anomalous_output_tokens,
            max_points=max_points,
            notes="input_tokens, output_tokens and hit_rate describe the regular requests; "
            "anomalous ones are their own class. Lengths are empirical (weights = request "
            "counts); rate_rps = (requests - 1) / span of their arrivals.",
        )
        write_workload(out_path, doc, header=f"Written by {cmd}")
        workload_file = str(out_path)
    if curve_out is not None:
        analysis.curve.to_csv(Path(curve_out))
        curve_file = str(curve_out)
    built = build_report(analysis, workload_file=workload_file, curve_file=curve_file)
    return HitrateResult(analysis, workload_file, curve_file, built)


def _bins(bins: str | Sequence[float] | None) -> list[float]:
    if bins is None:
        return list(DEFAULT_BINS)
    if isinstance(bins, str):
        try:
            edges = [float(x) for x in bins.split(",") if x.strip()]
        except ValueError:
            raise OptionError(
                "bins", f"{bins!r} is not a comma-separated list of numbers"
            ) from None
    else:
        try:
            edges = [float(x) for x in bins]
        except (TypeError, ValueError):
            raise OptionError("bins", f": {bins!r} is not a list of numbers") from None
    if not all(math.isfinite(e) and 0.0 <= e <= 1.0 for e in edges):
        raise OptionError("bins", f": every edge must be a finite number in [0, 1], not {bins!r}")
    if len(edges) > 10_001:
        raise OptionError("bins", f": at most 10001 edges, not {len(edges)}")
    return edges


# ------------------------------------------------------------------------------ calibrate


def calibrate(
    measurements: PathLike,
    *,
    chip: str,
    model: str,
    write: PathLike | None = None,
    chunk_size_tokens: int = 8192,
    fix: Sequence[str] = (),
    profiles: Profiles = None,
    warn: Callable[[str], None] | None = None,
) -> CalibrateResult:
    """Fit a chip's efficiency derates to measured prefill latencies and decode step times.

    Parameters
    ----------
    measurements : CSV of measurements (docs/calibrate.md).
    chip, model : the chip profile whose derates are fitted and the model measured.
    write : write the calibrated chip profile (``.yaml``; its name is the file's stem).
    chunk_size_tokens : [tokens] prefill chunk of the measured engine.
    fix : derates held at the chip's values.
    warn : receives diagnostics (default: :class:`PddplanWarning` warnings).
    """
    from pddplan.calibrate import (
        PARAMETER_NAMES,
        TTFT_OFFSET,
        calibrated_chip,
        default_derates,
        fit_derates,
        instance_predictor,
        read_measurements,
        structural_reasons,
    )
    from pddplan.deployment import Instance, model_numbers
    from pddplan.results.calibrate import CalibrateResult, calibrate_report

    say = warn or _warn
    fix = [fix] if isinstance(fix, str) else list(fix)
    for name in fix:
        if name not in PARAMETER_NAMES:
            raise OptionError(
                "fix", f": {name!r} is not a derate (allowed: {', '.join(PARAMETER_NAMES)})"
            )
    if isinstance(chunk_size_tokens, bool) or chunk_size_tokens < 1:
        raise OptionError("chunk_size_tokens", f"must be >= 1, not {chunk_size_tokens!r}")
    write_path = None if write is None else Path(write)
    if write_path is not None and write_path.suffix != ".yaml":
        raise OptionError("write", f": the profile file must end in .yaml, not {write_path.name!r}")
    reg = _registry(profiles)
    chip_spec = reg.load("chip", chip)
    model_spec = reg.load("model", model)
    path = Path(measurements)
    data = read_measurements(path)
    numbers = model_numbers(model_spec)
    for tp in sorted({int(t) for t in data.tensor_parallel}):
        if not Instance(chip_spec, numbers, tp).fits:
            say(
                f"{model} weights do not fit on {tp} x {chip} (rows with tp = {tp}); "
                "check the model and the tp column"
            )
    structural = structural_reasons(data, chip_spec, numbers)
    if "layer_latency_us" in fix:
        # the per-step latency is then fitted as step_overhead_ms instead
        structural.pop("step_overhead_ms", None)
    import numpy as np

    try:
        fit = fit_derates(
            data.latency_s,
            instance_predictor(chip_spec, numbers, data, chunk_size_tokens),
            default_derates(chip_spec),
            fixed=fix,
            nuisance=[TTFT_OFFSET.name] if data.is_ttft.any() else [],
            unidentifiable=structural,
        )
    except (np.linalg.LinAlgError, ValueError) as exc:
        raise ProfileError(
            f"the measurements cannot be fitted ({exc}); check the rows' values",
            file=str(path),
        ) from None
    if not fit.success:
        say(f"the fit did not converge: {fit.message}")
    profile_file = None
    if write_path is not None:
        profile = calibrated_chip(
            chip_spec, fit, write_path.stem, str(path), model, chunk_size_tokens
        )
        _write_profile(write_path, profile.model_dump(mode="json"))
        profile_file = str(write_path)
    built = calibrate_report(data, fit, chip, model, chunk_size_tokens, str(path), profile_file)
    return CalibrateResult(fit, data, profile_file, built)


def calibrate_link(
    measurements: PathLike,
    *,
    link: str,
    write: PathLike | None = None,
    fix: Sequence[str] = (),
    profiles: Profiles = None,
) -> LinkCalibrateResult:
    """Fit a link's transfer parameters to measured transfer latencies (docs/links.md).

    Parameters
    ----------
    measurements : CSV of transfers: payload_bytes, latency_s and optional
        concurrent_transfers, statistic, samples, source.
    link : the link profile whose parameters are fitted.
    write : write the calibrated link profile (``.yaml``; its name is the file's stem).
    fix : parameters held at the profile's values.
    """
    from pddplan.calibrate.link import calibrated_link, fit_link, read_link_measurements
    from pddplan.results.calibrate import LinkCalibrateResult, link_calibrate_report

    fix = [fix] if isinstance(fix, str) else list(fix)
    write_path = None if write is None else Path(write)
    if write_path is not None and write_path.suffix != ".yaml":
        raise OptionError("write", f": the profile file must end in .yaml, not {write_path.name!r}")
    spec = _registry(profiles).load("link", link)
    path = Path(measurements)
    data = read_link_measurements(path)
    warnings = list(data.skipped)
    import numpy as np

    try:
        fit = fit_link(spec, data, fix)
    except (np.linalg.LinAlgError, ValueError) as exc:
        raise ProfileError(
            f"the measurements cannot be fitted ({exc}); check the rows' values",
            file=str(path),
        ) from None
    if fit.not_identified:
        warnings.append(
            "not identified by these rows (kept at the profile's values): "
            + ", ".join(fit.not_identified)
        )
    profile_file = None
    if write_path is not None:
        prof = calibrated_link(fit, write_path.stem, str(path))
        _write_profile(write_path, prof.model_dump(mode="json"), "link", LINK_PROFILE_HEADER)
        profile_file = str(write_path)
    built = link_calibrate_report(data, fit, link, str(path), profile_file, warnings)
    return LinkCalibrateResult(fit, profile_file, built)


PROFILE_HEADER = (
    "# Calibrated chip profile written by `pddplan calibrate` (format: profiles/README.md).\n"
    "# Only the derates differ from the chip it was fitted from; see derates.source.\n"
)
LINK_PROFILE_HEADER = (
    "# Calibrated link profile written by `pddplan calibrate --link` (format: profiles/README.md).\n"
    "# Only the fitted keys differ from the link it was fitted from; see source.\n"
)


def _write_profile(
    path: Path, data: dict[str, Any], kind: str = "chip", header: str = PROFILE_HEADER
) -> None:
    """Write a profile as YAML and check that the loader reads it back as ``kind``."""
    import yaml

    from pddplan.io.loader import load_file

    text = header + yaml.safe_dump(
        data, sort_keys=False, allow_unicode=True, width=100, default_flow_style=False
    )
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise OptionError("write", f": cannot write {path}: {exc.strerror}") from None
    load_file(path, kind)


# ------------------------------------------------------------------------------- transfer


def transfer(
    link: str,
    *,
    payload_bytes: float | Sequence[float] | None = None,
    concurrent: int = 1,
    profiles: Profiles = None,
) -> TransferResult:
    """Mean, p50, p90 and p99 time of payloads on a link with ``concurrent`` transfers sharing it.

    Parameters
    ----------
    link : a link profile name.
    payload_bytes : [bytes] one payload or several (default: 1 MB to 10 GB).
    concurrent : transfers on the line at once, this one included.
    """
    from pddplan.deployment import LinkNumbers
    from pddplan.transfer import DEFAULT_SIZES_BYTES, transfer_times

    if isinstance(concurrent, bool) or not isinstance(concurrent, int) or concurrent < 1:
        raise OptionError("concurrent", f"must be a whole number >= 1, not {concurrent!r}")
    if payload_bytes is None:
        sizes = list(DEFAULT_SIZES_BYTES)
    elif isinstance(payload_bytes, (int, float)):
        sizes = [float(payload_bytes)]
    else:
        sizes = [float(x) for x in payload_bytes]
    if concurrent > 10**6:
        raise OptionError("concurrent", f"must be at most 1000000, not {concurrent!r}")
    for size in sizes:
        _number_in("payload_bytes", size, 1.0, 1e15)
    spec = _registry(profiles).load("link", link)
    return transfer_times(LinkNumbers.of(spec), sizes, concurrent)
