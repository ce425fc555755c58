"""Choose options (pipeline, share level, bundle) and leased lines: one MILP, solved by HiGHS.

Variables: ``y_o`` in {0, 1} per option; per site and chip kind the owned chips used ``u``
(continuous, 0 <= u <= owned). Minimize ``sum_o cost_o y_o - sum (rental - owned price) u``:
an option's cost is the plan builder's (every chip at the site's rental price, plus its lines);
an owned chip used instead of a rented one saves the difference. Subject to

- at most one option per pipeline;
- each source served: ``sum level_o y_o >= share_levels`` over its options;
- with ``resilient``, the same for every single failure (:func:`failure_cases`): a whole line
  down takes its options to 0; a line losing a share of its bandwidth, or a site a share of its
  chips, takes each option it touches to the share levels its fleet, as bought and degraded,
  still serves within the SLA (``FailureCase.kept_levels``); the other options keep theirs;
- lines: ``sum lines_o y_o <= max_count`` per line;
- chips: ``u <= sum chips_o y_o`` and ``sum chips_o y_o - u <= rent_limit`` per site and kind.

Exact over the options given (``scipy.optimize.milp``, HiGHS branch and bound to a zero gap).

The goodput modes (:func:`choose`'s ``budget`` and ``max-bcr``) replace "each source served"
by a served share ``z_s`` in ``[0, share_levels]`` per source, at most what its options carry
(under every failure with ``resilient``): the most traffic served within a budget, then the
least cost for it; or the most served per dollar (Dinkelbach's iteration).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from pddplan.errors import InfeasibleError
from pddplan.topology.pipelines import Option

#: Relative MIP gap asked of HiGHS: 0, an optimum to its feasibility tolerances.
MIP_REL_GAP = 0.0


@dataclass(frozen=True)
class ChipStock:
    """One chip kind at one site: what is owned and may be rented, and the prices."""

    owned: int
    owned_usd_per_chip_hour: float
    rental_usd_per_chip_hour: float
    rent_limit: int | None  # None: no limit


#: A failure's kind: a whole line down, a line losing a share of its bandwidth, a site losing a
#: share of its chips.
FailureKind = Literal["line", "line bandwidth", "site chips"]


@dataclass(frozen=True)
class FailureCase:
    """One single failure of the N-1 set."""

    kind: FailureKind
    where: str  # the line's or the site's name
    loss_share: float = 1.0  # the share of its bandwidth or chips lost (1: the whole line)
    #: option index (``Option.index``) -> share levels it still serves within the SLA, for the
    #: options the failure touches (a partial failure); an option not listed keeps its level
    kept_levels: Mapping[int, int] = field(default_factory=dict, compare=False)

    @property
    def label(self) -> str:
        """The failure in words: ``a-b``, ``a-b at 50% bandwidth``, ``a with 75% of chips``."""
        if self.kind == "line":
            return self.where
        kept = f"{(1.0 - self.loss_share) * 100:.4g}%"
        if self.kind == "line bandwidth":
            return f"{self.where} at {kept} bandwidth"
        return f"{self.where} with {kept} of chips"


def kept_level(case: FailureCase, o: Option) -> int:
    """The share levels option ``o`` still serves within the SLA under ``case``."""
    if case.kind == "line":
        return 0 if o.line == case.where else o.level
    return case.kept_levels.get(o.index, o.level)


@dataclass(frozen=True)
class Market:
    """What the options compete for."""

    share_levels: int
    sources: tuple[str, ...]
    line_max: Mapping[str, int]  # line -> lines that may be leased
    stock: Mapping[tuple[str, str], ChipStock]  # (site, chip) -> stock
    #: the partial failures of the N-1 set beyond whole lines (a topology's ``resilience:``)
    partial_failures: tuple[FailureCase, ...] = ()
    #: the lines whose failure is in the N-1 set (None: every line)
    whole_lines: tuple[str, ...] | None = None


def failure_cases(market: Market) -> list[FailureCase]:
    """The N-1 set: every whole line down, then the partial failures the topology states."""
    lines = sorted(market.line_max) if market.whole_lines is None else market.whole_lines
    return [FailureCase("line", ln) for ln in lines] + list(market.partial_failures)


#: What a topology plan optimizes: least cost serving every source, most goodput (the
#: sources' traffic served) within a budget, or the highest BCR (goodput per dollar).
Mode = Literal["cost", "budget", "max-bcr"]
MODES: tuple[str, ...] = ("cost", "budget", "max-bcr")

#: Relative tolerance of the goodput and BCR optima [-]: the lexicographic second pass keeps
#: the first pass's goodput to it, and the Dinkelbach iteration stops within it.
OBJECTIVE_RTOL = 1e-9
#: Dinkelbach iterations at most (each one MILP; it converges superlinearly, in a few).
MAX_BCR_ITERATIONS = 50


@dataclass(frozen=True)
class Choice:
    chosen: tuple[int, ...]  # indices into the options
    cost_usd_per_hour: float
    owned_used: Mapping[tuple[str, str], float]
    #: source -> share levels served (``share_levels`` each in the ``cost`` mode) [-]
    served_levels: Mapping[str, float] = field(default_factory=dict)


def served_rps(
    served_levels: Mapping[str, float], rates: Mapping[str, float], levels: int
) -> float:
    """The traffic a choice serves [requests/s]: each source's served levels times its rate
    over ``levels``."""
    return float(sum(served_levels.get(s, 0.0) * r / levels for s, r in rates.items()))


def choose(
    options: Sequence[Option],
    market: Market,
    *,
    resilient: bool = False,
    mode: Mode = "cost",
    budget_usd_per_hour: float | None = None,
    rates: Mapping[str, float] | None = None,
) -> Choice:
    """The choice of options that the ``mode`` asks for (module docstring); InfeasibleError
    when none serves every source within the limits (``cost``; with ``resilient``, under every
    single failure) or none serves any traffic (``budget``, ``max-bcr``).

    ``cost``: the least cost serving every source. ``budget``: the most traffic served within
    ``budget_usd_per_hour`` (each source served up to its rate, in any share of it up to what
    its chosen pipelines carry, and with ``resilient`` what they carry under every single
    failure), then the least cost for it. ``max-bcr``: the highest served traffic per dollar,
    by Dinkelbach's iteration (each step the MILP of ``served - lambda cost``; ``lambda`` the
    last step's ratio), exact over the options to :data:`OBJECTIVE_RTOL`; a step's choice that
    serves traffic and costs nothing has an unbounded ratio, and is the answer. ``rates``: source ->
    rate [requests/s], for the two goodput modes."""
    if mode == "cost":
        return _solve(options, market, resilient, None, None, None)
    if rates is None:
        raise ValueError("the goodput modes need the sources' rates")
    weights = {s: rates[s] / market.share_levels for s in market.sources}
    if mode == "budget":
        if budget_usd_per_hour is None:
            raise ValueError("the budget mode needs budget_usd_per_hour")
        first = _solve(options, market, resilient, weights, 0.0, budget_usd_per_hour)
        best = served_rps(first.served_levels, rates, market.share_levels)
        if best <= 0:
            raise InfeasibleError(
                f"no choice of pipelines serves any traffic within {budget_usd_per_hour:.4g} $/h",
                binding="budget",
            )
        floor = best * (1 - OBJECTIVE_RTOL)
        return _solve(options, market, resilient, weights, None, budget_usd_per_hour, floor)
    lam = 0.0
    best_choice: Choice | None = None
    best_ratio = 0.0
    for _ in range(MAX_BCR_ITERATIONS):
        c = _solve(options, market, resilient, weights, lam, None)
        g = served_rps(c.served_levels, rates, market.share_levels)
        if g > 0 and c.cost_usd_per_hour <= 0:
            # serves traffic for nothing (owned chips at an owned price of 0, free lines): an
            # unbounded ratio, and the most served of every choice that costs nothing, since
            # the step maximizes served - lambda cost with lambda >= 0
            return c
        if c.cost_usd_per_hour > 0 and g > 0:
            ratio = g / c.cost_usd_per_hour
            if best_choice is None or ratio > best_ratio * (1 + OBJECTIVE_RTOL):
                best_choice, best_ratio = c, ratio
        if g - lam * c.cost_usd_per_hour <= OBJECTIVE_RTOL * max(g, 1e-12):
            break
        lam = best_ratio
    if best_choice is None:
        raise InfeasibleError("no choice of pipelines serves any traffic", binding="max-bcr")
    return best_choice


def _solve(
    options: Sequence[Option],
    market: Market,
    resilient: bool,
    weights: Mapping[str, float] | None,
    lam: float | None,
    budget: float | None,
    served_floor: float | None = None,
) -> Choice:
    """One MILP. ``weights`` None: every source served whole, least cost. Otherwise each
    source's served levels ``z`` are free in ``[0, share_levels]`` (``weights``: requests/s a
    level) and the objective is: ``lam`` None, the least cost (with ``served_floor``, serving at
    least that many requests/s); else ``lam x cost - served`` (``lam`` 0: the most served)."""
    from scipy.optimize import Bounds, LinearConstraint, milp

    n = len(options)
    keys = sorted({k for o in options for (s, c, _n) in o.chips for k in [(s, c)]})
    col = {k: n + i for i, k in enumerate(keys)}
    zcol = {s: n + len(keys) + i for i, s in enumerate(market.sources)}
    nv = n + len(keys) + len(zcol)
    cost = np.zeros(nv)
    lo, hi = np.zeros(nv), np.ones(nv)
    for i, o in enumerate(options):
        cost[i] = o.cost_usd_per_hour
    for k in keys:
        st = market.stock.get(k)
        if st is not None and st.owned > 0:
            cost[col[k]] = -(st.rental_usd_per_chip_hour - st.owned_usd_per_chip_hour)
            hi[col[k]] = st.owned
        else:
            hi[col[k]] = 0.0
    for _s, j in zcol.items():
        hi[j] = market.share_levels
        lo[j] = market.share_levels if weights is None else 0.0
    cost_row = cost.copy()  # the plan's cost [USD/h], before the objective is changed
    if weights is not None and lam is not None:
        cost = lam * cost_row
        for s, j in zcol.items():
            cost[j] = -weights[s]
    rows: list[np.ndarray] = []
    rlo: list[float] = []
    rhi: list[float] = []

    def add(row: np.ndarray, a: float, b: float) -> None:
        rows.append(row)
        rlo.append(a)
        rhi.append(b)

    for pipe in sorted({o.pipeline for o in options}):
        row = np.zeros(nv)
        for i, o in enumerate(options):
            if o.pipeline == pipe:
                row[i] = 1
        add(row, 0, 1)
    failures: list[FailureCase | None] = [None]
    if resilient:
        failures += failure_cases(market)
    for s in market.sources:
        for failed in failures:
            row = np.zeros(nv)
            for i, o in enumerate(options):
                if o.source == s:
                    row[i] = o.level if failed is None else kept_level(failed, o)
            row[zcol[s]] = -1.0  # the levels carried cover the levels served
            add(row, 0.0, np.inf)
    if budget is not None:
        add(cost_row, -np.inf, budget)
    if served_floor is not None and weights is not None:
        row = np.zeros(nv)
        for s, j in zcol.items():
            row[j] = weights[s]
        add(row, served_floor, np.inf)
    for line, most in market.line_max.items():
        row = np.zeros(nv)
        for i, o in enumerate(options):
            if o.line == line:
                row[i] = o.lines
        if row.any():
            add(row, 0, most)
    for k in keys:
        used = np.zeros(nv)
        for i, o in enumerate(options):
            used[i] = sum(c for (s, ch, c) in o.chips if (s, ch) == k)
        own = np.zeros(nv)
        own[col[k]] = 1
        add(own - used, -np.inf, 0)  # u <= chips used
        st = market.stock.get(k)
        if st is not None and st.rent_limit is not None:
            add(used - own, -np.inf, st.rent_limit)
    integrality = np.zeros(nv)
    integrality[:n] = 1
    res = milp(
        cost,
        constraints=LinearConstraint(np.array(rows), rlo, rhi) if rows else None,
        integrality=integrality,
        bounds=Bounds(lo, hi),
        options={"mip_rel_gap": MIP_REL_GAP},
    )
    if res.status != 0 or res.x is None:
        what = "every source under any single failure" if resilient else "every source"
        raise InfeasibleError(
            f"no choice of pipelines serves {what} within the sites' chips and the lines that "
            f"may be leased (HiGHS: {res.message})"
        )
    x = res.x
    chosen = tuple(i for i in range(n) if x[i] > 0.5)
    used_owned = {k: float(x[col[k]]) for k in keys if x[col[k]] > 1e-9}
    served = served_levels(options, chosen, market, resilient)
    return Choice(chosen, total_cost(options, chosen, market), used_owned, served)


def served_levels(
    options: Sequence[Option], chosen: Sequence[int], market: Market, resilient: bool
) -> dict[str, float]:
    """Per source, the share levels a choice serves: what its chosen options carry (with
    ``resilient``, the least of that over the N-1 set), at most ``share_levels``."""
    failures: list[FailureCase | None] = [None, *(failure_cases(market) if resilient else [])]
    out = {}
    for s in market.sources:
        carried = min(
            sum(
                options[i].level if f is None else kept_level(f, options[i])
                for i in chosen
                if options[i].source == s
            )
            for f in failures
        )
        out[s] = float(min(carried, market.share_levels))
    return out


def owned_savings(
    options: Sequence[Option], chosen: Sequence[int], market: Market
) -> dict[tuple[str, str], float]:
    """What a choice's owned chips save [USD/h] per site and chip kind, against renting every
    chip at the site's price: each kind at each site uses its owned chips first when they are
    cheaper, and as many as its rental limit forces when they are not (a negative saving)."""
    used: dict[tuple[str, str], int] = {}
    for i in chosen:
        for s, c, k in options[i].chips:
            used[(s, c)] = used.get((s, c), 0) + k
    out: dict[tuple[str, str], float] = {}
    for key, n in used.items():
        st = market.stock.get(key)
        if st is None or st.owned == 0:
            continue
        save = st.rental_usd_per_chip_hour - st.owned_usd_per_chip_hour
        forced = max(0, n - st.rent_limit) if st.rent_limit is not None else 0
        own = min(n, st.owned) if save > 0 else min(forced, st.owned)
        if own:
            out[key] = save * own
    return out


def total_cost(options: Sequence[Option], chosen: Sequence[int], market: Market) -> float:
    """What a choice costs [USD/h]: its options' costs less what the owned chips save
    (:func:`owned_savings`)."""
    total = sum(options[i].cost_usd_per_hour for i in chosen)
    total -= sum(owned_savings(options, chosen, market).values())
    return float(total)


def fits(
    options: Sequence[Option],
    chosen: Sequence[int],
    market: Market,
    resilient: bool,
    serve_all: bool = True,
) -> bool:
    """Whether a choice meets every constraint of :func:`choose` (for brute-force checks);
    ``serve_all`` False: the goodput modes' constraints (a source may be served in part)."""
    pipes = [options[i].pipeline for i in chosen]
    if len(pipes) != len(set(pipes)):
        return False
    if serve_all:
        served = served_levels(options, chosen, market, resilient)
        if any(v < market.share_levels for v in served.values()):
            return False
    for line, most in market.line_max.items():
        if sum(options[i].lines for i in chosen if options[i].line == line) > most:
            return False
    used: dict[tuple[str, str], int] = {}
    for i in chosen:
        for s, c, k in options[i].chips:
            used[(s, c)] = used.get((s, c), 0) + k
    for key, n in used.items():
        st = market.stock.get(key)
        if st is not None and st.rent_limit is not None and n > st.owned + st.rent_limit:
            return False
    return True
