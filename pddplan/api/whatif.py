"""``sweep`` (a grid of overrides) and ``breakeven`` (the value at which PDD's BCR equals a
baseline's)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pddplan.api.command_options import (
    BreakevenOptions,
    SweepOptions,
    TopologyBreakevenOptions,
)
from pddplan.api.options import validate
from pddplan.api.scenario import (
    Overrides,
    PathLike,
    Profiles,
    ScenarioLike,
    inventory_on_topology,
    load,
    with_inventory,
)
from pddplan.errors import OptionError
from pddplan.executors import Progress

if TYPE_CHECKING:
    from pddplan.results import BreakevenResult, SweepResult
    from pddplan.results.whatif import TopologyBreakevenResult
    from pddplan.topology.inputs import TopologySource

Axes = Mapping[str, Sequence[Any]] | Sequence[tuple[str, Sequence[Any]]]

_S = SweepOptions()
_B = BreakevenOptions()


def _axes(axes: Axes) -> list[Any]:
    from pddplan.whatif import Axis

    items = list(axes.items()) if isinstance(axes, Mapping) else list(axes)
    if not items:
        raise OptionError("axes", "needs at least one PATH with values")
    out = []
    for item in items:
        if not (isinstance(item, tuple | list) and len(item) == 2 and isinstance(item[0], str)):
            raise OptionError(
                "axes",
                "expects {PATH: values} or (PATH, values) pairs, not "
                f"{item!r} (pddplan.api.values.parse_axes reads PATH=V1,V2 texts)",
            )
        path, values = item
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


def sweep(
    scenario: ScenarioLike = None,
    axes: Axes = (),
    *,
    overrides: Overrides = None,
    profiles: Profiles = None,
    baselines: bool = _S.baselines,
    jobs: int = _S.jobs,
    progress: Progress | None = None,
    executor: str = _S.executor,
    scheduler: str | None = _S.scheduler,
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

    o = validate(
        SweepOptions, baselines=baselines, jobs=jobs, executor=executor, scheduler=scheduler
    )
    ax = _axes(axes)
    src, ov = _sweep_source(scenario, overrides, profiles)
    check_axes(src, ov, ax)
    if o.executor != "local" or o.scheduler is not None:
        from pddplan.executors import make_executor
        from pddplan.whatif import sweep_on

        with make_executor(o.executor, jobs=o.jobs, scheduler=o.scheduler) as ex:
            rows = sweep_on(ex, src, ov, ax, baselines=o.baselines)
    else:
        rows = sweep_rows(src, ov, ax, jobs=o.jobs, progress=progress, baselines=o.baselines)
    return SweepResult({a.path: list(a.values) for a in ax}, rows)


def topology_source(scenario: ScenarioLike, profiles: Profiles) -> TopologySource | None:
    """The source of ``scenario`` when it is a topology file (``sites:``), else None."""
    from pddplan.api.scenario import LoadedScenario, registry
    from pddplan.topology.inputs import TopologySource

    if scenario is None or isinstance(scenario, LoadedScenario):
        return None
    return TopologySource.open(str(scenario), registry(profiles))


def _sweep_source(
    scenario: ScenarioLike, overrides: Overrides, profiles: Profiles
) -> tuple[Any, Mapping[str, Any]]:
    """What a sweep evaluates and its fixed overrides: a topology file's source (its points
    planned by the topology planner), or the loaded scenario's."""
    from pddplan.io.overrides import copy_overrides

    tsrc = topology_source(scenario, profiles)
    if tsrc is not None:
        ov = copy_overrides(overrides)
        for prefix, option in (("inventory.", "own"), ("limits.max_chips.", "max_chips")):
            if any(k.startswith(prefix) for k in ov):
                raise inventory_on_topology(option)
        tsrc.resolve(ov)
        return tsrc, ov
    ls = load(scenario, overrides, profiles)
    return ls.source, ls.overrides


def breakeven(
    scenario: ScenarioLike = None,
    *,
    param: str | None = _B.param,
    against: str = _B.against,
    lo: float | None = _B.lo,
    hi: float | None = _B.hi,
    tolerance: float = _B.tolerance,
    overrides: Overrides = None,
    profiles: Profiles = None,
    own: Mapping[str, int] | None = None,
    max_chips: Mapping[str, int] | None = None,
    progress: Progress | None = None,
) -> BreakevenResult:
    """The value of ``param`` in ``[lo, hi]`` at which PDD's BCR equals a baseline's.

    Parameters
    ----------
    param : dotted PATH of the parameter (see :func:`sweep`); default: the hourly price of the
        scenario's first main-decode (MD) chip, ``chips.CHIP.price_usd_per_hour``.
    against : ``same-dc`` or ``no-relay``.
    lo, hi : the search interval (default: a quarter and four times the parameter's value in
        the scenario).
    tolerance : [-] bisection stops within this fraction of the interval.
    own, max_chips : owned chips and inventory limits, chip name -> chips, checked as ``solve``
        checks them (:func:`~pddplan.api.scenario.chip_limits`) and put into the scenario.
    progress : called as ``progress(done, total)`` after each solve
        (:data:`pddplan.executors.Progress`).
    """
    from pddplan.results.whatif import BreakevenResult
    from pddplan.whatif import breakeven_on, default_breakeven_param

    validate(BreakevenOptions, param=param, against=against, tolerance=tolerance)
    ls, _limits = with_inventory(load(scenario, overrides, profiles), max_chips, own)
    if param is None:
        param = default_breakeven_param(ls.resolved)
    if lo is None or hi is None:
        from pddplan.io.overrides import check_path, current_value

        check_path(param, ls.resolved)
        cur = current_value(ls.resolved, param)
        if not isinstance(cur, int | float) or isinstance(cur, bool) or cur <= 0:
            raise OptionError(
                "lo", f"and hi are needed: {param} has no positive number to search around"
            )
        lo = cur / 4 if lo is None else lo
        if hi is None:
            hi = cur * 4
            if param == "link.bandwidth_gbit_per_s":  # a line is priced up to its top tier
                hi = min(hi, ls.resolved.link.priced_up_to_gbit_per_s)
    o = validate(BreakevenOptions, param=param, against=against, lo=lo, hi=hi, tolerance=tolerance)
    assert o.lo is not None and o.hi is not None and o.param is not None
    if not o.hi > o.lo:
        raise OptionError("hi", "must be above lo")
    be = breakeven_on(
        ls.source, ls.overrides, o.param, o.against, o.lo, o.hi, o.tolerance, progress
    )
    return BreakevenResult(
        be.path,
        be.against,
        be.lo,
        be.hi,
        be.value,
        be.ratio_lo,
        be.ratio_hi,
        be.iterations,
        be.jump,
    )


def breakeven_topology(
    scenario: PathLike,
    *,
    param: str,
    lo: float | None = None,
    hi: float | None = None,
    against_cost_usd_per_hour: float | None = None,
    tolerance: float = _B.tolerance,
    overrides: Overrides = None,
    profiles: Profiles = None,
    progress: Progress | None = None,
) -> TopologyBreakevenResult:
    """The value of ``param`` (a PATH on a topology file's keys, as :func:`sweep` takes it) in
    ``[lo, hi]`` at which the topology's least-cost plan changes its structure (a pipeline's
    P or MD site, its share, the lines it leases) or, with ``against_cost_usd_per_hour``, at
    which its cost crosses that target; bisected with the topology planner
    (docs/topology.md, "Break-even").

    Parameters
    ----------
    param : the PATH searched (``lines.a-b.link_numbers.price_usd_per_month``,
        ``traffic.s.rate_rps``).
    lo, hi : the search interval (default: a quarter and four times the value the file gives
        ``param``; needed where it gives none).
    against_cost_usd_per_hour : [USD/h] the target cost (None: the structure question).
    tolerance : [-] bisection stops within this fraction of the interval.

    Raises
    ------
    OptionError : a file that is not a topology, no interval, ``hi`` not above ``lo``.
    OverrideError : a PATH or bound the topology does not allow (names it).
    """
    from pddplan.api.scenario import registry
    from pddplan.io.overrides import copy_overrides, topology_value
    from pddplan.results.whatif import TopologyBreakevenResult
    from pddplan.topology.inputs import TopologySource
    from pddplan.whatif.topology import topology_breakeven

    validate(
        TopologyBreakevenOptions,
        param=param,
        tolerance=tolerance,
        against_cost_usd_per_hour=against_cost_usd_per_hour,
    )
    src = TopologySource.open(str(scenario), registry(profiles))
    if src is None:
        raise OptionError(
            "scenario", "must be a topology file (sites:); `breakeven` compares a two-site plan"
        )
    ov = copy_overrides(overrides)
    if lo is None or hi is None:
        cur = ov.get(param, topology_value(src.doc.data, param))
        if not isinstance(cur, int | float) or isinstance(cur, bool) or cur <= 0:
            raise OptionError(
                "lo", f"and hi are needed: the topology gives {param} no positive number"
            )
        lo = cur / 4 if lo is None else lo
        hi = cur * 4 if hi is None else hi
    o = validate(BreakevenOptions, param=param, lo=lo, hi=hi, tolerance=tolerance)
    assert o.lo is not None and o.hi is not None
    if not o.hi > o.lo:
        raise OptionError("hi", "must be above lo")
    for v in (o.lo, o.hi):  # a bad PATH or bound: one line before anything is planned
        src.resolve({**ov, param: v})
    be = topology_breakeven(
        src,
        ov,
        param,
        o.lo,
        o.hi,
        against_cost_usd_per_hour=against_cost_usd_per_hour,
        tol=o.tolerance,
        progress=progress,
    )
    return TopologyBreakevenResult(be)
