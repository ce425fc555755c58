"""``robust``: the point plan under sampled inputs, the robust plan, and what moves them.

1. Solve the scenario at its point estimate (the point plan) and list every configuration the
   search would size there, with its point-estimate counts.
2. Draw the inputs (:mod:`.inputs`, seeded Latin hypercube) and evaluate, on every sample, the
   point plan's fleet (check_fleet: meets every SLA target or not, its margin, cost and
   goodput) and the least counts each configuration needs (:mod:`.evaluate`). Samples are
   split into chunks that an executor runs (this process, local processes or Dask).
3. The robust plan: per configuration, the counts of least expected cost that cover at least
   ``P N`` samples (:mod:`.search`); configurations are visited cheapest first and dropped once
   their point-estimate cost alone reaches the best robust cost found.
4. Sensitivity: the Spearman rank correlation of each input with the point plan's BCR and with
   its SLA margin over the same samples, and the index that chance alone reaches at this many
   samples (:func:`noise_index`): an input below it is not shown to move either.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from pddplan import tiers
from pddplan.errors import InfeasibleError, OptionError
from pddplan.executors import Progress, make_executor
from pddplan.io.overrides import ScenarioSource
from pddplan.robust.evaluate import (
    Config,
    SamplePrices,
    SampleRecord,
    Setup,
    evaluate_chunk,
    instance,
    mean_prices,
)
from pddplan.robust.inputs import (
    Input,
    NotSampled,
    check_inputs,
    collect_inputs,
    draw,
    sample_overrides,
)
from pddplan.robust.search import (
    CountChoice,
    PointConfig,
    cheapest_counts,
    coverage,
    enumerate_configs,
    point_config,
)
from pddplan.solver import Outcome, Plan, Solver
from pddplan.solver.modes import with_goodput
from pddplan.solver.plan import bcr, build_plan, require_priced, within_limits

#: Chunks per worker: enough to balance uneven samples, few enough to keep overheads small.
CHUNKS_PER_WORKER = 4
#: [-] How far above the point plan's point-estimate cost a configuration's may be for it to be
#: evaluated in the first pass (:func:`_speculated`): a tie, to the rounding of the costs' sums.
SPECULATE_COST_RTOL = 1e-9
#: [-] The point plan's goodput over its rate at and above which no configuration is evaluated
#: in the first pass (:func:`_speculated`): a fleet with that much headroom most often meets
#: its targets at its own counts in enough samples, and then no tie of its cost is read (the
#: inputs' plausible ranges move pdd-paper's point fleet's goodput by about a quarter: 0.75 to
#: 1.12 of its rate from the 5th to the 95th percentile). It places work only: every answer is
#: the same whichever configurations are evaluated ahead.
SPECULATE_HEADROOM = 1.25
#: Chunks of an in-process run told as progress (a chunk is the unit the executor reports).
PROGRESS_CHUNKS = 20


@dataclass(frozen=True)
class RobustPlan:
    outcome: Outcome
    config: Config
    counts: tuple[int, int, int]
    probability: float
    expected_cost_usd_per_hour: float
    cost_usd_per_hour: np.ndarray  # per sample


@dataclass(frozen=True)
class RobustRun:
    """Everything ``robust`` computes (the result layer arranges it)."""

    scenario_name: str
    samples: int
    confidence: float
    seed: int | None
    executor: str
    workers: int
    inputs: list[Input]
    not_sampled: list[NotSampled]
    x: np.ndarray  # (samples, inputs)
    point: Outcome
    meets: np.ndarray
    margin: np.ndarray
    cost_usd_per_hour: np.ndarray
    goodput_rps: np.ndarray
    kv_transfer_max_s: np.ndarray
    robust: RobustPlan | None
    configs_total: int
    #: configurations whose counts the choice of the robust plan compared (the point plan's and
    #: those that could still beat it); a few more may have been computed ahead and not read
    #: (:func:`_speculated`)
    configs_evaluated: int
    sensitivity: list[dict[str, Any]]
    #: [-] the sensitivity index that inputs moving nothing reach by chance
    #: (:func:`noise_index`); rows above it have ``above_noise``
    sensitivity_noise_index: float = math.nan

    @property
    def sla_probability(self) -> float:
        return float(np.mean(self.meets)) if self.meets.size else 1.0

    @property
    def bcr_requests_per_usd(self) -> np.ndarray:
        """Each sample's BCR [requests/USD] (:func:`~pddplan.solver.plan.bcr`)."""
        return _bcrs(self.goodput_rps, self.cost_usd_per_hour)


def _bcrs(goodput_rps: np.ndarray, cost_usd_per_hour: np.ndarray) -> np.ndarray:
    """:func:`~pddplan.solver.plan.bcr` of each sample [requests/USD]."""
    return np.array(
        [bcr(g, c) for g, c in zip(goodput_rps.tolist(), cost_usd_per_hour.tolist(), strict=True)],
        dtype=float,
    )


def run_robust(
    src: ScenarioSource,
    overrides: Mapping[str, Any],
    *,
    samples: int,
    confidence: float,
    seed: int | None,
    executor: str = "local",
    scheduler: str | None = None,
    jobs: int = 1,
    max_chips: Mapping[str, int] | None = None,
    config_limit: int = 64,
    progress: Progress | None = None,
) -> RobustRun:
    if not (0 < confidence < 1):
        raise OptionError("confidence", f"must be between 0 and 1 (exclusive), not {confidence}")
    if samples < 2:
        raise OptionError("samples", f"must be at least 2, not {samples}")
    rs = src.resolve(overrides)
    if rs.scenario.rate_rps is None:
        raise OptionError("rate_rps", "is needed by robust: give it, or rate_rps in the scenario")
    ex = make_executor(executor, jobs=jobs, scheduler=scheduler)
    with ex:
        # the worker processes start, importing the samples' evaluation, while this process
        # checks the inputs and solves the point
        ex.start(evaluate_chunk.__module__, affinity=True)
        inputs, skipped = collect_inputs(rs)
        check_inputs(_Layered(src, overrides), inputs, rs.file)
        limits = dict(max_chips or {})
        out0 = tiers.solve(rs, baselines=False, max_chips=limits)
        plan0 = out0.plan
        rs0 = out0.scenario or rs  # at the cache capacity chosen, with cache: tiers
        require_priced(plan0.cost_usd_per_hour, "the point's plan")  # the study ranks BCRs
        rate0 = plan0.rate_rps
        pb0 = plan0.problem
        solver0 = Solver(pb0)
        cfg0 = point_config(plan0)
        listed = enumerate_configs(solver0, rate0, limit=10_000)
        configs_total = len(listed)
        pcs = [pc for pc in listed if pc.cfg.ident != cfg0.ident][: max(config_limit - 1, 0)]
        md0 = plan0.decode["MD"]
        assert md0 is not None
        pc0 = PointConfig(
            cfg0,
            plan0.cost_usd_per_hour,
            plan0.prefill,
            md0,
            plan0.decode.get("RLD"),
            plan0.prefill.ttft_s,
        )

        x = draw(inputs, samples, seed)
        ovs = sample_overrides(inputs, x)
        setup = Setup(
            doc=src.doc,
            registry=src.registry,
            overrides=dict(overrides),
            topology=pb0.topology,
            max_chips={**pb0.max_chips, **limits},
            token=uuid.uuid4().hex,
            # the samples keep the point's cache capacity, as its fleet is held
            sized=(rs0, rs) if out0.cache is not None else None,
        )
        headroom = plan0.goodput_rps / rate0 if rate0 > 0 else math.inf
        recs, best, evaluated = _search(
            ex, list(enumerate(ovs)), setup, pc0, pcs, confidence, progress, headroom
        )
        ex_name, workers = ex.name, ex.workers
    meets = np.array([r.meets for r in recs], dtype=bool)
    margin = np.array([r.margin for r in recs], dtype=float)
    cost = np.array([r.cost_usd_per_hour for r in recs], dtype=float)
    goodput = np.array([r.goodput_rps for r in recs], dtype=float)
    kv = np.array([r.kv_transfer_max_s for r in recs], dtype=float)
    robust = _robust_plan(best, recs, solver0, rate0, confidence, out0) if best else None
    sens, noise = sensitivity(inputs, x, _bcrs(goodput, cost), margin, meets)
    return RobustRun(
        scenario_name=out0.scenario_name,
        samples=samples,
        confidence=confidence,
        seed=seed,
        executor=ex_name,
        workers=workers,
        inputs=inputs,
        not_sampled=skipped,
        x=x,
        point=out0,
        meets=meets,
        margin=margin,
        cost_usd_per_hour=cost,
        goodput_rps=goodput,
        kv_transfer_max_s=kv,
        robust=robust,
        configs_total=configs_total,
        configs_evaluated=evaluated,
        sensitivity=sens,
        sensitivity_noise_index=noise,
    )


_Best = tuple[PointConfig, CountChoice, np.ndarray]


def _search(
    ex: Any,
    items: list[tuple[int, dict[str, Any]]],
    setup: Setup,
    pc0: PointConfig,
    pcs: list[PointConfig],
    confidence: float,
    progress: Progress | None = None,
    headroom: float = math.inf,
) -> tuple[list[SampleRecord], _Best | None, int]:
    """Evaluate the samples on the executor: the point plan's records, and the cheapest counts
    of each configuration that can still beat the best so far (``(records, best,
    configurations evaluated)``).

    The configurations that can still beat the point plan's robust counts are known only once
    every sample has been evaluated on the point plan (their bound is its expected cost). Where
    the point plan has little headroom (``headroom``, its goodput over its rate), those that
    cost what it costs at the point estimate (:func:`_speculated`) are evaluated in the first
    pass already, beside it, each sample's solver then visited once; a second pass evaluates
    only the configurations that can still beat it and were not. Each configuration's counts
    on a sample are the same whichever pass finds them
    (:func:`~pddplan.robust.evaluate.requirements` is a function of the sample and the
    configuration), and only those that can still beat the best are read, in the same order:
    the answer is the same, whatever was evaluated ahead.

    ``progress`` is told over two passes of the samples; where every configuration is
    evaluated ahead, the first is the only one and counts for both."""
    samples = len(items)
    n_chunks = 1 if ex.workers <= 1 else ex.workers * CHUNKS_PER_WORKER
    if progress is not None:
        n_chunks = max(n_chunks, PROGRESS_CHUNKS)
    chunks = [c for c in (items[i::n_chunks] for i in range(n_chunks)) if c]
    done_after = np.cumsum([len(c) for c in chunks])  # the chunks are within one of equal
    # told over both passes: the point plan's, then the other configurations' (when any)
    total = 2 * samples

    def tick(passes_done: int, passes: int = 1) -> Callable[[int], None] | None:
        if progress is None:
            return None
        report = progress
        report(passes_done * samples, total)
        return lambda done: report(
            passes_done * samples + passes * int(done_after[done - 1]), total
        )

    cfg0 = pc0.cfg
    ahead = _speculated(pc0, pcs, headroom)
    recs = _gather(
        ex.map(
            evaluate_chunk,
            chunks,
            progress=tick(0, 2 if len(ahead) == len(pcs) else 1),
            affinity=True,
            setup=setup,
            point=(cfg0, cfg0.base),
            configs=[cfg0, *(pc.cfg for pc in ahead)],
        ),
        samples,
    )
    prices = mean_prices([_prices(r) for r in recs])
    fits = _inventory(setup.max_chips)
    best: _Best | None = None
    needs0 = np.array([r.needs[0] for r in recs], dtype=float)
    choice0 = cheapest_counts(needs0, _cost_of(cfg0, prices), confidence, fits(cfg0))
    if choice0 is not None:
        best = (pc0, choice0, needs0)
    bound = best[1].expected_cost_usd_per_hour if best else math.inf
    rest = [pc for pc in pcs if prices.fleet_cost_usd_per_hour(pc.cfg, pc.cfg.base) < bound - 1e-9]
    if not rest:
        if progress is not None:
            progress(total, total)
        return recs, best, 1
    # each configuration's needs, by its place among the records' (the first pass's, where it
    # was evaluated ahead, else a second pass's over those left)
    found = {id(pc): (recs, 1 + k) for k, pc in enumerate(ahead)}
    left = [pc for pc in rest if id(pc) not in found]
    if left:
        recs2 = _gather(
            ex.map(
                evaluate_chunk,
                chunks,
                progress=tick(1),
                affinity=True,
                setup=setup,
                point=None,
                configs=[pc.cfg for pc in left],
            ),
            samples,
        )
        found.update((id(pc), (recs2, k)) for k, pc in enumerate(left))
    elif progress is not None:
        progress(total, total)
    for pc in rest:
        of, j = found[id(pc)]
        needs = np.array([r.needs[j] for r in of], dtype=float)
        ch = cheapest_counts(needs, _cost_of(pc.cfg, prices), confidence, fits(pc.cfg))
        if ch is not None and (
            best is None
            or ch.expected_cost_usd_per_hour < best[1].expected_cost_usd_per_hour - 1e-9
        ):
            best = (pc, ch, needs)
    return recs, best, 1 + len(rest)


def _speculated(pc0: PointConfig, pcs: list[PointConfig], headroom: float) -> list[PointConfig]:
    """The configurations evaluated in the first pass, beside the point plan: where its
    ``headroom`` (its goodput over its rate) is below :data:`SPECULATE_HEADROOM`, those whose
    point-estimate cost ties its own (within :data:`SPECULATE_COST_RTOL`); else none.

    The point plan's robust counts are at least its point counts, so at prices near the point
    estimate its expected cost is at least its point cost; where it needs more instances in
    enough samples (a fleet sized at its rate), a tie can still beat it and is evaluated
    whatever pass finds it: pdd-paper, pdd-paper-b30, cache-tiers and the default scenario tie
    every other configuration, agent-diurnal one of 14, long-context none. Where it meets its
    targets at its own counts (more headroom: pdd-paper at 1 or 1.6 req/s, 1.48 and 1.27
    times its rate), no tie is read, and one evaluated ahead is work for nothing."""
    if not headroom < SPECULATE_HEADROOM:
        return []
    bar = pc0.cost_usd_per_hour * (1.0 + SPECULATE_COST_RTOL)
    return [pc for pc in pcs if pc.cost_usd_per_hour <= bar]


def _robust_plan(
    best: _Best,
    recs: list[SampleRecord],
    solver0: Solver,
    rate0: float,
    confidence: float,
    out0: Outcome,
) -> RobustPlan:
    """The robust plan of the best configuration and counts: its plan at the point estimate,
    its coverage and its cost on every sample."""
    pc, ch, needs = best
    rplan = plan_at_point(solver0, pc, ch.counts, rate0, confidence)
    per_sample = np.array(
        [_prices(r).fleet_cost_usd_per_hour(pc.cfg, ch.counts) for r in recs], dtype=float
    )
    return RobustPlan(
        Outcome("rate", rplan, [], "target rate", solver0.pb, [], out0.scenario_name),
        pc.cfg,
        ch.counts,
        float(np.mean(coverage(needs, ch.counts))),
        ch.expected_cost_usd_per_hour,
        per_sample,
    )


class _Layered(ScenarioSource):
    """A source whose every resolve starts from ``overrides`` (for checking inputs on top of
    the caller's overrides). It resolves through the caller's source, so that a profile swap in
    ``overrides`` (``link=...``) is layered once, not again on each nested resolve."""

    def __init__(self, src: ScenarioSource, overrides: Mapping[str, Any]) -> None:
        super().__init__(doc=src.doc, registry=src.registry)
        self._src = src
        self._under = dict(overrides)

    def resolve(self, overrides: Mapping[str, Any] | None = None) -> Any:
        return self._src.resolve({**self._under, **(overrides or {})})


def _gather(chunks: Sequence[list[SampleRecord]], n: int) -> list[SampleRecord]:
    recs: list[SampleRecord | None] = [None] * n
    for chunk in chunks:
        for r in chunk:
            recs[r.index] = r
    assert all(r is not None for r in recs)
    return recs  # type: ignore[return-value]


def _prices(rec: SampleRecord) -> SamplePrices:
    assert rec.prices is not None
    return rec.prices


def _cost_of(cfg: Config, prices: SamplePrices) -> Callable[[tuple[int, int, int]], float]:
    """The expected cost of ``cfg``'s fleet as a function of its counts [USD/h]."""
    return lambda counts: prices.fleet_cost_usd_per_hour(cfg, counts)


def _inventory(limits: Mapping[str, int]) -> Any:
    def for_cfg(cfg: Config) -> Any:
        def fits(counts: tuple[int, int, int]) -> bool:
            return within_limits(cfg.chips(counts), limits)

        return fits

    return for_cfg


def plan_at_point(
    solver: Solver, pc: PointConfig, counts: tuple[int, int, int], rate: float, confidence: float
) -> Plan:
    """The robust fleet as a solver plan at the point estimate, built and priced by the solver's
    plan builder (:func:`~pddplan.solver.plan.build_plan`), for the same report as solve."""
    cfg = pc.cfg
    p = instance(solver, "P", cfg.p)
    m = instance(solver, "MD", cfg.md)
    r = instance(solver, "RLD", cfg.rld)
    assert p is not None and m is not None
    route = solver.route(rate, cfg.routing)
    offs, wts, _ = solver.ttft_offsets(p, route)
    why = f"SLA with probability >= {confidence:g}"
    bound_by = pc.prefill.bound_by if counts[0] == cfg.base[0] else why
    prefill = solver.prefill_sizing(p, counts[0], rate, offs, wts, bound_by)
    _ctx, _md_time, _ext, stall, _rld_time, rld_tokens, extra = solver.decode_load(
        route, m, cfg.mode
    )
    md = replace(
        pc.md,
        instances=counts[2],
        batch_bound_by=pc.md.batch_bound_by if counts[2] == cfg.base[2] else why,
    )
    rld = None
    if r is not None and pc.rld is not None and counts[1] > 0:
        rld = (
            r,
            replace(
                pc.rld,
                instances=counts[1],
                batch_bound_by=pc.rld.batch_bound_by if counts[1] == cfg.base[1] else why,
            ),
        )
    plan = build_plan(
        solver.pb,
        rate_rps=rate,
        route=route,
        mode=cfg.mode,
        prefill=(p, prefill),
        md=(m, md),
        rld=rld,
        md_stall_s=stall,
        rld_tokens=rld_tokens,
        rld_extra_s=extra,
    )
    return with_goodput(solver.finalize(plan))


#: [-] the chance, over the whole table, that some input whose draws move neither figure ranks
#: above the noise index (:func:`noise_index`)
SENSITIVITY_NOISE_LEVEL = 0.05
#: reorderings of the samples' outcomes drawn for :func:`noise_index` (999: the 95th
#: percentile of the maximum falls on a drawn value, ``(B + 1) (1 - level)`` = 950)
SENSITIVITY_PERMUTATIONS = 999
#: the reorderings' seed: the noise index is a figure of the samples, the same on every run
SENSITIVITY_PERMUTATION_SEED = 20261206


def sensitivity(
    inputs: Sequence[Input],
    x: np.ndarray,
    bcr: np.ndarray,
    margin: np.ndarray,
    meets: np.ndarray,
) -> tuple[list[dict[str, Any]], float]:
    """Per input: Spearman rank correlation with the point plan's BCR and SLA margin; the
    index is the larger of the two in absolute value. Sorted, largest first. With them, the
    index chance alone reaches over these samples (:func:`noise_index`); each row's
    ``above_noise`` says whether its index is above it.

    Each row also gives the tornado's bars: the point plan's mean BCR and SLA probability over
    the samples where the input is in its lowest and in its highest decile.
    """
    rows: list[dict[str, Any]] = []
    n = x.shape[0]
    tail = max(1, n // 10)
    y_bcr, y_sla = _sensitivity_outcomes(bcr, margin)
    noise = noise_index(x, y_bcr, y_sla)
    for j, inp in enumerate(inputs):
        col = x[:, j]
        rb, rm = _spearman(col, y_bcr), _spearman(col, y_sla)
        order = np.argsort(col, kind="stable")
        lo, hi = order[:tail], order[n - tail :]
        index = max(abs(rb), abs(rm))
        rows.append(
            {
                "input": inp.path,
                "index": index,
                "above_noise": bool(index > noise),
                "bcr_rank_correlation": rb,
                "sla_margin_rank_correlation": rm,
                "value_low_decile": float(np.mean(col[lo])),
                "value_high_decile": float(np.mean(col[hi])),
                "bcr_low_decile_requests_per_usd": float(np.mean(y_bcr[lo])),
                "bcr_high_decile_requests_per_usd": float(np.mean(y_bcr[hi])),
                "sla_probability_low_decile": float(np.mean(meets[lo])),
                "sla_probability_high_decile": float(np.mean(meets[hi])),
                "kind": inp.kind,
            }
        )
    rows.sort(key=lambda r: (-float(r["index"]), str(r["input"])))
    return rows, noise


def _sensitivity_outcomes(bcr: np.ndarray, margin: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The two figures the inputs are ranked against, finite: a sample's BCR (0 where it has
    none) and its SLA margin (a margin without bound counted as 1e6)."""
    y_bcr = np.nan_to_num(bcr, nan=0.0, posinf=0.0, neginf=0.0)
    y_sla = np.nan_to_num(margin, nan=0.0, posinf=1e6, neginf=0.0)
    return y_bcr, y_sla


def noise_index(x: np.ndarray, y_bcr: np.ndarray, y_sla: np.ndarray) -> float:
    """The sensitivity index that inputs moving neither figure reach by chance over these
    samples: the ``1 - SENSITIVITY_NOISE_LEVEL`` quantile of the table's largest index (every
    input's, each the larger of its two rank correlations in absolute value) when the samples'
    outcomes are reordered at random (:data:`SENSITIVITY_PERMUTATIONS` times, seeded), which
    breaks every tie between an input and the outcomes while keeping the draws and the outcomes'
    own ties. An input above it moves a figure at that family-wise level (Westfall and Young's
    max-T permutation test); at 10 samples that takes an index near 1, at 1,000 about 0.13.

    NaN where it cannot be told: fewer than three samples, or no input. Columns that are
    constant, or hold a NaN, count as rank correlation 0 (as :func:`_spearman` does)."""
    n, k = x.shape
    if n < 3 or k == 0:
        return math.nan
    zx = np.zeros((n, k))
    for j in range(k):
        col = x[:, j]
        if np.ptp(col) > 0 and not np.isnan(col).any():
            zx[:, j] = _unit(average_ranks(col))
    zy = [_unit(average_ranks(y)) for y in (y_bcr, y_sla) if np.ptp(y) > 0]
    if not zy:
        return 0.0  # both figures constant: every index is 0, so is chance's
    rng = np.random.default_rng(SENSITIVITY_PERMUTATION_SEED)
    largest = np.empty(SENSITIVITY_PERMUTATIONS)
    done = 0
    block = max(1, min(SENSITIVITY_PERMUTATIONS, 4_000_000 // (n * len(zy))))
    while done < SENSITIVITY_PERMUTATIONS:
        m = min(block, SENSITIVITY_PERMUTATIONS - done)
        perms = rng.permuted(np.tile(np.arange(n), (m, 1)), axis=1)  # one reordering a row
        best = np.zeros(m)
        for z in zy:  # the same reordering of both figures: a sample's outcomes stay together
            best = np.maximum(best, np.abs(z[perms] @ zx).max(axis=1))
        largest[done : done + m] = best
        done += m
    rank = math.ceil((SENSITIVITY_PERMUTATIONS + 1) * (1 - SENSITIVITY_NOISE_LEVEL))
    return float(np.sort(largest)[min(rank, SENSITIVITY_PERMUTATIONS) - 1])


def _unit(r: np.ndarray) -> np.ndarray:
    """Ranks centred and scaled to unit length: two such columns' dot product is their
    Pearson correlation, i.e. the Spearman correlation of the values ranked."""
    c = r - r.mean()
    return c / np.sqrt(c @ c)


def _spearman(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman's rank correlation (0 where it is undefined: fewer than two samples, a
    constant or a NaN)."""
    if a.size < 2 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return 0.0
    if np.isnan(a).any() or np.isnan(b).any():
        return 0.0  # scipy's rankdata propagates a NaN to every rank
    c = np.corrcoef(average_ranks(a), average_ranks(b))[0, 1]
    return float(c) if math.isfinite(c) else 0.0


def average_ranks(a: np.ndarray) -> np.ndarray:
    """Ranks from 1, ties sharing their mean rank: ``scipy.stats.rankdata(a)`` (``average``)
    for an array without NaN, without importing scipy.stats."""
    a = np.asarray(a, dtype=float)
    order = np.argsort(a, kind="mergesort")
    s = a[order]
    first = np.r_[True, s[1:] != s[:-1]]  # the first of each run of equal values
    group = np.cumsum(first) - 1
    starts = np.r_[np.flatnonzero(first), a.size]
    mean_rank = 0.5 * (starts[:-1] + starts[1:] - 1) + 1.0
    out = np.empty(a.size)
    out[order] = mean_rank[group]
    return out


__all__ = ["InfeasibleError", "RobustPlan", "RobustRun", "run_robust"]
