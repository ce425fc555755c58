"""What the simulator takes from a plan: the fleet, batch capacities, routing and hand-over.

A :class:`SimPlan` comes either from a solved :class:`~pddplan.solver.Plan` or from the JSON
document that ``pddplan solve --format json`` writes (``plan.roles.{P,RLD,MD}``,
``plan.routing_threshold_hit_rate``, ``plan.handover``); the instances are rebuilt from the
problem's options by chip name and chips per instance, so the physics is the solver's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pddplan.deployment import Instance
from pddplan.errors import ProfileError
from pddplan.io.files import loads_json, read_text
from pddplan.labels import plain
from pddplan.solver import Plan, Problem
from pddplan.solver.problem import ROLE_DATACENTER
from pddplan.spec.base import MAX_RATE_RPS, MIN_RATE_RPS
from pddplan.timing import HANDOVER_MODES, NO_HANDOVER, Routing

#: the roles a plan's ``roles`` mapping may name, in the order they are read
PLAN_ROLES = ("P", "RLD", "MD")


@dataclass(frozen=True)
class Role:
    """One pool of the fleet: ``instances`` copies of ``instance``."""

    instance: Instance
    instances: int
    batch_per_instance: int  # decode sequences per instance (0 for the prefill pool)


@dataclass(frozen=True)
class SimPlan:
    """The fleet and routing the simulator runs.

    Attributes
    ----------
    rate_rps : [requests/s] the plan's rate (the simulation's default arrival rate).
    routing : which requests are relayed (P-RLD-MD).
    handover : "one-shot", "catch-up" or "-" (no RLD).
    roles : "P", "MD" and, when the plan has one, "RLD".
    plan : the solver's plan when the fleet came from one (its closed-form figures hold only at
        ``rate_rps``).
    anomalous_filter : whether RLD finishes the anomalous requests, as the plan was solved
        (None: a plan file that does not say, written before it did).
    """

    rate_rps: float
    routing: Routing
    handover: str
    roles: dict[str, Role]
    plan: Plan | None = None
    anomalous_filter: bool | None = None
    #: the scenario and line the plan file says it was solved for (None: not said)
    solved_for: tuple[str | None, str | None] = (None, None)

    @property
    def rld(self) -> Role | None:
        return self.roles.get("RLD")

    @classmethod
    def of(cls, plan: Plan) -> SimPlan:
        roles: dict[str, Role] = {}
        for name, v in plan.roles.items():
            if v is None:
                continue
            inst, n = v
            dec = plan.decode.get(name) if name != "P" else None
            roles[name] = Role(inst, n, dec.batch_per_instance if dec is not None else 0)
        return cls(
            plan.rate_rps,
            plan.routing,
            plan.handover,
            roles,
            plan,
            plan.problem.topology.anomalous_filter if plan.problem is not None else None,
        )


def _find_option(
    problem: Problem, role: str, chip: str, tp: int, file: str, layout: str | None = None
) -> Instance:
    """The scenario's option for a role; ``layout`` (a label such as ``tp8``) picks among the
    layouts of one chip and size (None: the pure tensor-parallel one)."""
    for inst in problem.options.get(role, []):
        if inst.chip.name == chip and inst.tensor_parallel == tp:
            if (layout is None and inst.lay.is_pure_tp) or inst.lay.label == layout:
                return inst
    have = ", ".join(i.label for i in problem.options.get(role, [])) or "none"
    what = f"{chip} x{tp}" + (f" ({layout})" if layout else "")
    raise ProfileError(
        f"{role} is {what}, which the scenario does not offer for {role} (options: {have}); "
        "simulate the plan with the scenario it was solved for",
        file=file,
        key=f"plan.roles.{role}",
    )


def _shortest_context(problem: Problem) -> float:
    """The fewest tokens of context any request of the workload decodes at [tokens]."""
    c = problem.classes
    return float(min(c.input_tokens + 1))


def _key(m: dict[str, Any], key: str, where: str, file: str) -> Any:
    """``m[key]``, or a ProfileError naming the missing key by its path in the plan."""
    if key not in m:
        raise ProfileError(
            "missing (a plan from `pddplan solve --format json` has it)",
            file=file,
            key=f"{where}.{key}" if where else key,
        )
    return m[key]


def plan_from_json(doc: dict[str, Any], problem: Problem, file: str = "<plan>") -> SimPlan:
    """Rebuild a :class:`SimPlan` from ``pddplan solve --format json`` output."""
    try:
        p = _mapping(_key(doc, "plan", "", file), "plan", file)
        roles_doc = _mapping(_key(p, "roles", "plan", file), "plan.roles", file)
        unknown = [str(k) for k in roles_doc if k not in PLAN_ROLES]
        if unknown:
            raise ProfileError(
                f"unknown role {plain(unknown)} (a plan's roles are {plain(PLAN_ROLES)})",
                file=file,
                key="plan.roles",
            )
        roles: dict[str, Role] = {}
        for name in PLAN_ROLES:
            r = roles_doc.get(name)
            if r is None:
                continue
            r = _mapping(r, f"plan.roles.{name}", file)
            where = f"plan.roles.{name}"
            dc = r.get("datacenter")
            if dc is not None and dc != ROLE_DATACENTER[name]:
                raise ProfileError(
                    f"is {dc!r}: simulate runs PDD's plans (P and RLD in datacenter A, MD in "
                    "B); a same-datacenter fleet is not simulated",
                    file=file,
                    key=f"{where}.datacenter",
                )
            tp = _whole(
                _key(r, "chips_per_instance", where, file),
                f"{where}.chips_per_instance",
                file,
                1,
                4096,
            )
            layout = r.get("layout")
            chip = str(_key(r, "chip", where, file))
            inst = _find_option(
                problem, name, chip, tp, file, None if layout is None else str(layout)
            )
            batch = (
                _whole(r["batch_per_instance"], f"{where}.batch_per_instance", file, 1, 10**6)
                if r.get("batch_per_instance") is not None
                else 0
            )
            n = _whole(_key(r, "instances", where, file), f"{where}.instances", file, 1, 10**6)
            if name != "P" and batch < 1:
                raise ProfileError(
                    f"missing or null: {name} needs a batch of at least 1",
                    file=file,
                    key=f"{where}.batch_per_instance",
                )
            if name != "P" and batch > (most := inst.max_batch_memory(_shortest_context(problem))):
                raise ProfileError(
                    f"batch_per_instance {batch:,} does not fit: an instance of {inst.label} "
                    f"holds at most {most:,} sequences even at the workload's shortest context",
                    file=file,
                    key=f"{where}.batch_per_instance",
                )
            roles[name] = Role(inst, n, batch)
        thr = _number(
            _key(p, "routing_threshold_hit_rate", "plan", file),
            "plan.routing_threshold_hit_rate",
            file,
        )
        handover = str(_key(p, "handover", "plan", file))
        rate = _number(_key(p, "rate_rps", "plan", file), "plan.rate_rps", file)
        flt = p.get("anomalous_filter")
        if flt is not None and not isinstance(flt, bool):
            raise ProfileError(
                f"must be true or false, not {flt!r}", file=file, key="plan.anomalous_filter"
            )
    except (KeyError, TypeError, ValueError) as exc:
        raise ProfileError(
            f"not a plan from `pddplan solve --format json` ({type(exc).__name__}: {exc})",
            file=file,
        ) from None
    for need in ("P", "MD"):
        if need not in roles:
            raise ProfileError(f"the plan has no {need} role", file=file, key="plan.roles")
    _check_chip_summary(p.get("chips"), roles, file)
    if not MIN_RATE_RPS <= rate <= MAX_RATE_RPS:
        raise ProfileError(
            f"rate_rps must be in [{MIN_RATE_RPS:g}, {MAX_RATE_RPS:g}], not {rate:g}",
            file=file,
            key="plan.rate_rps",
        )
    if not 0.0 <= thr <= 1.0:
        raise ProfileError(
            f"routing_threshold_hit_rate must be in [0, 1], not {thr}",
            file=file,
            key="plan.routing_threshold_hit_rate",
        )
    allowed = HANDOVER_MODES if "RLD" in roles else (*HANDOVER_MODES, NO_HANDOVER)
    if not isinstance(p["handover"], str) or handover not in allowed:
        raise ProfileError(
            f"handover must be one of {plain(allowed)}, not {p['handover']!r}",
            file=file,
            key="plan.handover",
        )
    line = doc.get("line")
    solved_for = (
        str(doc["scenario"]) if isinstance(doc.get("scenario"), str) else None,
        str(line["name"]) if isinstance(line, dict) and isinstance(line.get("name"), str) else None,
    )
    return SimPlan(rate, Routing.from_hit_rate(thr), handover, roles, None, flt, solved_for)


def _check_chip_summary(summary: Any, roles: dict[str, Role], file: str) -> None:
    """The plan's ``chips`` summary, when present, must be the roles' chips (instances x chips
    per instance, by chip): a plan edited by hand in one place and not the other is refused."""
    if summary is None:
        return
    summary = _mapping(summary, "plan.chips", file)
    want: dict[str, int] = {}
    for role in roles.values():
        name = role.instance.chip.name
        want[name] = want.get(name, 0) + role.instances * role.instance.tensor_parallel
    got = {str(k): v for k, v in summary.items()}
    if got != want:
        raise ProfileError(
            f"the chips summary ({_counts(got)}) does not match the roles' chips "
            f"({_counts(want)}; instances x "
            "chips_per_instance); edit the roles, or drop the summary",
            file=file,
            key="plan.chips",
        )


def _counts(counts: dict[str, Any]) -> str:
    return plain(f"{k}: {v}" for k, v in counts.items())


def _mapping(v: Any, key: str, file: str) -> dict[str, Any]:
    if not isinstance(v, dict):
        raise ProfileError(f"expected a mapping, got {type(v).__name__}", file=file, key=key)
    return v


def _number(v: Any, key: str, file: str) -> float:
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
        raise ProfileError(f"expected a finite number, got {v!r}", file=file, key=key)
    return float(v)


def _whole(v: Any, key: str, file: str, lo: int, hi: int) -> int:
    if isinstance(v, bool) or not isinstance(v, int | float) or not float(v).is_integer():
        raise ProfileError(f"expected a whole number, got {v!r}", file=file, key=key)
    if not lo <= v <= hi:
        raise ProfileError(f"must be in [{lo}, {hi}], not {v!r}", file=file, key=key)
    return int(v)


def read_plan_file(path: Path, problem: Problem) -> SimPlan:
    """Read a plan JSON file (see :func:`plan_from_json`)."""
    doc = loads_json(read_text(path, what="plan"), file=str(path))
    if not isinstance(doc, dict):
        raise ProfileError("not a plan from `pddplan solve --format json`", file=str(path))
    return plan_from_json(doc, problem, str(path))
