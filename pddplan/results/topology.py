"""The result of ``topology``: per-site, per-line, per-flow and per-failure tables."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pddplan.results.base import Report, Result, Row, Section
from pddplan.sim.figures import PERCENTILES
from pddplan.solver.plan import role_owned_chips

if TYPE_CHECKING:
    from pddplan.topology import Failure, TopologyPlan
    from pddplan.topology.simulate import SimulatedPipeline, TopologySim

#: Why a topology plan that serves traffic and costs nothing has no finite BCR (its JSON's
#: ``bcr_undefined``).
FREE_TOPOLOGY_BCR = (
    "the plan costs 0 $/h (its chips owned at an owned_usd_per_chip_hour of 0, and no line "
    "leased or only free ones): its BCR is unbounded"
)


@dataclass(frozen=True)
class TopologyResult(Result):
    """A topology plan (:class:`pddplan.topology.TopologyPlan`) arranged for the renderers."""

    plan: TopologyPlan
    #: the plan simulated (``topology --simulate N``), or None
    sim: TopologySim | None = None

    def flow_rows(self) -> list[Row]:
        """One row per chosen pipeline. Its cost is its fleet and lines at the sites' rental
        prices less its part of what the owned chips save (:func:`flow_owned_savings`), so the
        rows add up to the plan's cost; with owned chips in the plan, ``owned saving`` says how
        much of each row's cost that part took off."""
        tp = self.plan
        savings = flow_owned_savings(tp)
        owned = any(savings.values())
        rows: list[Row] = []
        for o in tp.chosen:
            pipe = tp.pipelines[o.pipeline]
            p = o.plan
            ttft = p.prefill.ttft_s
            rows.append(
                {
                    "source": o.source,
                    "p_site": pipe.p_site,
                    "md_site": pipe.m_site,
                    "line": o.line or "-",
                    "access_rtt_ms": tp.sources[o.source].access_rtt_s(pipe.p_site) * 1000.0,
                    "share": tp.carried_share[o.pipeline],
                    "sized_share": o.level / tp.share_levels,
                    "rate_rps": tp.carried_share[o.pipeline]
                    * o.rate_rps
                    * tp.share_levels
                    / o.level,
                    "sized_rate_rps": o.rate_rps,
                    "fleet": " + ".join(
                        f"{r} {n}x{inst.chip.name}/{inst.tensor_parallel}"
                        for r, v in p.roles.items()
                        if v is not None
                        for inst, n in [v]
                    ),
                    "lines_leased": o.lines,
                    "line_utilization": float(p.route.link_utilization) if o.line else 0.0,
                    "ttft_p99_s": float(ttft[2]),
                    **({"owned_saving_usd_per_hour": savings[o.pipeline]} if owned else {}),
                    "cost_usd_per_hour": o.cost_usd_per_hour - savings[o.pipeline],
                }
            )
        return rows

    def site_rows(self) -> list[Row]:
        """One row per site and chip kind the plan uses: its chips, the owned ones it uses
        and the rest, rented (or bought, where a two-site scenario's inventory buys them).

        Owned chips are those the topology's MILP uses (a site's ``chips:``) and, for the
        topology form of a two-site scenario, those its own ``inventory:`` gives the pipeline's
        plan (:func:`~pddplan.solver.plan.role_owned_chips`, as ``solve`` counts them)."""
        tp = self.plan
        used: dict[tuple[str, str], int] = {}
        owned: dict[tuple[str, str], float] = dict(tp.owned_used)
        bought: dict[tuple[str, str], int] = {}
        for o in tp.chosen:
            for s, c, n in o.chips:
                used[(s, c)] = used.get((s, c), 0) + n
            pipe = tp.pipelines[o.pipeline]
            pricing = getattr(o.plan.problem, "pricing", None)
            own = role_owned_chips(o.plan.roles, pricing)
            for role, v in o.plan.roles.items():
                if v is None or v[1] == 0:
                    continue
                inst, n = v
                key = (pipe.m_site if role == "MD" else pipe.p_site, inst.chip.name)
                owned[key] = owned.get(key, 0.0) + own.get(role, 0)
                if pricing is not None and pricing.additional == "buy":
                    extra = n * inst.tensor_parallel - own.get(role, 0)
                    bought[key] = bought.get(key, 0) + extra
        rows: list[Row] = []
        for (s, c), n in sorted(used.items()):
            st = tp.market.stock.get((s, c))
            own_n = round(owned.get((s, c), 0.0))
            row: Row = {
                "site": s,
                "chip": c,
                "chips": n,
                "owned_used": own_n,
                "rented": n - own_n - bought.get((s, c), 0),
            }
            if bought:
                row["bought"] = bought.get((s, c), 0)
            row["rent_limit"] = st.rent_limit if st is not None else None
            rows.append(row)
        return rows

    def line_rows(self) -> list[Row]:
        tp = self.plan
        rows: list[Row] = []
        for line, most in sorted(tp.market.line_max.items()):
            mine = [o for o in tp.chosen if o.line == line]
            rows.append(
                {
                    "line": line,
                    "lines_leased": sum(o.lines for o in mine),
                    "max_count": most,
                    "pipelines": ", ".join(o.pipeline for o in mine) or "-",
                    "line_utilization_max": max(
                        (float(o.plan.route.link_utilization) for o in mine), default=0.0
                    ),
                    "cost_usd_per_hour": sum(float(o.plan.link_cost_usd_per_hour) for o in mine),
                }
            )
        return rows

    def sim_rows(self) -> list[Row]:
        """One row per pipeline simulated: in the plan, then under each line failure."""
        assert self.sim is not None
        return [_sim_row(p) for p in self.sim.all_pipelines()]

    def failure_rows(self) -> list[Row]:
        """One row per single failure: the rate its sources lose from the pipelines it takes
        down or degrades [req/s] and that rate's share of the traffic the plan serves, where
        it goes and what breaks. With partial failures in the set (``resilience:``) the row
        names its kind and what failed; without, the line down (as before there were)."""
        rows: list[Row] = []
        simulated = {f.line: f for f in self.sim.failures} if self.sim is not None else {}
        # FailureSim.line is the failure's label (a line's name for a whole line down)
        partial = any(f.kind != "line" for f in self.plan.failures)
        tp = self.plan
        for f in tp.failures:
            # each source's lost share is of its own rate: counted in requests per second
            lost_rps = sum(v[0] * tp.sources[s].rate_rps for s, v in f.sources.items())
            what: Row = {"kind": f.kind, "failed": f.label} if partial else {"line_down": f.line}
            rows.append(
                {
                    **what,
                    "rate_lost_rps": lost_rps,
                    "traffic_share_lost": (
                        lost_rps / tp.served_total_rps if tp.served_total_rps > 0 else 0.0
                    ),
                    "moved_to": _moved_to(f),
                    "survives": f.survives,
                    "breaks": "; ".join(f.breaks) or "-",
                }
            )
            if f.label in simulated:
                rows[-1]["simulated_meets_sla"] = simulated[f.label].meets_sla
        return rows

    def report(self) -> Report:
        tp = self.plan
        kind = tp.failure_kind
        title = f"topology plan for {tp.spec_name} ({tp.objective})"
        answer = [f"Cost {tp.cost_usd_per_hour:.2f} $/h over {len(tp.chosen)} pipelines."]
        bcr = tp.served_bcr_requests_per_usd
        payload: dict[str, Any] = {
            "scenario": tp.spec_name,
            "mode": tp.mode,
            "resilient": tp.resilient,
            "share_levels": tp.share_levels,
            "cost_usd_per_hour": tp.cost_usd_per_hour,
            "served_rps": dict(tp.served_rps),
            "served_total_rps": tp.served_total_rps,
            # JSON carries no infinity: a plan that serves traffic and costs nothing has a null
            # BCR and says why
            # BCR at the traffic served, not solve's at the fleet's goodput: its own key
            "served_bcr_requests_per_usd": bcr if math.isfinite(bcr) else None,
        }
        if not math.isfinite(bcr):
            payload["bcr_undefined"] = FREE_TOPOLOGY_BCR
        if tp.mode != "cost":
            demand = sum(t.rate_rps for t in tp.sources.values())
            unserved = [s for s, r in tp.served_rps.items() if r < tp.sources[s].rate_rps]
            answer.append(
                f"Serves {tp.served_total_rps:.4g} of {demand:.4g} req/s "
                + (
                    f"({bcr:.4g} requests served per $, the BCR at the traffic served)"
                    if math.isfinite(bcr)
                    else "(an unbounded BCR: the plan costs nothing)"
                )
                + (f"; {', '.join(unserved)} not served in full." if unserved else ".")
            )
            payload["budget_usd_per_hour"] = tp.budget_usd_per_hour
        if tp.plain_cost_usd_per_hour is not None:
            extra = tp.cost_usd_per_hour - tp.plain_cost_usd_per_hour
            answer.append(
                f"Resilience costs {extra:.2f} $/h over the cheapest plan "
                f"({tp.plain_cost_usd_per_hour:.2f} $/h)."
            )
            payload["plain_cost_usd_per_hour"] = tp.plain_cost_usd_per_hour
            payload["resilience_cost_delta_usd_per_hour"] = extra
        broken = [f.label for f in tp.failures if not f.survives]
        answer.append(
            f"Survives every single {kind}."
            if not broken
            else f"A failure of {', '.join(broken)} leaves traffic unserved or a target broken."
        )
        sections = [
            Section("flows", self.flow_rows()),
            Section("sites", self.site_rows()),
            Section("lines", self.line_rows()),
            Section("line failures (N-1)", self.failure_rows(), key="failures"),
        ]
        warnings: list[str] = []
        if self.sim is not None:
            sim = self.sim
            sections.append(Section("simulated TTFT", self.sim_rows(), key="simulated"))
            sims = sim.all_pipelines()
            off = [p for p in sims if p.off]
            warnings = [w for p in off for w in p.warnings()]
            answer.append(
                f"Simulated ({sim.requests} requests a pipeline, seed {sim.seed}): "
                + (
                    "every TTFT p50/p90/p99 within 10% of the closed forms."
                    if not off
                    else f"{len(warnings)} TTFT figures of {len(off)} pipelines more than 10% "
                    "off the closed forms (warned)."
                )
            )
            if sim.failures:
                bad = [f.line for f in sim.failures if not f.meets_sla]
                answer.append(
                    f"Every single {kind}, simulated, meets its SLA."
                    if not bad
                    else f"Simulated, a failure of {', '.join(bad)} misses an SLA."
                )
            payload["simulation"] = {
                "requests_per_pipeline": sim.requests,
                "seed": sim.seed,
                "within_10pct": not off,
                "failures_meet_sla": all(f.meets_sla for f in sim.failures),
            }
        payload.update({s.slug: s.rows for s in sections})
        return Report(title, sections, payload, answer=answer, warnings=warnings)


def flow_owned_savings(tp: TopologyPlan) -> dict[str, float]:
    """Pipeline -> its part of what the plan's owned chips save [USD/h]
    (:func:`pddplan.topology.milp.owned_savings`, the saving the plan's cost takes off): a
    site's saving on one chip kind is shared by the pipelines that use that kind there, in
    proportion to their chips of it (the owned chips are one pool, not any one pipeline's;
    a kind one pipeline alone uses there is that pipeline's whole saving)."""
    from pddplan.topology.milp import owned_savings

    chosen = range(len(tp.chosen))
    saved = owned_savings(tp.chosen, chosen, tp.market)
    used: dict[tuple[str, str], int] = {}
    for o in tp.chosen:
        for s, c, n in o.chips:
            used[(s, c)] = used.get((s, c), 0) + n
    out = {o.pipeline: 0.0 for o in tp.chosen}
    for o in tp.chosen:
        for s, c, n in o.chips:
            if (s, c) in saved:
                out[o.pipeline] += saved[(s, c)] * n / used[(s, c)]
    return out


def _moved_to(f: Failure) -> str:
    """Where a failure's traffic goes: each pipeline that takes more, at its rate after it; a
    pipeline the failure degrades is marked so, with the rate it carries on its degraded
    fleet."""
    hit = f.degraded or {}
    parts = [
        f"{k} ({v:.4g} req/s{', degraded' if k in hit else ''})" for k, v in f.moved_to.items()
    ]
    parts += [
        f"{k} ({r:.4g} req/s, degraded)" for k, (r, _p, _pb) in hit.items() if k not in f.moved_to
    ]
    return ", ".join(parts) or "-"


def _sim_row(p: SimulatedPipeline) -> Row:
    row: Row = {
        "case": p.case,
        "pipeline": p.pipeline,
        "rate_rps": p.rate_rps,
    }
    for i, q in enumerate(PERCENTILES):  # the SLA's, as the simulator reports them
        row[f"closed_ttft_p{q}_s"] = p.closed_ttft_s[i]
        row[f"simulated_ttft_p{q}_s"] = p.simulated_ttft_s[i]
        row[f"gap_p{q}_pct"] = p.gap_pct[i]
    row["off_by_more_than_10pct"] = p.off
    row["meets_sla"] = p.meets_sla
    return row
