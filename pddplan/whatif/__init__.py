"""What-if questions: parameter sweeps, break-even points and chip ranking by role.

A swept PATH is a dotted key into the scenario as a user sees it (see :mod:`pddplan.io.overrides`):
a scenario key (``rate_rps``, ``sla.ttft_p99_s``), a key of a profile the scenario names
(``link.bandwidth_gbit_per_s``, ``chips.gpu-b.price.rental_usd_per_hour``) or a short form
(``chips.NAME.price_usd_per_hour``). Every point is validated from the scenario's parsed
document in memory, exactly as the file with those overrides would be.

A topology file (``sites:``) is swept the same way over its own keys (an entry of ``sites``,
``lines`` or ``traffic`` by name or index: ``traffic.north.rate_rps``,
:func:`pddplan.io.overrides.topology_patch`): each point is planned by the topology planner
(:func:`pddplan.topology.plan_topology`), its row the plan's summary
(:meth:`pddplan.topology.TopologyPlan.summary_row`).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pddplan import defaults, limits, tiers
from pddplan.errors import InfeasibleError, OptionError, PddplanError, UsageError
from pddplan.io.loader import Registry, ResolvedScenario, scenario_chip
from pddplan.io.overrides import (
    ALIASES,
    PROFILE_ROOTS,
    ScenarioSource,
    check_distinct_keys,
    check_path,
    known_paths,
    merge,
    patch_for,
)
from pddplan.solver import ratio
from pddplan.topology.inputs import TopologySource, is_topology_doc

__all__ = [
    "ALIASES",
    "PROFILE_ROOTS",
    "Axis",
    "BreakEven",
    "breakeven",
    "breakeven_on",
    "check_path",
    "known_paths",
    "merge",
    "parse_set",
    "parse_values",
    "patch_for",
    "rank_chips",
    "ratio_jump",
    "reference_row",
    "run_sweep",
    "solve_point",
    "sweep_rows",
    "validate_axes",
]


@dataclass(frozen=True)
class Axis:
    path: str
    values: list[Any]


def parse_values(text: str, path: str = "") -> list[Any]:
    """``1,2,3`` or ``lo:hi:step`` (inclusive of ``hi`` within rounding) or words."""
    where = path or "the value"
    text = text.strip()
    if not text:
        raise UsageError(f"{where} needs at least one value after '='")
    if text.count(":") == 2 and "," not in text:
        try:
            lo, hi, step = (float(x) for x in text.split(":"))
        except ValueError:
            raise UsageError(f"{where}: range {text!r} must be lo:hi:step with numbers") from None
        if not all(math.isfinite(x) for x in (lo, hi, step)):
            raise UsageError(f"{where}: range {text!r} must have finite lo, hi and step")
        if step <= 0 or hi < lo:
            raise UsageError(f"{where}: range {text!r} needs step > 0 and hi >= lo")
        n = math.floor((hi - lo) / step + 1e-9) + 1
        limits.GRID_POINTS.check(n, f"{where}: range {text!r} has too many values")
        return [_clean(lo + i * step) for i in range(n)]
    out = [_scalar(v.strip()) for v in text.split(",")]
    for v in out:
        if isinstance(v, float) and not math.isfinite(v):
            raise UsageError(f"{where}: {v!r} is not a finite number")
    return out


def _clean(x: float) -> float | int:
    r = round(x, 12)
    return int(r) if float(r).is_integer() and abs(r) < 1e15 else r


def _scalar(v: str) -> Any:
    for conv in (int, float):
        try:
            return conv(v)
        except ValueError:
            pass
    if v in ("true", "false"):
        return v == "true"
    return v


def parse_set(expr: str) -> Axis:
    path, sep, vals = expr.partition("=")
    if not sep or not path.strip():
        raise OptionError("axes", f"expects PATH=V1,V2,... or PATH=lo:hi:step, not {expr!r}")
    return Axis(path.strip(), parse_values(vals, path.strip()))


# -------------------------------------------------------------------------------- sweeps


def sweep_points(axes: Sequence[Axis]) -> list[tuple[Any, ...]]:
    return list(itertools.product(*(a.values for a in axes)))


def validate_axes(scenario: str | None, reg: Registry, axes: Sequence[Axis]) -> ResolvedScenario:
    """Check every PATH and every value before any point is solved (raises OverrideError)."""
    src = ScenarioSource.open(scenario, reg)
    check_axes(src, {}, axes)
    return src.base


#: What a sweep evaluates: a two-site scenario's document, or a topology file's.
Source = ScenarioSource | TopologySource


def source_of(doc: Any, registry: Registry) -> Source:
    """The source of a parsed document: a topology file's, or a scenario's."""
    if is_topology_doc(doc):
        return TopologySource(doc=doc, registry=registry)
    return ScenarioSource(doc=doc, registry=registry)


def check_axes(src: Source, overrides: Mapping[str, Any], axes: Sequence[Axis]) -> None:
    """Check that no two PATHs (swept or set) set one key (:func:`~pddplan.io.overrides.
    check_distinct_keys`: a set value under a swept one was dropped, whichever came last), then
    each swept PATH and each of its values, on top of ``overrides``."""
    check_distinct_keys([*map(str, overrides), *(ax.path for ax in axes)])
    if isinstance(src, TopologySource):
        for ax in axes:
            for v in ax.values:
                src.resolve({**overrides, ax.path: v})
        return
    for ax in axes:
        check_path(ax.path, src.resolve(overrides))
        for v in ax.values:
            src.resolve({**overrides, ax.path: v})


def point_row(
    src: Source,
    overrides: Mapping[str, Any],
    axes: Sequence[Axis],
    values: Sequence[Any],
    baselines: bool = True,
) -> dict[str, Any]:
    """One sweep row: the swept values, then the plan's figures or the binding constraint."""
    point = {ax.path: v for ax, v in zip(axes, values, strict=True)}
    row: dict[str, Any] = dict(point)
    if isinstance(src, TopologySource):
        return _topology_row(src, {**overrides, **point}, row)
    try:
        # a row reads the baselines' BCR alone (plan_row): not their final figures; with
        # cache: tiers, at the capacity solve would choose (out.cache)
        out = tiers.solve(
            src.resolve({**overrides, **point}), baselines=baselines, final_baselines=False
        )
    except PddplanError as exc:
        # every plan column, empty: a sweep's table has the same columns whichever points fit
        return _failed_row({**row, **{c: None for c in PLAN_COLUMNS if c not in row}}, exc)
    cache = out.cache
    p = out.plan
    row.update(plan_row(out))
    row["feasible"] = True
    row["binding"] = "; ".join(p.binding)
    if cache is not None:
        row.update({f"cache_{k}": v for k, v in cache.items() if k.endswith("_gb_per_node")})
        row["cache_mean_hit_rate"] = cache["mean_hit_rate"]
        row["cache_usd_per_hour"] = cache["cache_usd_per_hour"]
    return row


def _failed_row(row: dict[str, Any], exc: PddplanError) -> dict[str, Any]:
    """A sweep row whose point has no plan: what binds (an infeasible point) or the error."""
    if isinstance(exc, InfeasibleError):
        row.update(feasible=False, binding=exc.binding or str(exc))
    else:
        row.update(feasible=False, binding=f"error: {exc}")
    return row


def _topology_row(
    src: TopologySource, overrides: Mapping[str, Any], row: dict[str, Any]
) -> dict[str, Any]:
    """A topology sweep row: the topology planner's least-cost plan at the point."""
    from pddplan.topology import plan_topology

    try:
        tp = plan_topology(src.resolve(overrides))
    except PddplanError as exc:
        return _failed_row(row, exc)
    row.update(tp.summary_row())
    row["feasible"] = True
    row["binding"] = ""
    return row


def solve_point(
    scenario: str | None,
    profile_dirs: Sequence[str],
    axes: Sequence[Axis],
    values: Sequence[Any],
    baselines: bool = True,
) -> dict[str, Any]:
    """One sweep row of a scenario given by name or path (its document is parsed once)."""
    return point_row(_source(scenario, tuple(profile_dirs)), {}, axes, values, baselines)


_SOURCE_CACHE: dict[tuple[str | None, tuple[str, ...]], ScenarioSource] = {}


def _source(scenario: str | None, profile_dirs: tuple[str, ...]) -> ScenarioSource:
    """The scenario's parsed document, read once per process."""
    key = (scenario, profile_dirs)
    if key not in _SOURCE_CACHE:
        _SOURCE_CACHE.clear()
        reg = Registry.default([Path(d) for d in profile_dirs])
        _SOURCE_CACHE[key] = ScenarioSource.open(scenario, reg)
    return _SOURCE_CACHE[key]


#: The roles of a plan's columns, in their order.
_ROLES = ("P", "RLD", "MD")
#: The figures of a plan's columns after the roles', in their order (:func:`plan_row`).
_FIGURES = (
    "rate_rps",
    "cost_usd_per_hour",
    "goodput_rps",
    "bcr_requests_per_usd",
    "ttft_p50_s",
    "ttft_p90_s",
    "ttft_p99_s",
    "link_utilization",
    "rld_output_token_share",
)
#: A sweep row's plan columns (:func:`plan_row`), before its BCR ratios to the baselines
#: (``bcr_ratio_vs_<baseline>``, one for each baseline sized there); a point without a plan
#: has them empty.
PLAN_COLUMNS = (
    *(f"{role}_{x}" for role in _ROLES for x in ("chip", "chips_per_instance", "instances")),
    *_FIGURES,
)


def plan_row(out: Any) -> dict[str, Any]:
    """A sweep row's :data:`PLAN_COLUMNS` of an outcome, then its BCR ratios to the baselines."""
    p = out.plan
    row: dict[str, Any] = {}
    for role in _ROLES:
        v = p.roles.get(role)
        row[f"{role}_chip"] = v[0].chip.name if v else None
        row[f"{role}_chips_per_instance"] = v[0].tensor_parallel if v else None
        row[f"{role}_instances"] = v[1] if v else 0
    figures = (
        p.rate_rps,
        p.cost_usd_per_hour,
        p.goodput_rps,
        p.bcr_requests_per_usd,
        *p.prefill.ttft_s[:3],
        p.route.link_utilization,
        p.rld_output_token_share,
    )
    row.update(zip(_FIGURES, figures, strict=True))
    for b in out.baselines:
        row[f"bcr_ratio_vs_{b.topology}"] = ratio(p.bcr_requests_per_usd, b.bcr_requests_per_usd)
    return row


def sweep_rows(
    src: Source,
    overrides: Mapping[str, Any],
    axes: Sequence[Axis],
    jobs: int = 1,
    progress: Callable[[int, int], None] | None = None,
    baselines: bool = True,
) -> list[dict[str, Any]]:
    """Solve every point of the grid; the output order is the grid's order, whatever ``jobs``.

    Each point is one PDD solve plus, with ``baselines``, the two baselines at its rate. The
    overrides of a point are validated from ``src``'s document in memory.
    """
    points = sweep_points(axes)
    rows: list[dict[str, Any]] = []
    if jobs <= 1 or len(points) < 8:
        for i, pt in enumerate(points):
            rows.append(point_row(src, overrides, axes, pt, baselines))
            if progress:
                progress(i + 1, len(points))
        return rows
    from concurrent.futures import ProcessPoolExecutor

    chunk = max(1, min(256, len(points) // (jobs * 8)))
    with ProcessPoolExecutor(
        max_workers=jobs,
        initializer=_init_worker,
        initargs=(src.doc, src.registry, dict(overrides), list(axes), baselines),
    ) as pool:
        for i, row in enumerate(pool.map(_worker_point, points, chunksize=chunk)):
            rows.append(row)
            if progress:
                progress(i + 1, len(points))
    return rows


_WORKER: dict[str, Any] = {}


def _init_worker(
    doc: Any, reg: Registry, overrides: dict[str, Any], axes: list[Axis], baselines: bool
) -> None:
    _WORKER.update(
        src=source_of(doc, reg),
        overrides=overrides,
        axes=axes,
        baselines=baselines,
    )


def _worker_point(values: tuple[Any, ...]) -> dict[str, Any]:
    w = _WORKER
    return point_row(w["src"], w["overrides"], w["axes"], values, w["baselines"])


def sweep_on(
    executor: Any,
    src: Source,
    overrides: Mapping[str, Any],
    axes: Sequence[Axis],
    baselines: bool = True,
) -> list[dict[str, Any]]:
    """:func:`sweep_rows` on an executor (:mod:`pddplan.executors`): chunks of points, rows in
    the grid's order; the same rows as the local loop."""
    points = sweep_points(axes)
    n_chunks = max(1, min(len(points), executor.workers * 4))
    chunks = [points[i::n_chunks] for i in range(n_chunks)]
    shared = {
        "doc": src.doc,
        "registry": src.registry,
        "overrides": dict(overrides),
        "axes": list(axes),
        "baselines": baselines,
    }
    done = executor.map(_chunk_rows, chunks, **shared)
    rows: list[dict[str, Any]] = [{}] * len(points)
    for i, chunk_rows in enumerate(done):
        for j, row in enumerate(chunk_rows):
            rows[i + j * n_chunks] = row
    return rows


def _chunk_rows(
    points: list[tuple[Any, ...]],
    *,
    doc: Any,
    registry: Registry,
    overrides: dict[str, Any],
    axes: list[Axis],
    baselines: bool,
) -> list[dict[str, Any]]:
    src = source_of(doc, registry)
    return [point_row(src, overrides, axes, pt, baselines) for pt in points]


def run_sweep(
    scenario: str | None,
    profile_dirs: Sequence[str],
    axes: Sequence[Axis],
    jobs: int = 1,
    progress: Callable[[int, int], None] | None = None,
    baselines: bool = True,
) -> list[dict[str, Any]]:
    """:func:`sweep_rows` of a scenario given by name or path."""
    src = _source(scenario, tuple(profile_dirs))
    return sweep_rows(src, {}, axes, jobs, progress, baselines)


# ------------------------------------------------------------------------------ break-even


@dataclass(frozen=True)
class BreakEven:
    """Where PDD's BCR ratio to a baseline's crosses 1 in ``[lo, hi]`` (``value``; None: it
    does not). ``jump``: the ratios at the two ends of the final bracket, where the ratio jumps
    over 1 there (:func:`ratio_jump`: a fleet step) rather than equals 1; None otherwise."""

    path: str
    against: str
    lo: float
    hi: float
    value: float | None
    ratio_lo: float
    ratio_hi: float
    iterations: int
    jump: tuple[float, float] | None = None


def bcr_ratio_at(
    src: ScenarioSource,
    overrides: Mapping[str, Any],
    path: str,
    value: float,
    against: str,
) -> float:
    # the baseline's BCR alone is read: not its final figures
    out = tiers.solve(src.resolve({**overrides, path: value}), final_baselines=False)
    for b in out.baselines:
        if b.topology == against:
            return ratio(out.plan.bcr_requests_per_usd, b.bcr_requests_per_usd)
    why = out.unsized_baselines.get(against)
    if why is not None:  # the baseline exists, but no fleet of it fits at this value
        raise InfeasibleError(
            f"breakeven: at {path} = {value:g} the {against} baseline cannot be sized "
            f"({why}); choose --lo and --hi where it can"
        )
    needs = {
        "same-dc": "it needs a 'baseline:' section naming its chips",
        "no-relay-rld": "it needs anomalous requests that RLD finishes "
        "(workload.anomalous.share above 0, serving.anomalous_filter on)",
    }
    why = needs.get(against, "no fleet of it was sized")
    raise UsageError(f"the scenario has no {against} baseline: {why}")


def default_breakeven_param(rs: ResolvedScenario) -> str:
    """The parameter ``breakeven`` searches when none is named: the hourly price of the
    scenario's first main-decode (MD) chip, ``chips.CHIP.price_usd_per_hour`` (a key every
    scenario has, whatever chips it names)."""
    from pddplan.spec.scenario import role_chip_names

    return f"chips.{role_chip_names(rs, 'MD')[0]}.price_usd_per_hour"


def breakeven(
    scenario: str | None,
    reg: Registry,
    path: str,
    against: str,
    lo: float,
    hi: float,
    tol: float = defaults.BREAKEVEN_TOLERANCE,
) -> BreakEven:
    """:func:`breakeven_on` a scenario given by name or path."""
    return breakeven_on(ScenarioSource.open(scenario, reg), {}, path, against, lo, hi, tol)


def breakeven_on(
    src: ScenarioSource,
    overrides: Mapping[str, Any],
    path: str,
    against: str,
    lo: float,
    hi: float,
    tol: float = defaults.BREAKEVEN_TOLERANCE,
    progress: Callable[[int, int], None] | None = None,
) -> BreakEven:
    """The value of ``path`` in ``[lo, hi]`` at which PDD's BCR equals the baseline's.

    ``progress(done, total)`` is told of each solve: the two ends, then at most
    ``ceil(log2(1 / tol))`` bisection steps (the total; the last call has done = total).

    Bisection on ``ratio(x) - 1``; needs a sign change between ``lo`` and ``hi``. The ratio is a
    step function of the parameter (instance counts are whole), so the crossing is located to
    within ``tol`` of the interval, at the step where the ratio crosses 1; where it jumps over 1
    there (:func:`ratio_jump`), ``jump`` holds the ratios either side.
    """
    check_path(path, src.resolve(overrides))
    steps = bisection_steps(tol)
    total = 2 + steps

    def tell(done: int) -> None:
        if progress:
            progress(done, total)

    tell(0)
    f_lo = bcr_ratio_at(src, overrides, path, lo, against) - 1.0
    tell(1)
    f_hi = bcr_ratio_at(src, overrides, path, hi, against) - 1.0
    tell(2)
    if f_lo == 0:
        tell(total)
        return BreakEven(path, against, lo, hi, lo, f_lo + 1, f_hi + 1, 0)
    if f_lo * f_hi > 0:
        tell(total)
        return BreakEven(path, against, lo, hi, None, f_lo + 1, f_hi + 1, 0)

    seen = {lo: f_lo + 1.0, hi: f_hi + 1.0}  # the ratio at every value solved

    def side(x: float) -> int:
        seen[x] = bcr_ratio_at(src, overrides, path, x, against)
        fm = seen[x] - 1.0
        return 0 if fm == 0 else (1 if (fm > 0) == (f_lo > 0) else -1)

    a, b, it = bisect_side(side, lo, hi, tol, steps, lambda i: tell(2 + i))
    tell(total)
    jump = ratio_jump(seen, a, b)
    return BreakEven(path, against, lo, hi, (a + b) / 2, f_lo + 1, f_hi + 1, it, jump)


#: A bracket's ratios differ by a jump when by more than this many times the change the ratio
#: makes over the bracket's width at its slope beside the bracket (a continuous ratio changes by
#: about 1 times that; halving the bracket halves it, and never halves a jump).
JUMP_FACTOR = 2.0


def ratio_jump(seen: Mapping[float, float], a: float, b: float) -> tuple[float, float] | None:
    """The ratios ``(at a, at b)`` where the ratio jumps between the final bracket's ends
    ``a < b`` (``seen``: the ratio at every value solved), else None.

    The bracket is within the search tolerance of the interval; a ratio continuous there changes
    across it by about its slope times its width. The slope is read on the nearest segment of
    solved values beside the bracket (the previous bracket's other half): a change above
    :data:`JUMP_FACTOR` times that is a step (a fleet of whole instances gains one), which no
    value within the tolerance makes equal 1.
    """
    if not a < b:
        return None  # the ratio is 1 at a value solved
    r_a, r_b = seen[a], seen[b]
    if not (math.isfinite(r_a) and math.isfinite(r_b)):
        return None
    xs = sorted(seen)
    beside = [(xs[i - 1], a) for i in [xs.index(a)] if i > 0]
    beside += [(b, xs[i + 1]) for i in [xs.index(b)] if i + 1 < len(xs)]
    if not beside:
        return None  # no solved value beside the bracket: nothing to read a slope on
    u, v = min(beside, key=lambda seg: seg[1] - seg[0])
    if not (math.isfinite(seen[u]) and math.isfinite(seen[v])):
        return None
    slope = abs(seen[v] - seen[u]) / (v - u)
    return (r_a, r_b) if abs(r_b - r_a) > JUMP_FACTOR * slope * (b - a) else None


def bisection_steps(tol: float) -> int:
    """The most bisection steps to locate a change within ``tol`` of the interval (at most 60)."""
    return min(60, max(0, math.ceil(math.log2(1.0 / tol)))) if tol > 0 else 60


def bisect_side(
    side: Callable[[float], int],
    lo: float,
    hi: float,
    tol: float,
    steps: int,
    tell: Callable[[int], None] | None = None,
) -> tuple[float, float, int]:
    """The bracket ``(a, b)`` within ``tol`` of ``[lo, hi]`` where ``side`` changes, and the
    steps taken: ``side(x)`` is 1 on ``lo``'s side, -1 on ``hi``'s, 0 exactly at the change
    (``a = b = x``). ``lo`` and ``hi`` must be on different sides. The one bisection of
    ``breakeven``; ``tell(i)`` after step ``i``."""
    a, b = lo, hi
    it = 0
    while b - a > tol * max(abs(hi - lo), 1e-12) and it < steps:
        it += 1
        m = (a + b) / 2
        sm = side(m)
        if tell is not None:
            tell(it)
        if sm == 0:
            a = b = m
            break
        if sm > 0:
            a = m
        else:
            b = m
    return a, b, it


# ------------------------------------------------------------------------------ chip ranking


def rank_chips(
    rs: ResolvedScenario,
    reg: Registry,
    reference: str = defaults.REFERENCE_CHIP,
    tp_options: Sequence[int] = (1, 2, 4, 8, 16),
) -> list[dict[str, Any]]:
    """Four-dimension evaluation of every chip in the catalog, per role.

    For each chip and role the instance size (in ``tp_options``) that is cheapest for the role
    is used (``chips_per_instance`` for prefill, ``decode_chips_per_instance`` for decode).
    Prefill cost per million input tokens prices the mean prefill of the workload's classes at
    full utilization; decode cost per million output tokens prices one decode step at the TPOT
    target for the largest batch that fits in memory and meets TPOT at the mean decode context.
    A chip's advantage on a role is the reference chip's cost over its own (above 1: cheaper).
    Every chip, the reference too, is the scenario's (:func:`~pddplan.io.loader.scenario_chip`:
    with its ``overrides.chips``), priced as the scenario prices a chip beyond those it owns
    (:func:`~pddplan.solver.problem.additional_usd_per_chip_hour`: rented, or bought where
    ``inventory.additional`` is ``buy``); a bought chip without ``price.capex_usd`` is listed
    unpriced, with a note.
    """
    import numpy as np

    from pddplan import timing, units
    from pddplan.deployment import Instance, model_numbers, request_classes
    from pddplan.deployment.caches import cache_numbers
    from pddplan.solver.problem import additional_usd_per_chip_hour
    from pddplan.solver.token_cost import TOKENS_PER_MTOK

    model = model_numbers(rs.model)
    cache = cache_numbers(rs, model)  # the hits' loads where a capacity is set (the solve's)
    sv = rs.scenario.serving
    classes = request_classes(
        rs.workload, sv.hit_rate_points_per_bin, sv.length_points, anomalous_filter=False
    )
    w = classes.weight
    mean_in = float(np.sum(w * classes.input_tokens))
    ctx = timing.md_context_tokens(
        classes.input_tokens, classes.output_tokens, w, np.ones(w.shape, dtype=bool)
    )
    tpot_s = rs.scenario.sla.tpot_ms / 1e3
    rows: list[dict[str, Any]] = []
    for name in reg.index("chip"):
        chip = scenario_chip(rs, reg, name)  # priced as the scenario prices it (its overrides)
        ds = chip.datasheet
        row: dict[str, Any] = {
            "chip": name,
            "bf16_tflops": ds.bf16_tflops,
            "memory_gb": ds.memory_gb,
            "memory_bandwidth_tb_per_s": ds.memory_bandwidth_tb_per_s,
            "scaleup_bandwidth_gb_per_s": ds.scaleup_bandwidth_gb_per_s,
            "price_usd_per_hour": additional_usd_per_chip_hour(rs, chip),
        }
        insts = [Instance(chip, model, tp, sv.decode_memory_utilization) for tp in tp_options]
        insts = [i for i in insts if i.fits]
        if not insts:
            row.update(
                chips_per_instance=None, note=f"weights do not fit in {max(tp_options)} chips"
            )
            rows.append(row)
            continue
        # each role gets the instance size that is cheapest for it
        best_p: tuple[float, int] | None = None
        best_d: tuple[float, int, int, int] | None = None
        price = row["price_usd_per_hour"]
        # a size's cost scales with the chip's price, so an unpriced chip (bought, and no
        # capex) picks its sizes at any price: 1 USD/(chip h); its costs are then left blank
        unit_price = 1.0 if price is None else price
        for inst in insts:
            usd_per_s = unit_price * inst.tensor_parallel / units.SECONDS_PER_HOUR
            pre = np.asarray(
                timing.prefill_s(
                    inst,
                    classes.uncached_tokens,
                    classes.cached_tokens,
                    sv.chunk_size_tokens,
                    cache,
                )
            )
            p_cost = usd_per_s * float(np.sum(w * pre)) / mean_in * TOKENS_PER_MTOK
            if best_p is None or p_cost < best_p[0]:
                best_p = (p_cost, inst.tensor_parallel)
            b = inst.max_batch_at_tpot(ctx, tpot_s)
            d_cost = usd_per_s * tpot_s / b * TOKENS_PER_MTOK if b >= 1 else math.inf
            if best_d is None or d_cost < best_d[0]:
                best_d = (d_cost, inst.tensor_parallel, b, inst.max_batch_memory(ctx))
        assert best_p is not None and best_d is not None
        d_cost, d_tp, b, b_mem = best_d
        row.update(
            chips_per_instance=best_p[1],
            prefill_usd_per_mtok_input=best_p[0],
            decode_chips_per_instance=d_tp,
            decode_usd_per_mtok_output=d_cost if math.isfinite(d_cost) else None,
            decode_batch=b,
            decode_batch_memory_limit=b_mem,
            decode_batch_bound_by="memory"
            if b >= 1 and b >= b_mem
            else ("TPOT" if b >= 1 else "TPOT (even batch 1 misses it)"),
            note="",
        )
        if price is None:
            row.update(
                prefill_usd_per_mtok_input=None,
                decode_usd_per_mtok_output=None,
                note="unpriced: no price.capex_usd to amortize, and inventory.additional is buy",
            )
        rows.append(row)
    ref = reference_row(rows, reference)
    for r in rows:
        if ref is None or r.get("prefill_usd_per_mtok_input") is None:
            r.update(prefill_advantage=None, decode_advantage=None, best_role=None)
            continue
        pa = ref["prefill_usd_per_mtok_input"] / r["prefill_usd_per_mtok_input"]
        d_ref, d_own = ref["decode_usd_per_mtok_output"], r["decode_usd_per_mtok_output"]
        # a chip no decode size of which meets TPOT has no decode advantage (it read 0, as if
        # measured, beside a blank decode cost)
        da = d_ref / d_own if d_ref is not None and d_own is not None else None
        best = "prefill" if da is None or pa >= da else "decode"
        r.update(prefill_advantage=pa, decode_advantage=da, best_role=best)
    rows.sort(  # ties by name, not by the profiles' directory order
        key=lambda r: (
            r.get("chips_per_instance") is None,
            -(max(r.get("prefill_advantage") or 0, r.get("decode_advantage") or 0)),
            str(r.get("chip", "")),
        )
    )
    return rows


def reference_row(rows: Sequence[Mapping[str, Any]], reference: str) -> Mapping[str, Any] | None:
    """The reference chip's row of :func:`rank_chips` when it holds an instance of the model and
    is priced (the advantages divide its costs); None otherwise (every advantage is then blank)."""
    return next(
        (
            r
            for r in rows
            if r["chip"] == reference and r.get("prefill_usd_per_mtok_input") is not None
        ),
        None,
    )
