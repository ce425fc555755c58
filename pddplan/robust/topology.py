"""``robust`` over a topology file: the topology re-planned at sampled inputs, and the point plan
held fixed on the same samples (docs/topology.md, "Under uncertainty").

1. Plan the topology at its point estimate (:func:`pddplan.topology.plan_topology`): the point
   plan.
2. Collect the topology's estimated inputs (:func:`collect_topology_inputs`): every
   ``estimated:`` key of the chips, line links, RDMA fabrics and model its pipelines use, as a
   PATH on the topology's own keys, with the default distribution of its kind
   (:func:`pddplan.robust.inputs.default_inputs`); the file's ``uncertainty:`` block adds others
   (a source's rate: ``traffic.NAME.rate_rps``), fixes some or turns the defaults off. Draw them
   (:func:`pddplan.robust.inputs.draw`, seeded Latin hypercube).
3. On each sample (one executor task, :func:`sample_task`): re-plan the topology with the one
   planner (its cost, each source's TTFT p99, the single failures it survives), and check the
   point plan's fleets, held fixed, at the sample's inputs with the topology's fleet check
   (:func:`pddplan.topology.failures.fleet_meets`), each pipeline at its share of its source's
   sampled rate.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pddplan.errors import InfeasibleError, TopologyError
from pddplan.executors import Progress, make_executor
from pddplan.io.loader import Registry, YamlDoc
from pddplan.io.overrides import topology_patch, topology_value
from pddplan.robust.evaluate import Config, fleet_plan
from pddplan.robust.inputs import (
    Input,
    NotSampled,
    check_inputs,
    default_inputs,
    draw,
    estimated_values,
    sample_overrides,
    stated_inputs,
)
from pddplan.robust.search import point_config
from pddplan.topology import TopologyPlan, plan_topology
from pddplan.topology.failures import fleet_meets
from pddplan.topology.inputs import TopologyInput, TopologySource
from pddplan.topology.pipelines import (
    Pipeline,
    bundle_doc,
    pipeline_doc,
    pipelines_of,
    resolve_doc,
    size_options,
)

# ------------------------------------------------------------------------------ the inputs


def _topology_path(ti: TopologyInput, pipe: Pipeline, rs: Any, path: str) -> str | None:
    """A pipeline scenario's estimated PATH (:func:`estimated_values`) as a PATH on the
    topology's keys; None where the topology sets that number itself (a line's RTT from its
    ``route_km``)."""
    parts = path.split(".")
    if parts[0] == "chips":
        name, rest = parts[1], parts[2:]
        if rest == ["price_usd_per_hour"]:
            rest = ["price", "rental_usd_per_hour"]
        return ".".join(["overrides", "chips", name, *rest])
    if parts[0] == "link":
        assert pipe.line is not None
        if parts[1] == "rtt_ms" and pipe.line.route_km is not None:
            return None
        return f"lines.{pipe.line.label}.link_numbers.{'.'.join(parts[1:])}"
    if parts[0] == "rdma":
        return f"overrides.links.{rs.scenario.rdma}.{'.'.join(parts[1:])}"
    assert parts[0] == "model"
    return f"overrides.models.{ti.spec.model}.{'.'.join(parts[1:])}"


def topology_estimates(ti: TopologyInput) -> tuple[list[tuple[str, Any]], list[NotSampled]]:
    """(PATH, value) of every estimated key of the chips, line links, RDMA fabrics and model
    the topology's pipelines use, each once, as a PATH on the topology's keys (a line's link by
    ``lines.NAME.link_numbers.KEY``, a chip's by ``overrides.chips.CHIP...``); a chip a site
    prices itself is priced by ``sites.NAME.chips.CHIP.rental_usd_per_hour``."""
    found: dict[str, Any] = {}
    skipped: dict[str, NotSampled] = {}
    for pipe in pipelines_of(ti):
        rate = ti.sources[pipe.source].rate_rps
        doc = pipeline_doc(ti, pipe, rate)
        if doc is None:
            continue
        rs = resolve_doc(ti, doc)
        same_site = pipe.line is None
        for path, v in estimated_values(rs):
            if same_site and path.startswith("link."):
                continue  # a one-site pipeline uses no line
            tpath = _topology_path(ti, pipe, rs, path)
            if tpath is None:
                why = f"set by line {pipe.line_name}'s route_km"
                skipped.setdefault(
                    f"lines.{pipe.line_name}.link_numbers.rtt_ms",
                    NotSampled(f"lines.{pipe.line_name}.link_numbers.rtt_ms", why),
                )
                continue
            found.setdefault(tpath, v)
    for s in ti.spec.sites:
        for chip, sc in s.chips.items():
            if sc.rental_usd_per_hour is not None:
                found[f"sites.{s.name}.chips.{chip}.rental_usd_per_hour"] = sc.rental_usd_per_hour
    return list(found.items()), list(skipped.values())


def collect_topology_inputs(
    src: TopologySource, ti: TopologyInput
) -> tuple[list[Input], list[NotSampled]]:
    """The topology's inputs to sample: the defaults of its estimated keys
    (:func:`topology_estimates`, unless ``uncertainty: {defaults: false}``), then its
    ``uncertainty:`` block's (PATHs on the topology's keys, as ``sweep`` takes them)."""
    unc = ti.spec.uncertainty
    estimates, not_here = topology_estimates(ti)
    found: dict[str, Input] = {}
    skipped: list[NotSampled] = []
    if unc is None or unc.defaults:
        found, skipped = default_inputs(estimates)
        skipped += not_here
    if unc is not None:
        known = dict(estimates)

        def check(path: str) -> None:
            topology_patch(src.doc.data, path, 0.0)  # an entry no list has: OverrideError

        def point(path: str) -> Any:
            v = topology_value(src.doc.data, path)
            return known.get(path) if v is None else v

        stated_inputs(unc, found, skipped, check=check, point_value=point, file=ti.file)
    return list(found.values()), skipped


# ------------------------------------------------------------------------------ the samples


@dataclass(frozen=True)
class HeldOption:
    """A pipeline of the point plan, held fixed: its fleet (configuration and counts), its
    bundle of lines and the share of its source it carries."""

    pipe: Pipeline
    lines: int
    share: float
    cfg: Config
    topology: Any  # the solver's Topology its plan was sized on


def held_options(tp: TopologyPlan) -> list[HeldOption]:
    """The point plan's chosen options, as the tasks check them."""
    return [
        HeldOption(
            tp.pipelines[o.pipeline],
            o.lines,
            tp.carried_share[o.pipeline],
            point_config(o.plan),
            o.plan.problem.topology,
        )
        for o in tp.chosen
    ]


@dataclass(frozen=True)
class TopologySample:
    """One sample's figures: the re-planned topology's, and whether the point plan still meets
    each source's SLA there."""

    index: int
    cost_usd_per_hour: float  # nan: no plan serves every source at this sample
    #: source -> the highest TTFT p99 of its pipelines [s] (at the P site, as `topology` shows)
    ttft_p99_s: dict[str, float]
    failures_survived: int
    failures: int
    flows: str
    #: why no plan serves every source at this sample (None: one does)
    infeasible: str | None
    #: source -> whether the point plan's fleets, held fixed, meet its SLA at this sample
    point_meets: dict[str, bool] = field(default_factory=dict)

    @property
    def point_meets_all(self) -> bool:
        return all(self.point_meets.values())


def _held_meets(ti: TopologyInput, h: HeldOption) -> bool:
    """Whether a held pipeline's fleet meets its source's SLA on the sampled topology ``ti``
    (the fleet rebuilt on the sample's problem, :func:`pddplan.robust.evaluate.fleet_plan`,
    then the topology's fleet check)."""
    from pddplan.solver import Solver, build_problem

    rate = h.share * ti.sources[h.pipe.source].rate_rps
    baseline = (h.cfg.md[0], h.cfg.md[1]) if h.pipe.line is None else None
    doc = pipeline_doc(ti, h.pipe, rate, baseline=baseline)
    if doc is None:
        return False
    rs = resolve_doc(ti, doc)
    if h.lines > 1:
        rs = resolve_doc(ti, bundle_doc(doc, h.pipe, h.lines, rs))
    only = {"P": frozenset({h.cfg.p}), "MD": frozenset({h.cfg.md})}
    if h.cfg.rld is not None:
        only["RLD"] = frozenset({h.cfg.rld})
    pb = build_problem(rs, h.topology, only=only)
    plan = fleet_plan(Solver(pb), h.cfg, h.cfg.base, rate)
    return plan is not None and bool(fleet_meets((plan, pb), rate).meets_sla)


def sample_task(
    item: tuple[int, dict[str, Any]],
    *,
    doc: YamlDoc,
    registry: Registry,
    overrides: dict[str, Any],
    resilient: bool,
    held: list[HeldOption],
) -> TopologySample:
    """One sample (an executor's task: a pure function of picklable arguments)."""
    index, sample = item
    ti = TopologySource(doc, registry).resolve({**overrides, **sample})
    meets: dict[str, bool] = {t.name: True for t in ti.spec.traffic}
    for h in held:
        if meets[h.pipe.source] and not _held_meets(ti, h):
            meets[h.pipe.source] = False
    try:
        tp = plan_topology(ti, resilient=resilient, options=size_options(ti))
    except (InfeasibleError, TopologyError) as exc:
        return TopologySample(index, math.nan, {}, 0, 0, "", str(exc), meets)
    row = tp.summary_row()
    ttft: dict[str, float] = {}
    for o in tp.chosen:
        ttft[o.source] = max(ttft.get(o.source, 0.0), float(o.plan.prefill.ttft_s[2]))
    return TopologySample(
        index,
        tp.cost_usd_per_hour,
        ttft,
        int(row["failures_survived"]),
        int(row["failures"]),
        str(row["flows"]),
        None,
        meets,
    )


@dataclass
class TopologyRobustRun:
    point: TopologyPlan
    inputs: list[Input]
    not_sampled: list[NotSampled]
    samples: list[TopologySample]
    seed: int | None
    executor: str
    resilient: bool


class _Under:
    """A topology source whose every resolve starts from ``overrides``."""

    def __init__(self, src: TopologySource, overrides: Mapping[str, Any]) -> None:
        self._src = src
        self._under = dict(overrides)

    def resolve(self, overrides: Mapping[str, Any] | None = None) -> Any:
        return self._src.resolve({**self._under, **(overrides or {})})


def run_topology_robust(
    src: TopologySource,
    overrides: Mapping[str, Any],
    *,
    samples: int,
    seed: int | None,
    executor: str = "local",
    jobs: int = 1,
    scheduler: str | None = None,
    resilient: bool = False,
    progress: Progress | None = None,
) -> TopologyRobustRun:
    """The point plan, the inputs, and every sample's figures (the same on any executor)."""
    ov = dict(overrides)
    ex = make_executor(executor, jobs=jobs, scheduler=scheduler)
    ti = src.resolve(ov)
    inputs, skipped = collect_topology_inputs(src, ti)
    check_inputs(_Under(src, ov), inputs, src.file)
    x = draw(inputs, samples, seed)
    items: Sequence[tuple[int, dict[str, Any]]] = list(enumerate(sample_overrides(inputs, x)))
    with ex:
        point = plan_topology(ti, resilient=resilient, options=size_options(ti, ex))

        def tick(done: int) -> None:
            if progress is not None:
                progress(done, samples)

        out = ex.map(
            sample_task,
            items,
            progress=tick,
            doc=src.doc,
            registry=src.registry,
            overrides=ov,
            resilient=resilient,
            held=held_options(point),
        )
    return TopologyRobustRun(point, inputs, skipped, list(out), seed, executor, resilient)
