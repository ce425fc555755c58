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


@dataclass(frozen=True)
class Choice:
    chosen: tuple[int, ...]  # indices into the options
    cost_usd_per_hour: float
    owned_used: Mapping[tuple[str, str], float]


def choose(options: Sequence[Option], market: Market, *, resilient: bool = False) -> Choice:
    """The least-cost choice of options (module docstring); InfeasibleError when none serves
    every source within the limits (with ``resilient``, under every single line failure)."""
    from scipy.optimize import Bounds, LinearConstraint, milp

    n = len(options)
    keys = sorted({k for o in options for (s, c, _n) in o.chips for k in [(s, c)]})
    col = {k: n + i for i, k in enumerate(keys)}
    nv = n + len(keys)
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
            add(row, market.share_levels, np.inf)
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
    return Choice(chosen, total_cost(options, chosen, market), used_owned)


def total_cost(options: Sequence[Option], chosen: Sequence[int], market: Market) -> float:
    """What a choice costs [USD/h]: its options' costs less what the owned chips save (each kind
    at each site uses its owned chips first when they are cheaper, and as many as its rental
    limit forces when they are not)."""
    total = sum(options[i].cost_usd_per_hour for i in chosen)
    used: dict[tuple[str, str], int] = {}
    for i in chosen:
        for s, c, k in options[i].chips:
            used[(s, c)] = used.get((s, c), 0) + k
    for key, n in used.items():
        st = market.stock.get(key)
        if st is None or st.owned == 0:
            continue
        save = st.rental_usd_per_chip_hour - st.owned_usd_per_chip_hour
        forced = max(0, n - st.rent_limit) if st.rent_limit is not None else 0
        own = min(n, st.owned) if save > 0 else min(forced, st.owned)
        total -= save * own
    return float(total)


def fits(options: Sequence[Option], chosen: Sequence[int], market: Market, resilient: bool) -> bool:
    """Whether a choice meets every constraint of :func:`choose` (for brute-force checks)."""
    pipes = [options[i].pipeline for i in chosen]
    if len(pipes) != len(set(pipes)):
        return False
    failures: list[FailureCase | None] = [None, *(failure_cases(market) if resilient else [])]
    for s in market.sources:
        for f in failures:
            lv = sum(
                options[i].level if f is None else kept_level(f, options[i])
                for i in chosen
                if options[i].source == s
            )
            if lv < market.share_levels:
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
