"""How much prefix cache, in which tier, pays: each capacity option of a scenario's ``cache:``
section evaluated with the one plan builder (cost = chips + line + cache).

A capacity sets the hit-rate distribution the plan sees (the trace replayed through an LRU
cache of that many tokens, the replay of ``pddplan hitrate --cache-tokens``) and the time a
hit takes to load from its tiers (:func:`pddplan.timing.prefill_s`); each option is then
solved like ``pddplan solve`` (at the rate, or for the highest BCR) and the cheapest (or the
highest BCR, or the most goodput within a budget) is chosen. ``pddplan solve`` on a scenario
with ``cache:`` runs the same study in its own mode and plans at the option chosen
(:func:`sized_like` carries that capacity to the scenario re-resolved with more overrides).
docs/cache.md.
"""

from __future__ import annotations

import hashlib
import itertools
import math
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from pddplan import defaults, units
from pddplan.errors import InfeasibleError, OptionError, ProfileError
from pddplan.io.loader import ResolvedScenario
from pddplan.solver import Outcome, Plan, solve_scenario
from pddplan.solver.answer import mode_of, question
from pddplan.spec.workloads import HitRateBins, HitRateDist

if TYPE_CHECKING:
    from pddplan.executors import Progress

#: How messages name the session model's synthetic trace (made in memory, never written).
SESSIONS_TRACE = "cache.hit_rate.sessions"
#: Hit-rate bin edges of the distribution a capacity gives: ``pddplan hitrate``'s (the brief's
#: seven bins, :data:`pddplan.defaults.HIT_RATE_BINS`) with their first, [0, 0.9), split at 0.5
#: and 0.8, where a small cache's requests fall.
HIT_RATE_EDGES = (0.0, 0.5, 0.8, *defaults.HIT_RATE_BINS[1:])


@dataclass(frozen=True)
class CacheOption:
    """One capacity option (a capacity per tier) and the plan built at it."""

    capacity_gb_per_node: tuple[float, ...]  # [GB] per tier
    capacity_tokens_per_node: float  # [tokens] all tiers
    mean_hit_rate: float  # [-] the trace's mean hit rate at this capacity
    plan: Plan | None  # None: no plan meets the SLA
    reason: str = ""  # why there is no plan
    #: the scenario at this capacity (hit rates, hit shares), as the plan was solved
    resolved: ResolvedScenario | None = field(default=None, repr=False, compare=False)

    @property
    def cost_usd_per_hour(self) -> float:
        return self.plan.cost_usd_per_hour if self.plan is not None else float("inf")

    @property
    def bcr_requests_per_usd(self) -> float:
        return self.plan.bcr_requests_per_usd if self.plan is not None else 0.0

    @property
    def goodput_rps(self) -> float:
        return self.plan.goodput_rps if self.plan is not None else 0.0


@dataclass
class CacheStudy:
    scenario_name: str
    tiers: tuple[str, ...]  # cache profile names
    mode: str  # "rate", "budget" or "max-bcr"
    rate_rps: float | None
    options: list[CacheOption]
    chosen: int | None  # index into options
    budget_usd_per_hour: float | None = None  # the budget of mode "budget"

    @property
    def best(self) -> CacheOption | None:
        return None if self.chosen is None else self.options[self.chosen]


def capacity_options(rs: ResolvedScenario) -> list[tuple[float, ...]]:
    """Every combination of the tiers' capacity options [GB per node], in the listed order, each
    once (a capacity listed twice was solved and counted twice: "least cost of 6 options" of
    4)."""
    section = rs.scenario.cache
    if section is None:
        return []
    each = [list(dict.fromkeys(t.capacity_gb_per_node)) for t in section.tiers]
    return [tuple(c) for c in itertools.product(*each)]


def _sessions_trace(rs: ResolvedScenario) -> Callable[[], Iterator[dict[str, object]]]:
    """The session model's synthetic trace (``cache.hit_rate.sessions``): its request records,
    made afresh at each call."""
    from pddplan.trace.synth import SynthParams, synthetic_requests

    assert rs.scenario.cache is not None
    src = rs.scenario.cache.hit_rate
    s = src.sessions
    assert s is not None
    params = SynthParams(
        rate_rps=s.rate_rps,
        block_tokens=src.block_tokens,
        active_conversations=s.active_conversations,
        new_conversation_probability=s.new_conversation_probability,
        first_turn_blocks_mean=s.first_turn_blocks_mean,
        turn_blocks_mean=s.turn_blocks_mean,
        max_blocks=s.max_blocks,
        end_probability=s.end_probability,
        system_prompts=20,
        output_tokens_median=500.0,
        output_tokens_sigma=0.5,
    )
    return lambda: synthetic_requests(s.requests, s.seed, params)


def trace_path(rs: ResolvedScenario) -> Path:
    """The hit-rate trace file, relative to the scenario file (``cache.hit_rate.trace``): a
    JSONL trace with hash ids, which is replayed at each capacity (a CSV trace logs the hits of
    one cache only, and is refused)."""
    from pddplan.trace.records import detect_format

    assert rs.scenario.cache is not None
    src = rs.scenario.cache.hit_rate
    assert src.trace is not None
    p = Path(src.trace)
    if not p.is_absolute():
        p = Path(rs.file).parent / p
    if not p.is_file():
        what = "is a directory" if p.is_dir() else "not found"
        raise ProfileError(
            f"trace file {str(p)!r} {what} (relative to the scenario file)",
            file=rs.file,
            key="cache.hit_rate.trace",
        )
    if detect_format(p) == "csv":
        raise ProfileError(
            f"{str(p)!r} is a CSV trace, whose logged hits are one cache's: sizing the cache "
            "replays a JSONL trace with hash_ids at each capacity",
            file=rs.file,
            key="cache.hit_rate.trace",
        )
    return p


def hit_rates_by_capacity(rs: ResolvedScenario, capacities_tokens: list[float]) -> list[Any]:
    """Per-request hit rates of the scenario's trace at each capacity [-] (one replay for all
    capacities: :func:`pddplan.trace.replay.replay_trace` and
    :func:`pddplan.trace.analysis.analyze`, as ``pddplan hitrate`` runs them).

    Kept in the process (:data:`_HITS`, read-only arrays) on what the replay reads: the
    scenario's ``cache.hit_rate`` (the session model's numbers, or the trace file's path and the
    SHA-256 of its bytes, read in a fraction of a replay's time), the capacities and the
    warm-up. A sweep's points, a robust study's samples and a report's sections plan the same
    trace at the same capacities (a report of ``examples/cache-tiers.yaml`` replayed its 10,000
    requests 14 times)."""
    key = _hits_key(rs, capacities_tokens)
    if key is not None and key in _HITS:
        _HITS.move_to_end(key)
        return list(_HITS[key])
    hits = _hit_rates_by_capacity(rs, capacities_tokens)
    for h in hits:
        h.flags.writeable = False
    if key is not None and sum(h.nbytes for h in hits) <= _HITS_MAX_BYTES:
        _HITS[key] = tuple(hits)
        if len(_HITS) > _HITS_ENTRIES:
            _HITS.popitem(last=False)
    return hits


def _hits_key(rs: ResolvedScenario, capacities_tokens: list[float]) -> tuple | None:
    """What :func:`hit_rates_by_capacity` reads of ``rs`` and the capacities, as a key (None
    where the trace file cannot be read: the replay says why)."""
    assert rs.scenario.cache is not None
    src = rs.scenario.cache.hit_rate
    file: tuple | None = None
    if src.sessions is None:
        assert src.trace is not None
        p = Path(src.trace)
        if not p.is_absolute():
            p = Path(rs.file).parent / p
        digest = hashlib.sha256()
        try:
            with p.open("rb") as fh:
                while chunk := fh.read(1 << 20):
                    digest.update(chunk)
        except OSError:
            return None
        file = (str(p.resolve()), digest.hexdigest())
    return (src.content_text(), file, tuple(float(c) for c in capacities_tokens))


#: :func:`hit_rates_by_capacity` by :func:`_hits_key`, the last :data:`_HITS_ENTRIES` used; a
#: replay whose arrays pass :data:`_HITS_MAX_BYTES` is not kept (a trace of millions of
#: requests is replayed again rather than held).
_HITS: OrderedDict[tuple, tuple[Any, ...]] = OrderedDict()
_HITS_ENTRIES = 8
_HITS_MAX_BYTES = 64 << 20


def _hit_rates_by_capacity(rs: ResolvedScenario, capacities_tokens: list[float]) -> list[Any]:
    """:func:`hit_rates_by_capacity`, replayed."""
    from pddplan.trace.analysis import analyze
    from pddplan.trace.replay import replay_records, replay_trace

    assert rs.scenario.cache is not None
    src = rs.scenario.cache.hit_rate
    b = src.block_tokens
    # a capacity below one block holds nothing: no hits, and nothing to replay (an LRU of one
    # block cost a reference replay of its own); without another, the unbounded cache (the
    # fastest replay) counts the requests
    caps = [float(c) for c in capacities_tokens if c >= b] or [math.inf]
    if src.sessions is not None:  # the session model's records, replayed as their JSONL is
        replay = replay_records(_sessions_trace(rs), SESSIONS_TRACE, caps, block_tokens=b)
    else:
        replay = replay_trace(trace_path(rs), caps, block_tokens=b)
    try:
        analysis = analyze(replay, warmup_s=src.warmup_s)
    except OptionError as exc:  # the scenario's warm-up, not a command-line option
        raise ProfileError(
            f"warmup_s {exc.detail.lstrip(': ')}", file=rs.file, key="cache.hit_rate.warmup_s"
        ) from None
    held = [analysis.hit_rate(k) for k in range(len(caps))]
    none = np.zeros(len(held[0]))
    replayed = iter(held)
    return [next(replayed) if c >= b else none.copy() for c in capacities_tokens]


def hit_rate_dist(hits: Any) -> HitRateDist:
    """The hit-rate distribution of a set of per-request hit rates, in :data:`HIT_RATE_EDGES`."""
    h = np.clip(np.asarray(hits, dtype=float), 0.0, 1.0)
    counts, _ = np.histogram(h, bins=np.asarray(HIT_RATE_EDGES))
    probs = counts / max(int(counts.sum()), 1)
    probs = probs / probs.sum()
    return HitRateDist(
        bins=HitRateBins(edges=list(HIT_RATE_EDGES), probabilities=[float(p) for p in probs])
    )


def at_capacity(
    rs: ResolvedScenario,
    capacity_gb: tuple[float, ...],
    hits: Any,
    hit_shares: tuple[float, ...] | None = None,
) -> ResolvedScenario:
    """The scenario with its P nodes' cache at ``capacity_gb`` per tier: the workload's hit
    rate is the trace's at that capacity (``hits``, per request), moved by the workload's own
    ``hit_rate.shift`` (a what-if on the hit rates, as without tiers), and hits load from the
    tiers, each serving ``hit_shares`` of the hit bytes (None: its share of the capacity)."""
    dist = hit_rate_dist(hits)
    shift = rs.workload.hit_rate.shift
    if shift:
        dist = dist.model_copy(update={"shift": shift})
    wl = rs.workload.model_copy(update={"hit_rate": dist})
    return replace(
        rs,
        workload=wl,
        cache_capacity_gb=tuple(float(c) for c in capacity_gb),
        cache_hit_shares=hit_shares,
    )


def cumulative_tokens(rs: ResolvedScenario, capacity_gb: tuple[float, ...]) -> list[float]:
    """[tokens] the capacity of the first ``k`` tiers, for each ``k`` (the tiers in the order
    listed, fastest first)."""
    return [capacity_tokens(rs, capacity_gb[: k + 1]) for k in range(len(capacity_gb))]


def hit_shares(means: list[float]) -> tuple[float, ...] | None:
    """Share of the hits each tier serves [-] from the mean hit rate at each cumulative
    capacity: an LRU hierarchy keeps the most recently used blocks in the first tier, the next
    in the second, and so on, so tier ``k`` serves the hits that a cache of the first ``k``
    tiers has and one of the first ``k-1`` has not (None when nothing hits)."""
    top = means[-1]
    if top <= 0:
        return None
    prev = [0.0, *means[:-1]]
    return tuple(max(m - p, 0.0) / top for m, p in zip(means, prev, strict=True))


def capacity_tokens(rs: ResolvedScenario, capacity_gb: tuple[float, ...]) -> float:
    """[tokens] the KV tokens ``capacity_gb`` (all tiers) holds for the scenario's model."""
    from pddplan.deployment import model_numbers

    kv = model_numbers(rs.model).kv_bytes_per_token
    return sum(units.gb_to_bytes(c) for c in capacity_gb) / kv


def study(
    rs: ResolvedScenario,
    *,
    rate_rps: float | None = None,
    budget_usd_per_hour: float | None = None,
    max_bcr: bool = False,
    max_rate_rps: float | None = None,
    progress: Progress | None = None,
) -> CacheStudy:
    """Each capacity option solved; the cheapest at the rate (or the highest BCR, or the most
    goodput within the budget) chosen. The question is ``solve``'s
    (:func:`pddplan.solver.answer.question`: the options given, else the scenario's rate or
    budget)."""
    section = rs.scenario.cache
    if section is None:
        raise ProfileError(
            "the scenario has no cache: section (tiers and a hit-rate trace; docs/cache.md)",
            file=rs.file,
            key="cache",
        )
    opts = capacity_options(rs)
    rate, budget = question(rs.scenario, rate_rps, budget_usd_per_hour, max_bcr)
    mode = mode_of(rate, budget)
    out: list[CacheOption] = []
    for k, (o, t, h, rs_o) in enumerate(capacity_scenarios(rs)):
        if progress:
            progress(k, len(opts))
        try:
            outcome = solve_scenario(
                rs_o,
                rate_rps=rate,
                budget_usd_per_hour=budget,
                max_rate_rps=max_rate_rps,
                baselines=False,
                max_bcr=(mode == "max-bcr"),
            )
            solved = outcome.plan
            plan: Plan | None = solved if solved.meets_sla else None
            reason = "" if solved.meets_sla else "misses the SLA"
        except InfeasibleError as exc:
            plan, reason = None, str(exc)
        out.append(CacheOption(o, t, float(np.mean(h)), plan, reason, rs_o))
    if progress:
        progress(len(opts), len(opts))
    return CacheStudy(
        rs.scenario.name,
        tuple(t.profile for t in section.tiers),
        mode,
        rate if mode == "rate" else None,
        out,
        choose(out, mode),
        budget if mode == "budget" else None,
    )


def capacity_scenarios(
    rs: ResolvedScenario,
) -> list[tuple[tuple[float, ...], float, Any, ResolvedScenario]]:
    """Each capacity option of the scenario's tiers (:func:`capacity_options`): its capacities
    [GB per node], its tokens, its per-request hit rates, and the scenario at it
    (:func:`at_capacity`; one replay of the trace for every option)."""
    opts = capacity_options(rs)
    cums = [cumulative_tokens(rs, o) for o in opts]
    uniq = sorted({t for c in cums for t in c})
    hits = hit_rates_by_capacity(rs, uniq)
    means = {t: float(np.mean(h)) for t, h in zip(uniq, hits, strict=True)}
    out = []
    for o, cum in zip(opts, cums, strict=True):
        h = hits[uniq.index(cum[-1])]
        out.append((o, cum[-1], h, at_capacity(rs, o, h, hit_shares([means[c] for c in cum]))))
    return out


def rate_ceiling(
    rs: ResolvedScenario, max_chips: dict[str, int] | None = None
) -> tuple[float, str]:
    """:func:`~pddplan.solver.answer.rate_ceiling` of the scenario as it is planned: with
    ``cache:`` tiers, the highest of its capacity options' (each moves the hit rates, and so
    the line's load: the scenario's own workload misstated it, 8.81 req/s where a plan at the
    cache chosen serves 9.94 on cache-tiers)."""
    from pddplan.solver.answer import rate_ceiling as of_scenario

    if not rs.caches or rs.cache_capacity_gb is not None:
        return of_scenario(rs, max_chips)
    return max(of_scenario(s, max_chips) for *_, s in capacity_scenarios(rs))


def choose(options: list[CacheOption], mode: str) -> int | None:
    """The option chosen: the least cost (``rate``), the most goodput (``budget``, ties to the
    least cost) or the highest BCR (``max-bcr``); other ties go to the smaller capacity."""
    ok = [i for i, o in enumerate(options) if o.plan is not None]
    if not ok:
        return None
    if mode == "budget":
        return max(
            ok,
            key=lambda i: (
                options[i].goodput_rps,
                -options[i].cost_usd_per_hour,
                -options[i].capacity_tokens_per_node,
            ),
        )
    if mode == "rate":
        return min(
            ok, key=lambda i: (options[i].cost_usd_per_hour, options[i].capacity_tokens_per_node)
        )
    return max(
        ok, key=lambda i: (options[i].bcr_requests_per_usd, -options[i].capacity_tokens_per_node)
    )


def option_rows(st: CacheStudy) -> list[dict[str, Any]]:
    """Flat, unit-suffixed rows, one per option."""
    rows = []
    for i, o in enumerate(st.options):
        p = o.plan
        row: dict[str, Any] = {
            "chosen": i == st.chosen,
            **{
                f"{name}_gb_per_node": c
                for name, c in zip(st.tiers, o.capacity_gb_per_node, strict=True)
            },
            "capacity_tokens_per_node": o.capacity_tokens_per_node,
            "mean_hit_rate": o.mean_hit_rate,
            "ttft_p50_s": p.prefill.ttft_s[0] if p else None,
            "ttft_p99_s": p.prefill.ttft_s[2] if p else None,
            "chips": sum(p.chips_of().values()) if p else None,
            "p_instances": p.prefill.instances if p else None,
            "rate_rps": p.rate_rps if p else None,
            # the goodput the BCR divides (the fleet's, above the rate it was sized at)
            "goodput_rps": p.goodput_rps if p else None,
            "chips_usd_per_hour": sum(p.role_cost_usd_per_hour.values()) if p else None,
            "line_usd_per_hour": p.link_cost_usd_per_hour if p else None,
            "cache_usd_per_hour": p.cache_cost_usd_per_hour if p else None,
            "cost_usd_per_hour": p.cost_usd_per_hour if p else None,
            "bcr_requests_per_usd": p.bcr_requests_per_usd if p else None,
            "note": o.reason,
        }
        rows.append(row)
    return rows


def capacity_curve(rs: ResolvedScenario, capacities_tokens: list[float]) -> dict[str, Any]:
    """The scenario's capacity curve (``{"capacity_tokens", "mean_hit_rate"}`` arrays, as
    ``pddplan hitrate --curve-out`` writes and ``bathtub --capacity-curve`` reads) from its
    ``cache.hit_rate`` source."""
    hits = hit_rates_by_capacity(rs, capacities_tokens)
    return {
        "capacity_tokens": np.asarray(capacities_tokens, dtype=float),
        "mean_hit_rate": np.asarray([float(np.mean(h)) for h in hits]),
    }


#: What each mode of the study chooses, in words.
CHOSEN_BY = {"rate": "least cost", "budget": "most goodput", "max-bcr": "highest BCR"}


def sizing_row(st: CacheStudy) -> dict[str, Any] | None:
    """The chosen option in one flat, unit-suffixed row (the ``cache`` block of ``solve``):
    capacity per tier [GB per P node], tokens, mean hit rate, cache cost, and how many options
    were compared (None when none meets the SLA)."""
    if st.chosen is None:
        return None
    row = option_rows(st)[st.chosen]
    keep = [f"{t}_gb_per_node" for t in st.tiers]
    keep += ["capacity_tokens_per_node", "mean_hit_rate", "cache_usd_per_hour"]
    return {
        **{k: row[k] for k in keep},
        "chosen_by": CHOSEN_BY[st.mode],
        "options_compared": len(st.options),
        "options_meeting_sla": sum(o.plan is not None for o in st.options),
    }


def none_fits(st: CacheStudy) -> InfeasibleError:
    """The error of a study in which no capacity option gives a plan that meets the SLA."""
    why = "; ".join(
        dict.fromkeys(o.reason for o in st.options if o.reason)
    )  # each reason once, in order
    return InfeasibleError(
        f"no capacity option of the scenario's cache: tiers ({len(st.options)} compared) gives "
        f"a plan that meets the SLA: {why}",
        binding="cache capacity options",
        relaxation="add larger capacity options to cache.tiers, or relax the SLA",
    )


def sized_like(
    rs: ResolvedScenario, sized: ResolvedScenario, base: ResolvedScenario
) -> ResolvedScenario:
    """``rs`` (the scenario resolved with more overrides) at the cache capacity of ``sized``
    (``base`` at a capacity, :func:`at_capacity`): its capacity, hit shares and hit-rate
    distribution, with ``rs``'s change of ``workload.hit_rate.shift`` against ``base`` carried
    over (the verdict check varies it). A scenario ``sized`` gives no capacity is returned as
    is."""
    if sized.cache_capacity_gb is None:
        return rs
    dist = sized.workload.hit_rate
    delta = rs.workload.hit_rate.shift - base.workload.hit_rate.shift
    if delta:
        dist = dist.model_copy(update={"shift": float(np.clip(dist.shift + delta, -1.0, 1.0))})
    wl = rs.workload.model_copy(update={"hit_rate": dist})
    return replace(
        rs,
        workload=wl,
        cache_capacity_gb=sized.cache_capacity_gb,
        cache_hit_shares=sized.cache_hit_shares,
    )


def sized(
    rs: ResolvedScenario,
    *,
    rate_rps: float | None = None,
    budget_usd_per_hour: float | None = None,
    max_bcr: bool = False,
    max_rate_rps: float | None = None,
) -> tuple[ResolvedScenario, dict[str, Any] | None]:
    """The scenario at the cache capacity :func:`study` chooses for solve's question (least
    cost at the rate, most goodput within the budget, highest BCR), and that choice's row
    (:func:`sizing_row`); the scenario as is, and None, without ``cache:`` tiers or with a
    capacity already set (``solve`` and each ``sweep`` point call this).

    Raises
    ------
    InfeasibleError : no capacity option gives a plan that meets the SLA.
    """
    if not rs.caches or rs.cache_capacity_gb is not None:
        return rs, None
    st = study(
        rs,
        rate_rps=rate_rps,
        budget_usd_per_hour=budget_usd_per_hour,
        max_bcr=max_bcr,
        max_rate_rps=max_rate_rps,
    )
    best, row = st.best, sizing_row(st)
    if best is None or best.resolved is None or row is None:
        raise none_fits(st)
    return best.resolved, row


def solve(rs: ResolvedScenario, **options: Any) -> Outcome:
    """:func:`~pddplan.solver.solve_scenario` on ``rs`` at the cache capacity that
    :func:`sized` chooses for the same question (least cost at the rate, most goodput within
    the budget, highest BCR), with that choice in the outcome's ``cache`` and the sized
    scenario in its ``scenario``: every command that plans a scenario plans its ``cache:`` tiers
    here, as ``solve`` does (without tiers, or with a capacity set, ``rs`` as is).

    ``options`` are :func:`~pddplan.solver.solve_scenario`'s.

    Raises
    ------
    InfeasibleError : no capacity option, or no plan, meets the SLA.
    """
    rs, cache = sized(
        rs,
        rate_rps=options.get("rate_rps"),
        budget_usd_per_hour=options.get("budget_usd_per_hour"),
        max_bcr=bool(options.get("max_bcr", False)),
        max_rate_rps=options.get("max_rate_rps"),
    )
    out = solve_scenario(rs, **options)
    return out if cache is None else replace(out, cache=cache)
