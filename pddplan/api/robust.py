"""``robust``: the point plan under sampled inputs and the cheapest plan that meets every SLA
target with a given probability."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from pddplan.api.command_options import RobustOptions
from pddplan.api.options import validate, validate_args
from pddplan.api.scenario import (
    Overrides,
    PathLike,
    Profiles,
    ScenarioLike,
    chip_limits,
    load,
    registry,
)
from pddplan.api.solve import solve_result

if TYPE_CHECKING:
    from pddplan.executors import Progress
    from pddplan.results import RobustResult
    from pddplan.results.topology_robust import TopologyRobustResult

_D = RobustOptions()


def robust(
    scenario: ScenarioLike = None,
    *,
    samples: int = _D.samples,
    confidence: float = _D.confidence,
    seed: int | None = _D.seed,
    executor: str = _D.executor,
    scheduler: str | None = _D.scheduler,
    jobs: int = _D.jobs,
    rate_rps: float | None = _D.rate_rps,
    max_chips: Mapping[str, int] | None = None,
    overrides: Overrides = None,
    profiles: Profiles = None,
    progress: Progress | None = None,
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
    progress : told ``(done, total)`` as the samples are evaluated, over the point plan's pass
        and the other configurations' (:data:`pddplan.executors.Progress`); the result does
        not depend on it.

    Raises
    ------
    OptionError : a confidence outside (0, 1), fewer than 2 samples, an unknown executor.
    ProfileError : a distribution the scenario's ``uncertainty:`` block gets wrong (names it).
    InfeasibleError : no plan meets the SLA at the point estimate.
    """
    o = validate_args(RobustOptions, locals())
    from pddplan import limits as caps

    caps.ROBUST_SAMPLES.check(o.samples, "samples", option="samples")
    from pddplan.results.robust import RobustResult
    from pddplan.robust import run_robust
    from pddplan.solver import Outcome

    ov = dict(overrides or {})
    if o.rate_rps is not None:
        ov["rate_rps"] = o.rate_rps
    ls = load(scenario, ov, profiles)
    limits, _owned = chip_limits(ls, max_chips)
    run = run_robust(
        ls.source,
        ls.overrides,
        max_chips=limits,
        progress=progress,
        **o.model_dump(exclude={"rate_rps"}),
    )
    point = solve_result(run.point)
    rp = solve_result(run.robust.outcome) if run.robust is not None else None
    assert isinstance(run.point, Outcome)
    return RobustResult(run, point, rp)


def robust_topology(
    scenario: PathLike,
    *,
    samples: int = _D.samples,
    seed: int | None = _D.seed,
    resilient: bool = False,
    executor: str = _D.executor,
    scheduler: str | None = _D.scheduler,
    jobs: int = _D.jobs,
    overrides: Overrides = None,
    profiles: Profiles = None,
    progress: Progress | None = None,
) -> TopologyRobustResult:
    """A topology file (``sites:``) under sampled inputs: the topology re-planned at each sample
    (:func:`pddplan.topology.plan_topology`) and the point plan held fixed (docs/topology.md,
    "Under uncertainty").

    The inputs are every ``estimated:`` key of the chips, line links, RDMA fabrics and model the
    pipelines use, as PATHs on the topology's keys, with the default distribution of its kind
    (docs/robust.md), and the file's ``uncertainty:`` block (a source's rate:
    ``traffic.NAME.rate_rps``).

    Parameters
    ----------
    samples : how many input sets to draw (Latin hypercube); each is one re-plan.
    seed : the draws' seed (None: fresh entropy, not reproducible).
    resilient : re-plan (and hold) the plan that survives any single failure.
    executor, scheduler, jobs : where the samples run (:mod:`pddplan.executors`); the result
        is the same on any.
    overrides : ``{"dotted.path": value}`` on the topology's keys, as ``sweep`` takes them.
    progress : told ``(done, total)`` as samples finish; the result does not depend on it.

    Raises
    ------
    OptionError : fewer than 2 samples, an unknown executor, a file that is not a topology.
    ProfileError : a distribution the ``uncertainty:`` block gets wrong (names it).
    TopologyError, InfeasibleError : no plan at the point estimate.
    """
    from pddplan import limits as caps
    from pddplan.errors import OptionError
    from pddplan.io.overrides import copy_overrides
    from pddplan.results.topology_robust import TopologyRobustResult
    from pddplan.robust.topology import run_topology_robust
    from pddplan.topology.inputs import TopologySource

    o = validate(
        RobustOptions, samples=samples, seed=seed, executor=executor, scheduler=scheduler, jobs=jobs
    )
    caps.ROBUST_SAMPLES.check(o.samples, "samples", option="samples")
    src = TopologySource.open(str(scenario), registry(profiles))
    if src is None:
        raise OptionError(
            "scenario", "must be a topology file (sites:); `robust` samples a two-site scenario"
        )
    ov = copy_overrides(overrides)
    src.resolve(ov)  # a bad PATH or value: one line before anything is planned
    run = run_topology_robust(
        src,
        ov,
        samples=o.samples,
        seed=o.seed,
        executor=o.executor,
        jobs=o.jobs,
        scheduler=o.scheduler,
        resilient=resilient,
        progress=progress,
    )
    return TopologyRobustResult(run)
