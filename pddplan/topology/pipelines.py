"""Pipelines of a topology and their options, each sized by the existing plan builder.

A pipeline serves one source: prefill and relay decode at site ``p``, main decode at site ``m``.
With ``m != p`` the KV goes over the line between them: the pipeline's scenario is an ordinary
two-site scenario (the source's workload and SLA, site ``p``'s P and RLD choices and RDMA fabric,
site ``m``'s MD choice, the line's link profile), solved by :func:`pddplan.tiers.solve` (``solve``'s plan, its cache tiers sized too).
With ``m = p`` it is the same-datacenter deployment the ``same-dc`` baseline sizes
(:func:`pddplan.solver.baseline_at_rate`): P and D on one chip kind over the site's RDMA.

Each pipeline keeps its own pools and its own lines (nothing is shared between pipelines, so each
is sized exactly as the two-site planner sizes it): ``k`` leased lines between two sites are one
bundle of ``k`` times the line's bandwidth at ``k`` times its price (traffic spread over the
bundle, as link aggregation or ECMP does). An option is one pipeline at one share level and
bundle size: ``level / share_levels`` of the source's rate.

The source's users reach site ``p`` with the RTT of ``access`` (0 at the entry): the first
token comes back over that path, so the pipeline is sized against TTFT targets lowered by it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any

from pddplan.errors import InfeasibleError, TopologyError
from pddplan.io.overrides import ScenarioSource
from pddplan.io.yamldoc import YamlDoc
from pddplan.spec.base import MIN_SECONDS
from pddplan.spec.topology import Line, RoleChoice, Site, TrafficSource, route_rtt_ms
from pddplan.topology.inputs import TopologyInput, profile_rental_usd_per_hour, top_level

#: [s] The least TTFT target a pipeline may be sized against (the scenario's lower bound).
MIN_TTFT_TARGET_S = MIN_SECONDS
#: The WAN link a same-site pipeline's scenario names: the scenario format needs one, and the
#: same-datacenter sizing never uses it (no line cost, no WAN path: ``Topology.cross_dc``).
SAME_SITE_LINK = "wan-100g-same-city"


@dataclass(frozen=True)
class Pipeline:
    source: str
    p_site: str
    m_site: str
    line: Line | None  # None: P and D in one site

    @property
    def name(self) -> str:
        return f"{self.source}:{self.p_site}->{self.m_site}"

    @property
    def line_name(self) -> str | None:
        return self.line.label if self.line is not None else None


@dataclass(frozen=True)
class Option:
    """One pipeline at one share level and bundle size, sized: what the MILP chooses from."""

    source: str
    pipeline: str
    level: int  # served rate = level / share_levels of the source's rate
    line: str | None  # the line it leases on, or None
    lines: int  # lines of the bundle (0 without a line)
    cost_usd_per_hour: float  # the plan builder's cost: chips at the sites' prices + bundle
    chips: tuple[tuple[str, str, int], ...]  # (site, chip, count)
    rate_rps: float = 0.0
    plan: Any = field(default=None, compare=False, repr=False)
    #: the solver's outcome the plan came from (None for a one-site pipeline)
    outcome: Any = field(default=None, compare=False, repr=False)
    #: its position in the topology's options (:func:`size_options`), -1 when built by hand
    index: int = -1


@dataclass
class Options:
    options: list[Option]
    pipelines: dict[str, Pipeline]
    #: source -> why each pipeline it could use cannot serve it (for the error message)
    reasons: dict[str, list[str]]


def pipelines_of(ti: TopologyInput) -> list[Pipeline]:
    """Every pipeline a source can use: P and RLD at its entry or a site it lists in ``access``,
    MD at the same site or across a line from it (one hop)."""
    sites = ti.sites
    out: list[Pipeline] = []
    for t in ti.spec.traffic:
        for p in _reachable(t, sites):
            if sites[p].roles.P is None:
                continue
            if _same_site_chips(ti, sites[p]):
                out.append(Pipeline(t.name, p, p, None))
            for ln in ti.spec.lines:
                if p in ln.sites:
                    m = ln.sites[1] if ln.sites[0] == p else ln.sites[0]
                    if sites[m].roles.MD is not None:
                        out.append(Pipeline(t.name, p, m, ln))
    return out


def _reachable(t: TrafficSource, sites: dict[str, Site]) -> list[str]:
    return [s for s in sites if s == t.entry or s in t.access]


def choice_chips(ti: TopologyInput, choice: RoleChoice) -> list[str]:
    """The chips a site's role may use, in its order (``*``: every chip of the catalog, sorted,
    as :func:`~pddplan.spec.scenario.role_chip_names` reads it in the pipeline's scenario)."""
    if "*" in choice.chips:
        return sorted(ti.registry.index("chip"))
    return list(dict.fromkeys(choice.chips))


def _same_site_chips(ti: TopologyInput, site: Site) -> list[str]:
    p, md = site.roles.P, site.roles.MD
    if p is None or md is None:
        return []
    on_p = set(choice_chips(ti, p))
    return [c for c in choice_chips(ti, md) if c in on_p]


def _rld(site: Site) -> RoleChoice:
    assert site.roles.P is not None
    return site.roles.RLD or site.roles.P


def _role(choice: RoleChoice) -> dict[str, Any]:
    return choice.model_dump(mode="json")


def pipeline_doc(
    ti: TopologyInput, pipe: Pipeline, rate_rps: float, *, baseline: tuple[str, int] | None = None
) -> dict[str, Any] | None:
    """The scenario document of ``pipe`` at ``rate_rps``; None when the access RTT leaves the
    source no TTFT budget at ``pipe``'s P site. The two-site form's pipeline is its own file."""
    t = ti.sources[pipe.source]
    doc = json.loads(json.dumps(ti.base))
    doc["rate_rps"] = rate_rps
    if ti.two_site:
        return doc  # the file itself, at the rate
    doc["workload"] = json.loads(json.dumps(ti.raw_workloads[t.name]))
    rtt = t.access_rtt_s(pipe.p_site)
    sla = t.sla.model_dump(mode="json")
    from pddplan.solver.sla import TTFT_TARGET_KEYS

    for k in TTFT_TARGET_KEYS:
        sla[k] -= rtt
        if sla[k] < MIN_TTFT_TARGET_S:
            return None
    doc["sla"] = sla
    sites = ti.sites
    ps, ms = sites[pipe.p_site], sites[pipe.m_site]
    assert ps.roles.P is not None and ms.roles.MD is not None
    doc["rdma"] = ps.rdma
    doc["roles"] = {"P": _role(ps.roles.P), "RLD": _role(_rld(ps)), "MD": _role(ms.roles.MD)}
    overrides: dict[str, Any] = json.loads(json.dumps(doc.get("overrides", {})))
    chips_ov = overrides.setdefault("chips", {})
    for chip, price in _chip_prices(ti, pipe, ps, ms).items():
        chips_ov.setdefault(chip, {}).setdefault("price", {})["rental_usd_per_hour"] = price
    if not chips_ov:
        overrides.pop("chips")
    if pipe.line is None:
        doc["link"] = SAME_SITE_LINK
        if baseline is not None:
            chip, n = baseline
            doc["baseline"] = {
                "chip": chip,
                "chips_per_instance": n,
                "layouts": list(ms.roles.MD.layouts),
            }
    else:
        doc["link"] = pipe.line.link
        numbers = dict(pipe.line.link_numbers)
        if pipe.line.route_km is not None:
            numbers["rtt_ms"] = route_rtt_ms(pipe.line.route_km)
        if numbers:
            links = overrides.setdefault("links", {})
            links[pipe.line.link] = {**links.get(pipe.line.link, {}), **numbers}
    if overrides:
        doc["overrides"] = overrides
    return doc


def _chip_prices(ti: TopologyInput, pipe: Pipeline, ps: Site, ms: Site) -> dict[str, float]:
    """Chip -> the local rental price its pipeline's scenario gives it (only chips a site
    prices itself; the others keep their profile's price). A chip whose price differs between
    the two sites of one pipeline has no one price (TopologyError). A role's ``*`` is every
    chip of the catalog (:func:`choice_chips`), each priced as its site prices it, as the
    sites' chip stocks are (:func:`~pddplan.topology.market_of`)."""
    out: dict[str, float] = {}
    where: dict[str, str] = {}
    explicit: set[str] = set()
    roles = [(ps, ps.roles.P), (ps, _rld(ps)), (ms, ms.roles.MD)]
    for site, choice in roles:
        assert choice is not None
        for c in choice_chips(ti, choice):
            sc = site.chips.get(c)
            price = sc.rental_usd_per_hour if sc is not None else None
            if price is not None:
                explicit.add(c)
            else:
                price = profile_rental_usd_per_hour(ti, c)
            if c in out and out[c] != price:
                raise TopologyError(
                    f"chip {c} rents at {out[c]:g} $/h at site {where[c]} and {price:g} $/h "
                    f"at site {site.name}, both in pipeline {pipe.name}: one plan has one price "
                    "per chip; give the sites one price or different chip lists"
                    + (
                        " (a role's '*' lists every chip of the catalog)"
                        if any("*" in ch.chips for _, ch in roles if ch is not None)
                        else ""
                    ),
                    file=ti.file,
                    key=f"sites ({site.name}).chips.{c}",
                )
            out[c] = price
            where[c] = site.name
    return {c: v for c, v in out.items() if c in explicit}


def resolve_doc(ti: TopologyInput, doc: dict[str, Any]) -> Any:
    """The resolved scenario of a pipeline's document (validated as a scenario file)."""
    src = ScenarioSource(doc=YamlDoc(data=doc, lines={}, file=ti.file), registry=ti.registry)
    return src.base


def bundle_doc(doc: dict[str, Any], pipe: Pipeline, k: int, one: Any) -> dict[str, Any]:
    """A pipeline's document with a bundle of ``k`` lines: ``k`` times the bandwidth and the
    price of one line as ``one`` (the document's resolved scenario) has them."""
    assert pipe.line is not None
    out: dict[str, Any] = json.loads(json.dumps(doc))
    name = pipe.line.link
    links = out.setdefault("overrides", {}).setdefault("links", {})
    links[name] = {
        **links.get(name, {}),
        "bandwidth_gbit_per_s": k * one.link.bandwidth_gbit_per_s,
        "price_usd_per_month": k * one.link.price_usd_per_month,
    }
    return out


def size_options(ti: TopologyInput, executor: Any = None) -> Options:
    """Every option of every pipeline, sized by the plan builder (an option that no plan serves
    within the SLA is left out, and why is kept for the error a source with none gets).

    ``executor`` (:mod:`pddplan.executors`, entered) sizes the pipelines in parallel, one task
    each (:func:`size_pipeline`); the options are the same, in the same order, on any executor.
    """
    pipes = pipelines_of(ti)
    if executor is None:
        sized = [size_pipeline(p, ti=ti) for p in pipes]
    else:
        sized = executor.map(size_pipeline, pipes, ti=ti)
    out: list[Option] = []
    reasons: dict[str, list[str]] = {t.name: [] for t in ti.spec.traffic}
    for pipe, (opts, why) in zip(pipes, sized, strict=True):
        start = len(out)
        out.extend([replace(o, index=start + i) for i, o in enumerate(opts)])
        reasons[pipe.source].extend(why)
    return Options(out, {p.name: p for p in pipes}, reasons)


def size_pipeline(pipe: Pipeline, *, ti: TopologyInput) -> tuple[list[Option], list[str]]:
    """One pipeline's options at every share level and bundle size, and why each one left out
    is (a module-level function of picklable arguments: an executor's task)."""
    from pddplan import tiers
    from pddplan.solver import SAME_DC, baseline_at_rate

    levels = ti.spec.share_levels
    out: list[Option] = []
    reasons: list[str] = []
    t = ti.sources[pipe.source]
    for level in range(1, top_level(ti) + 1):
        rate = t.rate_rps * level / levels
        if pipe.line is None:
            ps = ti.sites[pipe.p_site]
            md = ps.roles.MD
            assert md is not None
            for chip in _same_site_chips(ti, ps):
                for n in md.chips_per_instance:
                    doc = pipeline_doc(ti, pipe, rate, baseline=(chip, n))
                    if doc is None:
                        reasons.append(_no_budget(t, pipe.p_site))
                        break
                    rs = resolve_doc(ti, doc)
                    try:
                        plan = baseline_at_rate(rs, SAME_DC, rate)
                    except InfeasibleError as exc:
                        reasons.append(f"{pipe.name} ({chip}): {exc}")
                        continue
                    if not plan.meets_sla:
                        reasons.append(f"{pipe.name} ({chip}): misses the SLA")
                        continue
                    out.append(_option(pipe, level, 0, plan, rate))
            continue
        doc = pipeline_doc(ti, pipe, rate)
        if doc is None:
            reasons.append(_no_budget(t, pipe.p_site))
            continue
        one = resolve_doc(ti, doc)
        for k in range(1, pipe.line.max_count + 1):
            rs = one if k == 1 else resolve_doc(ti, bundle_doc(doc, pipe, k, one))
            try:
                outcome = tiers.solve(rs, rate_rps=rate, baselines=False)
            except InfeasibleError as exc:
                reasons.append(f"{pipe.name} ({k} lines): {exc}")
                continue
            out.append(_option(pipe, level, k, outcome.plan, rate, outcome))
    return out, reasons


def _no_budget(t: TrafficSource, site: str) -> str:
    return (
        f"the RTT to {site} ({t.access_rtt_s(site) * 1000:.4g} ms) leaves no TTFT budget "
        f"(p50 target {t.sla.ttft_p50_s:g} s)"
    )


def _option(
    pipe: Pipeline, level: int, k: int, plan: Any, rate: float, outcome: Any = None
) -> Option:
    chips: dict[tuple[str, str], int] = {}
    for role, v in plan.roles.items():
        if v is None or v[1] == 0:
            continue
        inst, n = v
        site = pipe.m_site if role == "MD" else pipe.p_site
        key = (site, inst.chip.name)
        chips[key] = chips.get(key, 0) + n * inst.tensor_parallel
    return Option(
        source=pipe.source,
        pipeline=pipe.name,
        level=level,
        line=pipe.line_name,
        lines=k,
        cost_usd_per_hour=float(plan.cost_usd_per_hour),
        chips=tuple((s, c, n) for (s, c), n in sorted(chips.items())),
        rate_rps=rate,
        plan=plan,
        outcome=outcome,
    )
