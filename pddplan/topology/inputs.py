"""A topology read and checked, and the two-site scenario's topology form.

The cross references are checked here, each failure one :class:`~pddplan.errors.TopologyError`
naming the site, line or source and why: a line naming an unknown site, duplicate site, line or
source names, a topology whose lines leave some site unreachable.
"""

from __future__ import annotations

import copy
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pddplan.errors import TopologyError, did_you_mean
from pddplan.io.loader import Registry, read_yaml, validate
from pddplan.io.search_path import is_workload_path
from pddplan.io.yamldoc import YamlDoc
from pddplan.spec.scenario_spec import Scenario
from pddplan.spec.topology import Line, Site, TopologyScenario, TrafficSource

#: Keys of a topology file that are not the scenario keys shared by its pipelines.
TOPOLOGY_KEYS = ("sites", "lines", "traffic", "share_levels", "resilience", "uncertainty")


@dataclass(frozen=True)
class TopologyInput:
    """A checked topology and what every pipeline scenario shares.

    ``base`` is the scenario document every pipeline's scenario starts from (model, serving,
    overrides, ...); a pipeline adds its workload, link, RDMA fabric, roles, SLA and rate
    (:func:`pddplan.topology.pipelines.pipeline_doc`). ``two_site`` is True for the topology
    form of a two-site scenario, whose one pipeline's scenario is the file itself.
    """

    spec: TopologyScenario
    base: dict[str, Any]
    file: str
    registry: Registry
    two_site: bool = False
    #: source name -> its workload as the file gives it (a name, a path or a mapping)
    raw_workloads: dict[str, Any] = field(default_factory=dict)

    @property
    def sites(self) -> dict[str, Site]:
        return {s.name: s for s in self.spec.sites}

    @property
    def sources(self) -> dict[str, TrafficSource]:
        return {t.name: t for t in self.spec.traffic}

    def line_between(self, a: str, b: str) -> Line | None:
        """The line joining sites ``a`` and ``b`` (either order), or None."""
        for ln in self.spec.lines:
            if set(ln.sites) == {a, b}:
                return ln
        return None


def profile_rental_usd_per_hour(ti: TopologyInput, chip: str) -> float:
    """[USD/(chip h)] A chip's rental where no site prices it: the topology's ``overrides:`` of
    its profile's price when it gives one, else the chip profile's (what each pipeline's
    scenario resolves it to)."""
    ov = ti.spec.overrides.get("chips", {}).get(chip, {}).get("price")
    if isinstance(ov, Mapping) and "rental_usd_per_hour" in ov:
        return float(ov["rental_usd_per_hour"])
    return float(ti.registry.load("chip", chip).price.rental_usd_per_hour)


def is_topology_doc(doc: YamlDoc) -> bool:
    """Whether a parsed file is a topology file (it has ``sites:``)."""
    return isinstance(doc.data, dict) and "sites" in doc.data


def read_topology(path: str, registry: Registry) -> TopologyInput:
    """A topology file (``sites:``) or a two-site scenario file, read and checked."""
    doc = read_yaml(registry.scenario_path(path))
    if is_topology_doc(doc):
        return TopologySource(doc, registry).resolve()
    ti = two_site_topology(doc, registry)
    check_topology(ti)
    return ti


def _topology_input(doc: YamlDoc, registry: Registry) -> TopologyInput:
    spec = validate(TopologyScenario, doc)
    base = {k: copy.deepcopy(v) for k, v in doc.data.items() if k not in TOPOLOGY_KEYS}
    raw = {t["name"]: t.get("workload") for t in doc.data["traffic"]}
    ti = TopologyInput(spec, base, doc.file, registry, raw_workloads=raw)
    check_topology(ti)
    return ti


@dataclass
class TopologySource:
    """A topology file's parsed document: :meth:`resolve` applies overrides (dotted keys of the
    file, :func:`pddplan.io.overrides.topology_patch`) from the document in memory, validated
    and checked as the file with them would be: what ``sweep`` and ``report`` evaluate the
    topology planner on at each point."""

    doc: YamlDoc
    registry: Registry

    @classmethod
    def open(cls, path: str, registry: Registry) -> TopologySource | None:
        """The source of a topology file, or None for any other scenario."""
        doc = read_yaml(registry.scenario_path(path))
        return cls(doc, registry) if is_topology_doc(doc) else None

    @property
    def file(self) -> str:
        return self.doc.file

    def resolve(self, overrides: Mapping[str, Any] | None = None) -> TopologyInput:
        """The topology with ``overrides`` applied (OverrideError names a bad PATH or value)."""
        from pddplan.errors import OverrideError, ProfileError
        from pddplan.io.overrides import topology_patch

        if not overrides:
            return _topology_input(self.doc, self.registry)
        data: dict[str, Any] = dict(self.doc.data)
        keys: dict[str, str] = {}
        for path, value in overrides.items():
            data, keys[path] = topology_patch(data, path, value)
        doc = YamlDoc(data=data, lines={}, file=self.doc.file)
        try:
            return _topology_input(doc, self.registry)
        except (ProfileError, TopologyError) as exc:
            key = re.sub(r"\[(\d+)\]", r".\1", getattr(exc, "key", None) or "")
            for path, k in keys.items():
                if key and (key == k or key.startswith(k + ".") or k.startswith(key + ".")):
                    detail = getattr(exc, "detail", None) or str(exc)
                    raise OverrideError(detail, key=path, value=overrides[path]) from None
            raise


def two_site_topology(doc: YamlDoc, registry: Registry) -> TopologyInput:
    """The topology form of a two-site scenario: site A (P and RLD as its roles say, its RDMA
    fabric), site B (MD), one line of the scenario's link, one source entering at A with the
    scenario's rate, workload and SLA. Its one pipeline's scenario is the file itself."""
    scen: Scenario = validate(Scenario, doc)
    if scen.rate_rps is None:
        raise TopologyError(
            "a two-site scenario needs rate_rps to be planned as a topology", file=doc.file
        )
    roles = scen.roles
    a = {"name": "A", "roles": {"P": roles.P, "RLD": roles.RLD}, "rdma": scen.rdma}
    b = {"name": "B", "roles": {"MD": roles.MD}, "rdma": scen.rdma}
    spec = TopologyScenario.model_validate(
        {
            "name": scen.name,
            "description": scen.description,
            "model": scen.model,
            "serving": scen.serving,
            "sites": [a, b],
            "lines": [{"sites": ["A", "B"], "link": scen.link, "max_count": 1}],
            "traffic": [
                {
                    "name": "users",
                    "entry": "A",
                    "rate_rps": scen.rate_rps,
                    "workload": scen.workload,
                    "sla": scen.sla,
                }
            ],
            "share_levels": 1,
        }
    )
    base = copy.deepcopy(doc.data)  # its one pipeline's scenario is the file itself
    raw = {"users": copy.deepcopy(doc.data["workload"])}
    return TopologyInput(spec, base, doc.file, registry, two_site=True, raw_workloads=raw)


def check_topology(ti: TopologyInput) -> None:
    """Raise :class:`TopologyError` on the first broken cross reference."""
    spec, file = ti.spec, ti.file
    names: set[str] = set()
    for i, s in enumerate(spec.sites):
        if s.name in names:
            raise TopologyError(f"duplicate site name {s.name!r}", file=file, key=f"sites[{i}]")
        names.add(s.name)
        for role in ("P", "RLD", "MD"):
            choice = getattr(s.roles, role)
            if choice is None:
                continue
            for c in choice.chips:
                if c != "*" and c not in ti.registry.index("chip"):
                    hint = did_you_mean(c, list(ti.registry.index("chip")))
                    raise TopologyError(
                        f"no chip profile named {c!r}{hint}",
                        file=file,
                        key=f"sites[{i}] ({s.name}).roles.{role}.chips",
                    )
        for c in s.chips:
            if c not in ti.registry.index("chip"):
                hint = did_you_mean(c, list(ti.registry.index("chip")))
                raise TopologyError(
                    f"no chip profile named {c!r}{hint}",
                    file=file,
                    key=f"sites[{i}] ({s.name}).chips",
                )
    # a two-site scenario's link, fabric and workload are its own keys, which its one
    # pipeline's scenario (the file itself) checks and names
    named = not ti.two_site
    for i, s in enumerate(spec.sites):
        if named:
            _check_link_kind(ti, s.rdma, "rdma", f"sites[{i}].rdma", f"site {s.name}")
    seen: set[frozenset[str]] = set()
    labels: set[str] = set()
    for i, ln in enumerate(spec.lines):
        where = f"lines[{i}] ({ln.label})"
        if named:
            _check_link_kind(ti, ln.link, "wan", f"lines[{i}].link", f"line {ln.label}")
        for sn in ln.sites:
            if sn not in names:
                raise TopologyError(
                    f"names site {sn!r}, which no site defines{did_you_mean(sn, sorted(names))} "
                    f"(sites: {', '.join(sorted(names))})",
                    file=file,
                    key=where,
                )
        pair = frozenset(ln.sites)
        if pair in seen or ln.label in labels:
            raise TopologyError(
                f"a second line between {ln.sites[0]} and {ln.sites[1]}: give one line per "
                "pair of sites, with max_count the lines that may be leased",
                file=file,
                key=where,
            )
        seen.add(pair)
        labels.add(ln.label)
        _check_link_numbers(ti, i, ln)
    _check_connected(spec, file)
    src_names: set[str] = set()
    for i, t in enumerate(spec.traffic):
        where = f"traffic[{i}] ({t.name})"
        if t.name in src_names:
            raise TopologyError(f"duplicate source name {t.name!r}", file=file, key=where)
        src_names.add(t.name)
        _check_rate(ti, i, t)
        if named and isinstance(t.workload, str) and not is_workload_path(t.workload):
            known = list(ti.registry.index("workload"))
            if t.workload not in known:
                raise TopologyError(
                    f"source {t.name}: no workload profile named {t.workload!r}"
                    f"{did_you_mean(t.workload, known)} (a path to a workload file, FILE.yaml, "
                    "is also accepted)",
                    file=file,
                    key=f"traffic[{i}].workload",
                )
        for sn in (t.entry, *t.access):
            if sn not in names:
                raise TopologyError(
                    f"names site {sn!r}, which no site defines{did_you_mean(sn, sorted(names))}",
                    file=file,
                    key=where,
                )


#: What each kind of link a topology names must be: a line's a WAN link, a site's fabric RDMA.
_LINK_KIND_WORDS = {"wan": "a WAN link profile", "rdma": "an RDMA link profile"}


def _check_link_kind(ti: TopologyInput, name: str, kind: str, key: str, what: str) -> None:
    """``name`` is a link profile of ``kind`` (``wan`` for a line, ``rdma`` for a site's
    fabric), else TopologyError naming ``key`` and the profiles allowed there."""
    known = list(ti.registry.index("link"))
    allowed = sorted(n for n in known if ti.registry.load("link", n).type == kind)
    if name in known and ti.registry.load("link", name).type == kind:
        return
    why = (
        f"{name!r} is not {_LINK_KIND_WORDS[kind]}"
        if name in known
        else f"no link profile named {name!r}{did_you_mean(name, allowed)}"
    )
    raise TopologyError(f"{what}: {why}; allowed: {', '.join(allowed)}", file=ti.file, key=key)


#: The most an option's fleet is sized for, in multiples of its source's rate (the headroom
#: options of :func:`top_level`): each level is one more sizing of every pipeline.
MAX_HEADROOM = 4


def top_level(ti: TopologyInput) -> int:
    """The highest share level an option is sized at: ``share_levels`` (the source's whole
    rate), or, when a site may lose a share ``g < 1`` of its chips (``resilience:``),
    ``ceil(share_levels / (1 - g))``: fleets with the headroom to keep serving a source's whole
    rate at one site after the loss, for the MILP to choose where that is cheapest; at most
    :data:`MAX_HEADROOM` times ``share_levels`` (a larger loss needs other sites)."""
    levels = ti.spec.share_levels
    res = ti.spec.resilience
    g = res.site_chip_loss_share if res is not None else None
    if g is None or g >= 1.0:
        return levels
    return min(math.ceil(levels / (1.0 - g) - 1e-9), MAX_HEADROOM * levels)


def _check_rate(ti: TopologyInput, i: int, t: TrafficSource) -> None:
    """A source's rate, split into share levels, sizes pipelines at ``level / share_levels`` of
    it, from one level up to the headroom levels (:func:`top_level`):
    each such rate must be one a scenario may be sized at, else TopologyError naming the key and
    the rates its share levels allow."""
    from pddplan.spec.base import MAX_RATE_RPS, MIN_RATE_RPS

    levels, top = ti.spec.share_levels, top_level(ti)
    lo, hi = MIN_RATE_RPS * levels, MAX_RATE_RPS * levels / top
    if lo <= t.rate_rps <= hi:
        return
    raise TopologyError(
        f"source {t.name}: {t.rate_rps:g} req/s is sized in steps of 1/{levels} "
        f"(share_levels) up to {top}/{levels} of it, from {t.rate_rps / levels:g} to "
        f"{t.rate_rps * top / levels:g} req/s, and a pipeline is sized at {MIN_RATE_RPS:g} to "
        f"{MAX_RATE_RPS:g} req/s; allowed {lo:g} to {hi:g} req/s with share_levels {levels}",
        file=ti.file,
        key=f"traffic[{i}].rate_rps",
    )


def _check_link_numbers(ti: TopologyInput, i: int, ln: Line) -> None:
    """A line's ``link_numbers`` validated as its link profile's (before anything is sized)."""
    if not ln.link_numbers:
        return
    from pydantic import ValidationError

    from pddplan.spec import Link

    where = f"lines[{i}].link_numbers"
    prof = read_yaml(ti.registry.path("link", ln.link)).data
    try:
        Link.model_validate({**prof, **ln.link_numbers})
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        key = ".".join(str(x) for x in err["loc"])
        raise TopologyError(
            f"line {ln.label}: {err['msg']} (got {err.get('input')!r}; validated as the "
            f"{ln.link} profile's {key})",
            file=ti.file,
            key=f"{where}.{key}",
        ) from None


def _check_connected(spec: TopologyScenario, file: str) -> None:
    """Every site reachable from the first over the lines."""
    if len(spec.sites) < 2:
        return
    adj: dict[str, set[str]] = {s.name: set() for s in spec.sites}
    for ln in spec.lines:
        a, b = ln.sites
        adj[a].add(b)
        adj[b].add(a)
    start = spec.sites[0].name
    seen = {start}
    todo = [start]
    while todo:
        for n in adj[todo.pop()]:
            if n not in seen:
                seen.add(n)
                todo.append(n)
    cut = [s.name for s in spec.sites if s.name not in seen]
    if cut:
        raise TopologyError(
            f"the topology is disconnected: no line path from site {start} to "
            f"{', '.join(cut)}; add a line to each",
            file=file,
            key="lines",
        )
