"""What the simulator takes from a plan: the fleet, batch capacities, routing and hand-over.

A :class:`SimPlan` comes either from a solved :class:`~pddplan.solver.Plan` or from the JSON
document that ``pddplan solve --format json`` writes (``plan.roles.{P,RLD,MD}``,
``plan.routing_threshold_hit_rate``, ``plan.handover``); the instances are rebuilt from the
problem's options by chip name and chips per instance, so the physics is the solver's.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pddplan.deployment import Instance
from pddplan.errors import ProfileError
from pddplan.solver import Plan, Problem
from pddplan.timing import Routing

#: Threshold written to JSON for "relay every request" (the solver's internal value is 2.0).


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
    """

    rate_rps: float
    routing: Routing
    handover: str
    roles: dict[str, Role]
    plan: Plan | None = None

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
        return cls(plan.rate_rps, plan.routing, plan.handover, roles, plan)


def _find_option(problem: Problem, role: str, chip: str, tp: int, file: str) -> Instance:
    for inst in problem.options.get(role, []):
        if inst.chip.name == chip and inst.tensor_parallel == tp:
            return inst
    have = ", ".join(i.label for i in problem.options.get(role, [])) or "none"
    raise ProfileError(
        f"{role} is {chip} x{tp}, which the scenario does not offer for {role} (options: {have}); "
        "simulate the plan with the scenario it was solved for",
        file=file,
        key=f"plan.roles.{role}",
    )


def plan_from_json(doc: dict[str, Any], problem: Problem, file: str = "<plan>") -> SimPlan:
    """Rebuild a :class:`SimPlan` from ``pddplan solve --format json`` output."""
    try:
        p = doc["plan"]
        roles_doc = p["roles"]
        roles: dict[str, Role] = {}
        for name in ("P", "RLD", "MD"):
            r = roles_doc.get(name)
            if r is None:
                continue
            inst = _find_option(problem, name, str(r["chip"]), int(r["chips_per_instance"]), file)
            batch = int(r["batch_per_instance"]) if r.get("batch_per_instance") is not None else 0
            n = int(r["instances"])
            if n < 1 or (name != "P" and batch < 1):
                raise ProfileError(
                    "instances and batch_per_instance must be at least 1",
                    file=file,
                    key=f"plan.roles.{name}",
                )
            roles[name] = Role(inst, n, batch)
        thr = float(p["routing_threshold_hit_rate"])
        handover = str(p["handover"])
        rate = float(p["rate_rps"])
    except (KeyError, TypeError, ValueError) as exc:
        raise ProfileError(
            f"not a plan from `pddplan solve --format json` ({type(exc).__name__}: {exc})",
            file=file,
        ) from None
    for need in ("P", "MD"):
        if need not in roles:
            raise ProfileError(f"the plan has no {need} role", file=file, key="plan.roles")
    if not 0.0 <= thr <= 1.0:
        raise ProfileError(
            f"routing_threshold_hit_rate must be in [0, 1], not {thr}",
            file=file,
            key="plan.routing_threshold_hit_rate",
        )
    return SimPlan(rate, Routing.from_hit_rate(thr), handover, roles, None)


def read_plan_file(path: Path, problem: Problem) -> SimPlan:
    """Read a plan JSON file (see :func:`plan_from_json`)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ProfileError(f"cannot read the plan: {exc.strerror}", file=str(path)) from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ProfileError(f"not JSON: {exc.msg}", file=str(path), line=exc.lineno) from None
    if not isinstance(doc, dict):
        raise ProfileError("not a plan from `pddplan solve --format json`", file=str(path))
    return plan_from_json(doc, problem, str(path))
