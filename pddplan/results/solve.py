"""The result of ``solve``: the plan per role, economics, TTFT per pipeline, baselines, classes."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pddplan.results.base import Report, Result, Row, Section
from pddplan.solver.problem import ROLE_DATACENTER

if TYPE_CHECKING:
    from pddplan.robust.verdict import Flip, VerdictCheck
    from pddplan.solver import Outcome, Plan

#: The baselines in words, as the answer's sentences name them.
BASELINE_WORDS = {
    "same-dc": "one datacenter",
    "no-relay": "no relay",
    "no-relay-rld": "no relay, RLD for anomalous requests only",
}

#: What to do about a closed-form warning after ``solve``.
CHECK_PLAN = (
    "write the plan with `pddplan solve -f json -o plan.json` (the same options) and check it "
    "with `pddplan simulate --plan plan.json`"
)


def _bcr_text(plan: Plan, of: str = "") -> str:
    """A plan's BCR in a sentence (:func:`bcr_text`)."""
    return bcr_text(plan.bcr_requests_per_usd, of)


def bcr_text(bcr: float, of: str = "") -> str:
    """A BCR [requests/USD] in a sentence, after ``of`` (``"a BCR of "``): ``an unbounded
    BCR`` where its fleet costs nothing."""
    if math.isfinite(bcr):
        return f"{of}{bcr:.4g} requests per dollar"
    return "an unbounded BCR (its fleet costs nothing)"


def _against_text(plan: Plan, base: Plan, head: str) -> str:
    """The sentence comparing PDD's ``plan`` with a baseline (``head`` names it and its cost):
    the cost and BCR ratios, in words where a fleet costs nothing (a ratio to it has no
    value, and a fleet that serves something for nothing has an unbounded BCR)."""
    if base.goodput_rps <= 0:
        return f"{head}, and it meets the TTFT targets at no rate."
    free_pdd = plan.cost_usd_per_hour <= 0
    if base.cost_usd_per_hour > 0:
        cost = (
            "PDD costs nothing"
            if free_pdd
            else f"PDD costs {plan.cost_usd_per_hour / base.cost_usd_per_hour:.3g}x"
        )
    elif free_pdd:
        cost = "both cost nothing"
    else:
        cost = f"it costs nothing against PDD's {plan.cost_usd_per_hour:,.1f} $/h"
    ratio = _ratio(plan.bcr_requests_per_usd, base.bcr_requests_per_usd)
    if ratio is not None and base.cost_usd_per_hour > 0:
        bcr = f"its BCR is {ratio:.3g}x"
    elif free_pdd and base.cost_usd_per_hour <= 0:
        bcr = "both BCRs are unbounded"
    elif free_pdd:
        bcr = "PDD's BCR is unbounded against its finite one"
    else:
        bcr = "its BCR is unbounded against PDD's finite one"
    return f"{head}; {cost} and {bcr}."


def _equal_cost_text(plan: Plan, base: Plan, name: str) -> str | None:
    """Why PDD's ``plan`` loses to ``base`` at equal cost, where it does: the search's rule
    for plans of one cost (:func:`~pddplan.solver.search.better_plan`) keeps the lower TTFT,
    not the larger goodput, so a baseline of PDD's cost can serve a little more. The sentence
    names the percentile that rule reads first where the two differ
    (:func:`~pddplan.solver.search.ttft_decider`) and both figures; None where the costs do
    not tie, PDD's TTFT there is not the lower, or the baseline serves no more."""
    from pddplan.solver.search import costs_tie, ttft_decider
    from pddplan.solver.sla import PERCENTILE_NAMES

    if not costs_tie(plan, base) or base.goodput_rps <= plan.goodput_rps:
        return None
    q_pdd, q_base = plan.prefill.ttft_s, base.prefill.ttft_s
    i = ttft_decider(q_pdd, q_base)
    if i is None or not q_pdd[i] < q_base[i]:
        return None
    more = (base.goodput_rps / plan.goodput_rps - 1.0) * 100.0 if plan.goodput_rps > 0 else None
    serves = f"{more:.2g}% more" if more is not None else "more"
    return (
        f"Both cost the same, and at equal cost the search keeps the lower TTFT: PDD's TTFT "
        f"{PERCENTILE_NAMES[i]} is {q_pdd[i]:.4g} s against {q_base[i]:.4g} s for {name}, "
        f"which serves {serves} (goodput {base.goodput_rps:.4g} against "
        f"{plan.goodput_rps:.4g} req/s)."
    )


def _ratio(a: float, b: float) -> float | None:
    """``a / b``; None where it has no finite value: ``b`` is 0 (a baseline of no goodput), or
    ``a`` is unbounded (PDD's fleet costs nothing, so its BCR is; against a baseline of
    unbounded BCR too, the quotient is not a number)."""
    if not b:
        return None
    r = a / b
    return r if math.isfinite(r) else None


@dataclass(frozen=True)
class SolveResult(Result):
    """A solved plan with every figure the report shows, computed when the result was built.

    Attributes
    ----------
    outcome : the planner's outcome (mode, plan, baselines, problem, notes).
    ttft_by_pipeline_s : per pipeline: ``share`` [-] and TTFT ``p50``, ``p90``, ``p99`` [s].
    prefill_mean_wait_s : [s] mean wait in the prefill pool.
    classes : one row per hit-rate class (``explain``), or None.
    warnings : where the plan sits in a regime the closed forms are known to miss.
    verdict : PDD against each baseline and the estimated inputs that reverse it
        (:func:`pddplan.robust.verdict.check_verdict`), or None when not checked.
    trace_rate_note : the workload's trace rate against the rate planned for, when they differ
        (:func:`pddplan.api.scenario.trace_rate_note`; the CLI prints it on stderr), or None.
    cache : the cache capacity solve chose for the scenario's ``cache:`` tiers
        (:func:`pddplan.tiers.sizing_row`: GB per P node per tier, tokens, mean hit rate, cache
        $/h, options compared), or None without ``cache:``.
    """

    outcome: Outcome
    ttft_by_pipeline_s: dict[str, dict[str, float]]
    prefill_mean_wait_s: float
    classes: list[Row] | None = None
    warnings: list[str] = field(default_factory=list)
    verdict: VerdictCheck | None = None
    trace_rate_note: str | None = None
    cache: Row | None = None

    @property
    def plan(self) -> Plan:
        return self.outcome.plan

    @property
    def baselines(self) -> list[Plan]:
        return self.outcome.baselines

    @property
    def cost_usd_per_hour(self) -> float:
        return self.outcome.plan.cost_usd_per_hour

    @property
    def bcr_requests_per_usd(self) -> float:
        return self.outcome.plan.bcr_requests_per_usd

    def report(self) -> Report:
        from pddplan.solver.sla import PERCENTILE_NAMES

        out = self.outcome
        plan = out.plan
        sla = out.problem.ttft_targets_s
        base_rows, base_json = self._baselines()
        sections = [
            Section("plan", _role_rows(plan), key="plan"),
            Section("summary", self._summary_rows(), key="summary", labels=("figure",)),
            Section("chips: owned, rented, bought", procurement_rows(plan), key="procurement"),
            Section("ttft by pipeline", self._pipeline_rows(), key="pipelines"),
            Section("baselines at the same rate", base_rows, key="baselines"),
        ]
        if self.verdict is not None:
            sections.append(
                Section("verdict: what it rests on", self._verdict_rows(), key="verdict")
            )
        payload: dict[str, Any] = {
            "scenario": out.scenario_name,
            "model": out.problem.model.name,
            "mode": out.mode,
            "scale_bound": out.scale_bound,
            "plan": self._plan_json(),
            "sla": {
                "ttft_s": dict(zip(PERCENTILE_NAMES, sla, strict=True)),
                "tpot_ms": out.problem.tpot_s * 1e3,
            },
            "baselines": base_json,
        }
        if self.cache is not None:
            sections.insert(2, Section("cache per P node", [self.cache], key="cache"))
            payload["cache"] = self.cache
        if self.verdict is not None:
            payload["verdict"] = self._verdict_json()
        if self.classes is not None:
            sections.append(Section("hit-rate classes", self.classes, key="classes"))
            payload["classes"] = self.classes
        wan = out.problem.wan
        title = (
            f"pddplan solve: scenario {out.scenario_name}, model {out.problem.model.name}, "
            f"line {wan.label}"
        )
        payload["line"] = {"name": wan.name, "bandwidth_gbit_per_s": wan.bandwidth_gbit_per_s}
        if out.relay_edges:
            payload["relay_edges"] = self._relay_edges_json()
        return Report(
            title,
            sections,
            payload,
            self._notes(),
            warnings=list(self.warnings),
            answer=self.answer(),
            warning_action=CHECK_PLAN,
        )

    def answer(self, *, estimated_prices: bool = False) -> list[str]:
        """The answer in a few sentences, from the figures of the tables: where PDD loses
        first (the baseline's cost and BCR, and what would make PDD pay), then what to deploy,
        what it costs (with ``estimated_prices``, how much of it rests on estimated prices:
        :func:`estimated_cost_text`), against each baseline, and what binds."""
        out = self.outcome
        plan = out.plan
        said = [self._loses(b) for b in out.baselines]
        sentences = [s for s in said if s]
        dcs: dict[str, list[str]] = {}
        for role, v in plan.roles.items():
            if v is not None:
                inst, n = v
                dc = ROLE_DATACENTER[role] if plan.topology != "same-dc" else "A"
                dcs.setdefault(dc, []).append(
                    f"{role} {n} x {inst.chip.name} {inst.lay.label} "
                    f"({n * inst.tensor_parallel} chips)"
                )
        where = "; ".join(f"in datacenter {dc}: {', '.join(r)}" for dc, r in dcs.items())
        line = f", over line {out.problem.wan.label}" if plan.link_cost_usd_per_hour else ""
        sentences.append(f"Deploy for {plan.rate_rps:.4g} req/s {where}{line}.")
        parts = []
        for r in procurement_rows(plan):
            bits = [f"{r[k]} {k}" for k in ("owned", "rented", "bought") if r[k]]
            if r["owned_idle"]:
                bits.append(f"{r['owned_idle']} owned idle")
            parts.append(f"{r['chip']}: {', '.join(bits) or 'none'}")
        sentences.append("Chips: " + "; ".join(parts) + ".")
        idle = idle_owned_text(plan)
        if idle:
            sentences.append(idle)
        if self.cache is not None:
            sentences.append(cache_text(self.cache))
        p99, target = plan.prefill.ttft_s[2], out.problem.ttft_targets_s[2]
        sentences.append(
            f"Cost {plan.cost_usd_per_hour:,.1f} $/h (line included), "
            f"{_bcr_text(plan, 'BCR ')}, goodput "
            f"{plan.goodput_rps:.4g} req/s, TTFT p99 {p99:.4g} s (target {target:.4g} s)."
        )
        if estimated_prices:
            sentences.append(estimated_cost_text(plan))
        for b in out.baselines:
            name = BASELINE_WORDS.get(b.topology, b.topology)
            chips = ", ".join(f"{n} {c}" for c, n in b.chips_of().items())
            head = f"{name[0].upper()}{name[1:]} ({chips}): {b.cost_usd_per_hour:,.1f} $/h"
            sentences.append(_against_text(plan, b, head))
        if plan.binding:
            sentences.append("Bound by " + "; ".join(plan.binding) + ".")
        if out.mode != "rate" and out.scale_bound:
            sentences.append(f"Its scale is bound by {out.scale_bound}.")
        return sentences

    def _loses(self, b: Plan) -> str | None:
        """The sentence saying PDD loses to baseline ``b``, or None: by the verdict check's
        outcome at the point where it ran (the verdict table's), else by the BCR ratio beyond
        the goodputs' precision (:func:`~pddplan.solver.fleet.loses_by_ratio`, as a sweep's
        answer reads it)."""
        from pddplan.solver.fleet import loses_by_ratio

        plan = self.outcome.plan
        ratio = _ratio(plan.bcr_requests_per_usd, b.bcr_requests_per_usd)
        if plan.topology != "pdd" or ratio is None:
            return None
        checked = self._checked_outcome(b)
        if not (checked == "loses" if checked is not None else loses_by_ratio(ratio)):
            return None
        name = BASELINE_WORDS.get(b.topology, b.topology)
        text = (
            f"PDD loses to {name} ({b.topology}): it serves this rate for "
            f"{b.cost_usd_per_hour:,.1f} $/h at {_bcr_text(b, 'a BCR of ')}, against PDD's "
            f"{plan.cost_usd_per_hour:,.1f} $/h and "
            f"{plan.bcr_requests_per_usd:.4g} (BCR ratio {ratio:.3g}x)."
        )
        tie = _equal_cost_text(plan, b, b.topology)
        if tie:
            text += " " + tie
        pays = []
        if self.verdict is not None:
            for v in self.verdict.verdicts:
                if v.baseline == b.topology:
                    pays += [flip_text(f) for f in v.flips]
        if pays:
            text += " PDD would pay with " + "; or ".join(pays) + "."
        elif self.verdict is not None:
            text += (
                f" No estimate in its plausible range ({len(self.verdict.inputs)} checked) "
                "reverses it."
            )
        if b.topology != "same-dc" and self.outcome.relay_edges:
            from pddplan.solver.relay_edge import describe

            said = describe(self.outcome.relay_edges)
            text += f" {said[0].upper()}{said[1:]}."
        return text

    def _checked_outcome(self, b: Plan) -> str | None:
        """The verdict check's outcome against baseline ``b`` at the point (``"wins"``,
        ``"loses"`` or ``"tie"``: fleet checks at the rates that separate the two fleets,
        within the goodputs' precision), None where the check did not run."""
        if self.verdict is not None:
            for v in self.verdict.verdicts:
                if v.baseline == b.topology and v.outcome:
                    return v.outcome
        return None

    def _summary_rows(self) -> list[Row]:
        """The plan's figures against their targets (the ``summary`` table)."""
        from pddplan.solver.plan import reported_bcr

        out = self.outcome
        plan = out.plan
        sla = out.problem.ttft_targets_s
        summary: list[Row] = [
            {"figure": "mode", "value": out.mode, "target": None},
            {"figure": "rate_rps", "value": plan.rate_rps, "target": None},
            {"figure": "goodput_rps", "value": plan.goodput_rps, "target": None},
            {"figure": "cost_usd_per_hour", "value": plan.cost_usd_per_hour, "target": None},
            {
                "figure": "bcr_requests_per_usd",
                "value": reported_bcr(plan.bcr_requests_per_usd),
                "target": None,
            },
            *({"figure": k, "value": v, "target": None} for k, v in _per_mtok(plan).items()),
            {"figure": "ttft_p50_s", "value": plan.prefill.ttft_s[0], "target": sla[0]},
            {"figure": "ttft_p90_s", "value": plan.prefill.ttft_s[1], "target": sla[1]},
            {"figure": "ttft_p99_s", "value": plan.prefill.ttft_s[2], "target": sla[2]},
            {
                "figure": "tpot_ms",
                "value": out.problem.tpot_s * 1e3,
                "target": out.problem.tpot_s * 1e3,
            },
            {
                "figure": "rld_output_token_share",
                "value": plan.rld_output_token_share,
                "target": None,
            },
            {
                "figure": "link_utilization",
                "value": plan.route.link_utilization,
                "target": out.problem.link_utilization_cap,
            },
            {"figure": "routing", "value": routing_text(plan), "target": None},
            {"figure": "handover", "value": plan.handover, "target": None},
            {"figure": "md_stall_ms", "value": plan.md_stall_s * 1e3, "target": None},
            {"figure": "binding", "value": "; ".join(plan.binding), "target": None},
        ]
        if out.mode != "rate":
            summary.append({"figure": "scale_bound", "value": out.scale_bound, "target": None})
        return summary

    def _pipeline_rows(self) -> list[Row]:
        """TTFT percentiles by pipeline (P-MD, P-RLD-MD ...) and each one's share."""
        return [
            {
                "pipeline": k,
                "share": v["share"],
                "ttft_p50_s": v["p50"],
                "ttft_p90_s": v["p90"],
                "ttft_p99_s": v["p99"],
            }
            for k, v in self.ttft_by_pipeline_s.items()
        ]

    def _baselines(self) -> tuple[list[Row], list[dict[str, Any]]]:
        """The baselines' rows (against the plan) and their JSON documents."""
        from pddplan.solver.plan import reported_bcr

        plan = self.outcome.plan
        base_rows: list[Row] = []
        base_json = []
        for b in self.outcome.baselines:
            row = {
                "name": b.topology,
                "chips": ", ".join(f"{n} {c}" for c, n in b.chips_of().items()),
                "owned_chips_used": sum(c.owned for c in cost_split(b)),
                "cost_usd_per_hour": b.cost_usd_per_hour,
                "goodput_rps": b.goodput_rps,
                "bcr_requests_per_usd": reported_bcr(b.bcr_requests_per_usd),
                "ttft_p50_s": b.prefill.ttft_s[0],
                "ttft_p90_s": b.prefill.ttft_s[1],
                "ttft_p99_s": b.prefill.ttft_s[2],
                "meets_sla": b.meets_sla,
                "bcr_ratio": _ratio(plan.bcr_requests_per_usd, b.bcr_requests_per_usd),
                "cost_ratio": _ratio(plan.cost_usd_per_hour, b.cost_usd_per_hour),
                "goodput_ratio": _ratio(plan.goodput_rps, b.goodput_rps),
            }
            base_rows.append(row)
            bj = {
                "name": b.topology,
                **_figures(b),
                "roles": _roles_json(b),
                "procurement": procurement_rows(b),
            }
            for k in ("bcr_ratio", "cost_ratio", "goodput_ratio"):
                # null where the baseline's figure is 0 (the ratio is unbounded), with why
                bj[k] = row[k]
            if row["bcr_ratio"] is None:
                why: str | None
                if math.isfinite(plan.bcr_requests_per_usd):
                    why = (
                        f"baseline {b.topology} serves no rate within every SLA target (goodput 0)"
                    )
                else:  # PDD's fleet costs nothing: the verdict's rule says why
                    from pddplan.robust.verdict import bcr_ratio

                    why = bcr_ratio(plan, b)[1]
                bj["ratio_undefined"] = why
            base_json.append(bj)
        return base_rows, base_json

    def _verdict_rows(self) -> list[Row]:
        """One row per baseline: PDD's BCR over it, whether PDD wins, what that rests on."""
        from pddplan.robust.verdict import TIE

        assert self.verdict is not None
        return [
            {
                "versus": v.baseline,
                "bcr_ratio": v.bcr_ratio,
                # a tie (no rate separates the fleets within the goodput's precision) says so
                "pdd_wins": TIE if v.outcome == TIE else v.pdd_wins,
                "rests_on": "; ".join(flip_text(f) for f in v.flips)
                or f"no estimate in its plausible range ({len(self.verdict.inputs)} checked)",
            }
            for v in self.verdict.verdicts
        ]

    def _verdict_json(self) -> dict[str, Any]:
        assert self.verdict is not None
        vc = self.verdict
        return {
            "method": (
                "one estimated input at a time at each end of its plausible range; the fleets "
                "of the plan and the baselines held, their goodput and cost re-evaluated"
            ),
            "baselines": [
                {
                    "name": v.baseline,
                    "pdd_wins": v.pdd_wins,
                    "outcome": v.outcome,
                    "bcr_ratio": v.bcr_ratio,
                    "ratio_undefined": v.ratio_undefined,
                    "rests_on": [
                        {
                            "path": f.path,
                            "point": f.point if math.isfinite(f.point) else None,
                            "low": f.low,
                            "high": f.high,
                            "end": f.end,
                            "flips_at": f.flips_at,
                            "holds_at": f.holds_at,
                        }
                        for f in v.flips
                    ],
                }
                for v in vc.verdicts
            ],
            "inputs_checked": [
                {"path": p, "point": pt if math.isfinite(pt) else None, "low": lo, "high": hi}
                for p, pt, lo, hi in vc.inputs
            ],
            "not_checked": [{"path": n.path, "reason": n.reason} for n in vc.not_checked],
        }

    def _relay_edges_json(self) -> list[dict[str, Any]]:
        """Where relaying starts to pay on each lever (bandwidth, hit-rate shift, TTFT)."""
        return [
            {
                "lever": e.lever,
                "current": e.current,
                "relay_pays_at": e.value,
                # relaying over no-relay BCR; null with only_relay_meets_sla when the
                # no-relay plan misses the SLA there (the ratio is unbounded)
                "bcr_ratio_there": (
                    e.bcr_ratio if e.bcr_ratio is not None and math.isfinite(e.bcr_ratio) else None
                ),
                "only_relay_meets_sla": e.bcr_ratio is not None and not math.isfinite(e.bcr_ratio),
                "searched_to": e.searched_to,
                "unsizable_at": e.unsizable,
            }
            for e in self.outcome.relay_edges
        ]

    def _notes(self) -> list[str]:
        """The planner's notes, then the baselines that miss the SLA and the idle owned chips."""
        out = self.outcome
        notes = list(out.notes)
        for b in out.baselines:
            if not b.meets_sla:
                notes.append(
                    f"baseline {b.topology} cannot meet the TTFT targets at this rate with any "
                    "prefill count; it is sized for capacity and its goodput is the highest rate at "
                    "which its fleet meets every target"
                )
        for c in cost_split(out.plan):
            if c.owned_idle:
                notes.append(
                    f"{c.owned_idle} owned {c.chip} left idle: the plan does not need them (or "
                    f"no role may use {c.chip}: add it with --set roles.ROLE.chips=...)"
                )
        return notes

    def _plan_json(self) -> dict[str, Any]:
        plan = self.outcome.plan
        return {
            **_figures(plan),
            "roles": _roles_json(plan),
            "line_cost_usd_per_hour": plan.link_cost_usd_per_hour,
            "link_utilization": plan.route.link_utilization,
            "rld_output_token_share": plan.rld_output_token_share,
            "routing_threshold_hit_rate": plan.routing.hit_rate,
            # whether RLD finishes the anomalous requests (their own pipeline): the search
            # takes the better of the problem with and without, so a plan says which it is
            "anomalous_filter": plan.problem.topology.anomalous_filter,
            "handover": plan.handover,
            "md_stall_s": plan.md_stall_s,
            "ttft_by_pipeline_s": self.ttft_by_pipeline_s,
            "procurement": procurement_rows(plan),
            "prefill_mean_wait_s": self.prefill_mean_wait_s,
            "binding": plan.binding,
        }


def cache_text(c: Row) -> str:
    """The cache capacity chosen, in one sentence: ``Cache per P node: 0 GB host-dram, 4096 GB
    local-nvme (mean hit rate 0.913, 0.028 $/h of cache; least cost of 10 capacity options).``"""
    caps = ", ".join(
        f"{v:g} GB {k.removesuffix('_gb_per_node')}"
        for k, v in c.items()
        if k.endswith("_gb_per_node")
    )
    return (
        f"Cache per P node: {caps} (mean hit rate {c['mean_hit_rate']:.3f}, "
        f"{c['cache_usd_per_hour']:.4g} $/h of cache; {c['chosen_by']} of "
        f"{c['options_compared']} capacity options)."
    )


def flip_text(f: Flip) -> str:
    """``path (flips between A and B; range lo to hi)``: where an input reverses a verdict,
    between the value nearest the point where it holds and the one found to reverse it
    (ascending; its end alone where the scenario has no point value)."""
    if f.holds_at is None:
        where = f"at its {f.end} end"
    else:
        a, b = sorted((f.holds_at, f.flips_at))
        where = f"between {a:.4g} and {b:.4g}"
    return f"{f.path} (flips {where}; range {f.low:.4g} to {f.high:.4g})"


def estimated_cost_text(plan: Plan) -> str:
    """How much of the plan's cost rests on estimated prices, in one sentence
    (:func:`pddplan.solver.plan.estimated_cost`): ``27.4 of 155.4 $/h (18%) rests on estimated
    prices: line price.``"""
    from pddplan.solver.plan import estimated_cost

    ec = estimated_cost(plan)
    if not ec.items:
        return (
            f"None of the {ec.total_usd_per_hour:,.1f} $/h rests on prices the profiles mark "
            "as estimates."
        )
    return (
        f"{ec.estimated_usd_per_hour:,.1f} of {ec.total_usd_per_hour:,.1f} $/h "
        f"({ec.share:.0%}) rests on estimated prices: {', '.join(w for w, _ in ec.items)}."
    )


def procurement_rows(plan: Plan) -> list[Row]:
    """The plan's chips by how they are paid for: owned (used and idle), rented, newly bought."""
    from pddplan.solver.plan import cost_split

    return [
        {
            "chip": c.chip,
            "chips": c.chips,
            "owned": c.owned,
            "owned_idle": c.owned_idle,
            "rented": c.rented,
            "bought": c.bought,
            "cost_usd_per_hour": c.cost_usd_per_hour,
            "owned_usd_per_hour": c.owned_usd_per_hour,
            "rented_usd_per_hour": c.rented_usd_per_hour,
            "bought_usd_per_hour": c.bought_usd_per_hour,
            "new_capex_usd": c.new_capex_usd,
        }
        for c in cost_split(plan)
    ]


def cost_split(plan: Plan):  # noqa: ANN201 - a thin re-export for the baselines' rows
    from pddplan.solver.plan import cost_split as split

    return split(plan)


def idle_owned_text(plan: Plan) -> str | None:
    """What a plan that leaves owned chips idle is charged for them, where their capex is
    amortized (``inventory.owned_cost: amortized``): nothing, as every fleet here is charged
    the owned chips it uses (a chargeback: the idle ones are left for other work). Where they
    would sit unused, their capex is spent whichever fleet is chosen, and the sunk view compares
    the fleets on what each adds. None where no owned chip is idle or their capex is sunk."""
    pricing = plan.problem.pricing if plan.problem is not None else None
    if pricing is None or pricing.owned_cost != "amortized":
        return None
    idle = {r["chip"]: r["owned_idle"] for r in procurement_rows(plan) if r["owned_idle"]}
    if not idle:
        return None
    chips = ", ".join(f"{n} {c}" for c, n in idle.items())
    return (
        f"The {chips} owned and left idle are charged to no fleet (owned_cost amortized: each "
        "fleet, the baselines' too, pays the amortized capex of the owned chips it uses, the "
        "idle ones left for other work); if they would sit unused, their capex is spent "
        "whichever fleet is chosen, and `--set inventory.owned_cost=sunk` compares the fleets "
        "on what each adds."
    )


def _role_record(plan: Plan, role: str) -> dict[str, Any] | None:
    """One role of the plan, as the plan table's row and the JSON document's ``roles`` entry
    both give it (None: the plan has no such pool)."""
    v = plan.roles.get(role)
    if v is None:
        return None
    inst, n = v
    dec = plan.decode.get(role) if role != "P" else None
    return {
        "datacenter": ROLE_DATACENTER[role] if plan.topology != "same-dc" else "A",
        "chip": inst.chip.name,
        "chips_per_instance": inst.tensor_parallel,
        "layout": inst.lay.label,
        "instances": n,
        "chips": n * inst.tensor_parallel,
        "cost_usd_per_hour": plan.role_cost_usd_per_hour[role],
        "batch_per_instance": dec.batch_per_instance if dec else None,
        "utilization": plan.prefill.utilization if role == "P" else None,
        "bound_by": plan.prefill.bound_by if role == "P" else (dec.batch_bound_by if dec else None),
    }


def _role_rows(plan: Plan) -> list[Row]:
    rows: list[Row] = []
    for role in plan.roles:
        rec = _role_record(plan, role)
        if rec is None:
            continue
        name = "D" if plan.topology == "same-dc" and role != "P" else role
        rows.append({"role": name, **rec})
    if plan.link_cost_usd_per_hour:
        # its utilization, and what binds it where the plan's binding list names the line
        line_bound = "line utilization" if "line utilization" in plan.binding else None
        rows.append(
            {
                "role": "line",
                "datacenter": "A-B",
                "cost_usd_per_hour": plan.link_cost_usd_per_hour,
                "utilization": plan.route.link_utilization,
                "bound_by": line_bound,
            }
        )
    if plan.cache_cost_usd_per_hour:  # the P nodes' cache tiers: the rows add up to the cost
        rows.append(
            {"role": "cache", "datacenter": "A", "cost_usd_per_hour": plan.cache_cost_usd_per_hour}
        )
    return rows


def _per_mtok(plan: Plan) -> dict[str, float | None]:
    """The plan's cost per million input and output tokens, by result key."""
    from pddplan.solver.token_cost import MTOK_KEYS, cost_usd_per_mtok

    return dict(zip(MTOK_KEYS, cost_usd_per_mtok(plan), strict=True))


def _figures(plan: Plan) -> dict[str, Any]:
    """A plan's headline figures in the JSON document. A fleet that costs nothing (owned chips
    at sunk cost without opex, and no line or a free one) has no finite BCR: ``null``, with
    ``bcr_undefined`` saying why (JSON carries no infinity)."""
    from pddplan.solver.plan import FREE_FLEET_BCR, reported_bcr
    from pddplan.solver.sla import PERCENTILE_NAMES

    bcr = reported_bcr(plan.bcr_requests_per_usd)
    why = {"bcr_undefined": FREE_FLEET_BCR} if bcr is None else {}
    return {
        "rate_rps": plan.rate_rps,
        "goodput_rps": plan.goodput_rps,
        "cost_usd_per_hour": plan.cost_usd_per_hour,
        "bcr_requests_per_usd": bcr,
        **why,
        **_per_mtok(plan),
        "chips": plan.chips_of(),
        "ttft_s": dict(zip(PERCENTILE_NAMES, plan.prefill.ttft_s, strict=True)),
        "meets_sla": plan.meets_sla,
    }


def _roles_json(plan: Plan) -> dict[str, Any]:
    return {role: _role_record(plan, role) for role in plan.roles}


def routing_text(plan: Plan) -> str:
    """The routing rule in words; where RLD finishes the anomalous requests (the anomalous
    filter), they are named apart (``anomalous: P-RLD``)."""
    if plan.topology != "pdd":
        return "P-D" if plan.topology == "same-dc" else "all P-MD"
    pb = plan.problem
    to_rld = pb is not None and bool((~pb.on_decode_side).any())
    r = plan.routing
    if r.relay_all:
        text = "all P-RLD-MD"
    elif r.threshold <= 0:
        text = "no relay: P-MD" if to_rld else "all P-MD (no relay)"
    else:
        text = f"hit rate < {r.threshold:.4g}: P-RLD-MD; else P-MD"
    return f"{text}; anomalous: P-RLD" if to_rld else text
