"""One request timeline through a fleet: transfers, relay, eager tokens, hand-over, first token.

This is the only module that turns the network and pipeline models into a request's timeline.
The solver (closed forms over request classes), the bathtub (one request at each hit rate) and
the simulator (one request at a time, with queueing and batching around it) all call it, so a
change to the physics is made here once.

Stages of a request (PDD brief, section 4):

1. prefill on P (wait + chunked prefill of the uncached tokens; the solver's queueing model),
   with the hit's KV loaded from the cache tier that holds it, layer by layer under the compute
   (:func:`prefill_s`; docs/cache.md);
2. the KV leaves P two ways at once: the uncached KV over the WAN line to MD
   (:func:`transfer_s`) and, for relayed requests, the whole context over RDMA to RLD
   (:func:`rdma_copy_s`);
3. a relayed request decodes on RLD while MD's copy is on the wire (:func:`relay_wait_s`,
   eager tokens), then RLD hands token IDs to MD in one or several rounds (:func:`handover`);
4. the first token comes from whichever side holds the KV first (:func:`kv_ready_s`), one
   decode step after it.

Jitter is a mean-one lognormal factor on the WAN payload (a transfer's effective throughput
varies), applied the same way here and in the simulator (:func:`jitter_points`).

All quantities are SI numbers; functions broadcast over numpy arrays.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, TypeVar

import numpy as np

from pddplan.deployment import TOKEN_ID_BYTES_PER_TOKEN, Instance, LinkNumbers
from pddplan.deployment.caches import CacheNumbers
from pddplan.deployment.keys import hash_once
from pddplan.models import cachetier, network, pipeline

#: Pipeline ids of a request: P-MD (P-D in one datacenter), P-RLD-MD, anomalous on RLD.
P_MD, P_RLD_MD, P_RLD_ANOMALOUS = 0, 1, 2


def pipeline_names(cross_dc: bool = True) -> dict[int, str]:
    """Each pipeline id's name, as every report shows it (P-D for P-MD where decode is in the
    prefill's datacenter)."""
    return {
        P_MD: "P-MD" if cross_dc else "P-D",
        P_RLD_MD: "P-RLD-MD",
        P_RLD_ANOMALOUS: "P-RLD (anomalous)",
    }


HANDOVER_MODES = ("one-shot", "catch-up")
#: A plan's hand-over when it has no RLD (nothing is handed over).
NO_HANDOVER = "-"


def handover_mode(plan_handover: str) -> str:
    """The hand-over mode a plan's pools are timed at: its own, or One-Shot for a plan that
    hands nothing over (:data:`NO_HANDOVER`, where the mode changes no figure)."""
    return plan_handover if plan_handover in HANDOVER_MODES else HANDOVER_MODES[0]


@hash_once
@dataclass(frozen=True, order=True)
class Routing:
    """Which requests take P-RLD-MD: those whose prefix hit rate is below ``threshold``.

    ``Routing.none()`` relays nothing, ``Routing.all()`` relays every request (whatever its hit
    rate); ``Routing.below(h)`` relays hit rates in [0, h). Its hash is computed once
    (:func:`~pddplan.deployment.keys.hash_once`): most of the search's memo keys hold one.
    """

    threshold: float = 0.0
    relay_all: bool = False

    @classmethod
    def none(cls) -> Routing:
        return _RELAY_NONE if cls is Routing else cls(0.0, False)

    @classmethod
    def all(cls) -> Routing:
        return _RELAY_ALL if cls is Routing else cls(1.0, True)

    @classmethod
    def below(cls, threshold: float) -> Routing:
        if threshold > 1.0:
            return cls.all()
        return cls(max(float(threshold), 0.0), False)

    @classmethod
    def from_hit_rate(cls, value: float) -> Routing:
        """From a plan file's ``routing_threshold_hit_rate`` (1.0 relays everything)."""
        return cls.all() if value >= 1.0 else cls.below(value)

    def relays(self, hit_rate) -> np.ndarray:
        """Mask of hit rates this routing relays [bool]."""
        h = np.asarray(hit_rate, dtype=float)
        if self.relay_all:
            return np.ones(h.shape, dtype=bool)
        return h < self.threshold

    @property
    def hit_rate(self) -> float:
        """The threshold as a hit rate in [0, 1] (1.0 when every request is relayed)."""
        return 1.0 if self.relay_all else self.threshold

    def __str__(self) -> str:
        if self.relay_all:
            return "relay all"
        if self.threshold <= 0:
            return "relay none"
        return f"relay hit rate < {self.threshold:.3g}"


def on_decode_side(anomalous, topology: Any) -> np.ndarray:
    """Which requests (or request classes) decode on the decode side, MD (or D in one
    datacenter) [bool]: all but the anomalous ones that a relaying topology's filter keeps on
    RLD (``topology``: its ``anomalous_filter`` and ``relay``). The one rule the planner's
    classes (:attr:`pddplan.solver.Problem.on_decode_side`) and the simulator's requests
    both follow."""
    return ~(np.asarray(anomalous, dtype=bool) & topology.anomalous_filter & topology.relay)


def relays(cross_dc: bool, routing: Routing, hit_rate, decode_side) -> np.ndarray:
    """Which requests ``routing`` relays through RLD [bool]: on the decode side
    (``decode_side``, :func:`on_decode_side`'s mask), below its threshold, and only where
    decode is across the line (in one datacenter nothing is relayed). The one rule of the
    timeline (:func:`timeline`) and the simulator's pipelines."""
    h = np.asarray(hit_rate, dtype=float)
    if not cross_dc:
        return np.zeros(h.shape, dtype=bool)
    return routing.relays(h) & decode_side


#: :meth:`Routing.none` and :meth:`Routing.all`, one object each (a frozen value): a sweep
#: point's problems that relay nothing or everything build no routing of their own, and the
#: memo keys that hold one compare it by identity first.
_RELAY_NONE = Routing(0.0, False)
_RELAY_ALL = Routing(1.0, True)


# ------------------------------------------------------------------------------- prefill


def prefill_s(
    inst: Instance,
    uncached_tokens,
    cached_tokens,
    chunk_size_tokens: int,
    cache: CacheNumbers | None = None,
):
    """Prefill time of requests on a P instance [s], their hits loaded from the cache tiers.

    Without cache tiers (``cache`` None) the hit is taken to be in HBM already, at no cost:
    :meth:`Instance.prefill_s`. With tiers, each request's cached prefix is read from the tiers
    that hold it (:meth:`CacheNumbers.load_s`) layer by layer while the previous layer computes,
    so the prefill takes ``min(c, l)/L + max(c, l)`` for compute ``c``, load ``l`` and ``L``
    layers (:func:`pddplan.models.cachetier.overlapped_prefill_s`): the layer-wise overlap of
    LMCache, Mooncake (FAST'25) and SGLang HiCache. The solver, the bathtub and the simulator
    all take the prefill from here.
    """
    compute = inst.prefill_s(uncached_tokens, cached_tokens, chunk_size_tokens)
    if cache is None:
        return compute
    load = cache.load_s(cached_tokens)
    return cachetier.overlapped_prefill_s(compute, load, cache.layers)


# ------------------------------------------------------------------------------- transfers


def wan_payload_bytes(input_tokens, hit_rate, kv_bytes_per_token):
    """KV bytes that cross the WAN line: the uncached part [bytes]."""
    return network.uncached_kv_bytes(input_tokens, hit_rate, kv_bytes_per_token)


#: [-] The highest line load a transfer's time is taken at: a line offered its goodput or more
#: never drains, and its transfer times are those just short of it (:func:`transfer_load`).
MAX_TRANSFER_UTILIZATION = 0.999999


def transfer_load(link_utilization: float) -> float:
    """The line load a transfer's time is taken at [-]: ``link_utilization`` up to
    :data:`MAX_TRANSFER_UTILIZATION` (the closed forms' and the simulator's one cap)."""
    return min(link_utilization, MAX_TRANSFER_UTILIZATION)


#: Largest payload array whose phases :func:`transfer_phases` memoizes [-] (a search's per-class
#: payloads; a simulator's per-request arrays are computed each time).
_PHASES_MEMO_MAX_SIZE = 4096


def transfer_phases(link: LinkNumbers, payload_bytes, utilization: float = 0.0):
    """(lead_s, line_bytes, rate_cap_bytes_per_s, tail_s) of payloads on a link carrying
    ``utilization`` of its goodput besides them (slow start ends at the bandwidth-delay
    product of the rate left: :func:`pddplan.models.network.transfer_phases`).

    The simulator puts ``line_bytes`` through its processor-shared line at up to
    ``rate_cap_bytes_per_s`` between ``lead_s`` and ``tail_s``; :func:`transfer_s` is the
    closed-form mean of the same phases.

    A search asks for the same few payload arrays at each line load for every routing: small
    ones are memoized on their exact values (the arrays returned are then shared and
    read-only).
    """
    x = np.asarray(payload_bytes, dtype=float)
    if link.goodput_bytes_per_s * (1.0 - utilization) >= link.rate_cap_bytes_per_s:
        # the line leaves the transfer its whole ceiling: the idle line's phases, to the bit
        # (network.rate_left_bytes_per_s), memoized once for every such load
        utilization = 0.0
    if x.size > _PHASES_MEMO_MAX_SIZE:
        return network.transfer_phases(x, **link.transfer_params(), utilization=utilization)
    return _transfer_phases_memo(link, x.shape, x.tobytes(), float(utilization))


@lru_cache(maxsize=256)
def _transfer_phases_memo(
    link: LinkNumbers, shape: tuple[int, ...], payload: bytes, utilization: float = 0.0
):
    """:func:`transfer_phases` of the payload array ``np.frombuffer(payload).reshape(shape)``."""
    x = np.frombuffer(payload, dtype=float).reshape(shape)
    phases = network.transfer_phases(x, **link.transfer_params(), utilization=utilization)
    for a in phases:
        a.setflags(write=False)
    return phases


def transfer_s(link: LinkNumbers, payload_bytes, utilization=0.0):
    """Mean time to move payloads over a link carrying ``utilization`` of its goodput [s].

    A search asks for the same few payload arrays at one line load for every routing and
    prefill option (and the RDMA copy at every rate): small ones at a scalar load are memoized
    on their exact values (a fresh copy is returned)."""
    x = np.asarray(payload_bytes, dtype=float)
    if isinstance(utilization, float | int) and x.size <= _PHASES_MEMO_MAX_SIZE:
        return _transfer_s_memo(link, x.shape, x.tobytes(), float(utilization)).copy()
    return _transfer_s(link, x, utilization)


@lru_cache(maxsize=256)  # a search's few payloads at a rate; each key up to 32 KB of payload
def _transfer_s_memo(link: LinkNumbers, shape: tuple[int, ...], payload: bytes, utilization: float):
    """:func:`transfer_s` of the payload array ``np.frombuffer(payload).reshape(shape)``."""
    return _transfer_s(link, np.frombuffer(payload, dtype=float).reshape(shape), utilization)


def _transfer_s(link: LinkNumbers, payload_bytes, utilization):
    if isinstance(utilization, float | int):
        phases = transfer_phases(link, payload_bytes, float(utilization))
    else:  # one load per payload: the phases array by array
        x = np.asarray(payload_bytes, dtype=float)
        phases = network.transfer_phases(x, **link.transfer_params(), utilization=utilization)
    return network.phases_time_s(phases, link.goodput_bytes_per_s, utilization)


def rdma_copy_s(rdma: LinkNumbers, input_tokens, kv_bytes_per_token):
    """RDMA copy of a request's whole context from P to RLD [s] (RLD keeps no prefix cache)."""
    return transfer_s(rdma, np.asarray(input_tokens, dtype=float) * kv_bytes_per_token)


def handover_transfer_s(wan: LinkNumbers, tokens):
    """Time to ship ``tokens`` token IDs from RLD to MD over the line [s] (warm connection)."""
    payload = network.handover_payload_bytes(tokens, TOKEN_ID_BYTES_PER_TOKEN)
    lead, line_bytes, cap, tail = transfer_phases(wan, payload)
    return np.asarray(
        network.shared_line_time_s(line_bytes, cap, wan.goodput_bytes_per_s) + tail, dtype=float
    )


def jitter_points(
    link: LinkNumbers, points: int = network.JITTER_POINTS
) -> tuple[np.ndarray, np.ndarray]:
    """Equal-probability points of the link's payload jitter factor: (factors, weights)."""
    return network.jitter_points(link.jitter_cv, points)


def jitter_quantile(link: LinkNumbers, probability):
    """Quantile of the link's payload jitter factor [-] (the simulator draws by inversion)."""
    return network.jitter_quantile(probability, link.jitter_cv)


#: Equal-probability points of the jitter factor over which a payload's mean time is taken
#: (:func:`jitter_mean_factors`).
JITTER_MEAN_POINTS = 1000


def jitter_mean_factors(link: LinkNumbers) -> np.ndarray:
    """The link's payload jitter factor at :data:`JITTER_MEAN_POINTS` equal-probability points,
    in increasing order and scaled so that their mean is exactly 1 [-]: a payload's mean time is
    the mean of :func:`transfer_s` of the payload times each (the mean ``pddplan transfer``
    reports and the one ``pddplan calibrate`` fits a link's measured means with); read-only."""
    return _jitter_mean_factors(float(link.jitter_cv))


@lru_cache(maxsize=64)
def _jitter_mean_factors(jitter_cv: float) -> np.ndarray:
    """:func:`jitter_mean_factors` by the jitter's coefficient of variation, kept (a link fit
    asks for them at every evaluation of its rows); the array is read-only."""
    p = (np.arange(JITTER_MEAN_POINTS) + 0.5) / JITTER_MEAN_POINTS
    f = np.asarray(network.jitter_quantile(p, jitter_cv), dtype=float)
    f = f / float(np.mean(f))
    f.setflags(write=False)
    return f


# ------------------------------------------------------------------------------- timeline


@dataclass(frozen=True)
class Paths:
    """The fixed numbers a request's timeline needs besides its own sizes."""

    kv_bytes_per_token: float
    wan: LinkNumbers
    rdma: LinkNumbers
    cross_dc: bool  # KV crosses the WAN line (False: P and D share datacenter A and RDMA)
    tpot_s: float
    catch_up_threshold_tokens: int

    @property
    def decode_link(self) -> LinkNumbers:
        """The link the KV takes to the decode pool."""
        return self.wan if self.cross_dc else self.rdma


@dataclass(frozen=True)
class Timeline:
    """Per-request (or per-class) mean timings at one routing and line load."""

    routing: Routing
    relay: np.ndarray  # bool: takes P-RLD-MD
    on_decode_side: np.ndarray  # bool: decodes on MD (False: anomalous, finished on RLD)
    link_utilization: float
    wan_bytes: np.ndarray  # [bytes] KV to the decode pool
    wan_s: np.ndarray  # [s] mean transfer to the decode pool (RDMA in one datacenter)
    rdma_s: np.ndarray  # [s] RDMA copy to RLD
    relay_wait_s: np.ndarray  # [s] RLD decodes before MD holds the KV
    eager_tokens: np.ndarray  # [tokens] RLD's tokens before MD can take over

    @property
    def pipeline(self) -> np.ndarray:
        """Pipeline id per request (:data:`P_MD`, :data:`P_RLD_MD`, :data:`P_RLD_ANOMALOUS`)."""
        return np.where(
            self.on_decode_side & ~self.relay, P_MD, np.where(self.relay, P_RLD_MD, P_RLD_ANOMALOUS)
        )


@dataclass(frozen=True)
class Timelines:
    """:class:`Timeline` of several routings at one line load (:func:`timelines`): what depends
    on the routing (``relay``, ``relay_wait_s``, ``eager_tokens``) has one row a routing, and
    the rest, which no routing changes, is one array the rows share. The functions of a
    timeline that are elementwise take it where a :class:`Timeline` goes (:func:`decode_split`,
    :func:`first_token_points_by_routing`) and give each routing's values in its row."""

    routings: tuple[Routing, ...]
    relay: np.ndarray  # bool [routing, request]
    on_decode_side: np.ndarray
    link_utilization: float
    wan_bytes: np.ndarray
    wan_s: np.ndarray
    rdma_s: np.ndarray
    relay_wait_s: np.ndarray  # [s] [routing, request]
    eager_tokens: np.ndarray  # [tokens] [routing, request]

    def row(self, i: int) -> Timeline:
        """The timeline of ``routings[i]`` (its values are those :func:`timeline` gives)."""
        return Timeline(
            self.routings[i],
            self.relay[i],
            self.on_decode_side,
            self.link_utilization,
            self.wan_bytes,
            self.wan_s,
            self.rdma_s,
            self.relay_wait_s[i],
            self.eager_tokens[i],
        )


def decode_side_bytes(paths: Paths, input_tokens, hit_rate, on_decode_side) -> np.ndarray:
    """Bytes each request sends to the decode pool (0 for those finished on RLD) [bytes]."""
    b = wan_payload_bytes(input_tokens, hit_rate, paths.kv_bytes_per_token)
    return np.where(on_decode_side, b, 0.0)


def line_utilization(link: LinkNumbers, rate_per_s: float, mean_payload_bytes: float) -> float:
    """Offered load of a link [-]."""
    return float(network.link_utilization(rate_per_s, mean_payload_bytes, link.goodput_bytes_per_s))


def decode_link_utilization(paths: Paths, rate_per_s: float, mean_payload_bytes: float) -> float:
    """Load on the shared path of the KV to the decode pool [-].

    Across datacenters every transfer shares the one WAN line. Inside one datacenter the KV goes
    over the RDMA fabric, which is not shared: each instance has its own NICs on a non-blocking
    fabric, so each copy runs at the link's goodput whatever the rate (as the P-to-RLD copy
    does, :func:`rdma_copy_s`). Treating a per-NIC RDMA link as one line shared by the whole
    fleet made a same-datacenter baseline with 1 GB of KV per request at 46 req/s saturate a
    single 400 Gbit/s NIC and report TTFTs of hours.
    """
    if not paths.cross_dc:
        return 0.0
    return line_utilization(paths.wan, rate_per_s, mean_payload_bytes)


def timeline(
    paths: Paths,
    routing: Routing,
    input_tokens,
    hit_rate,
    output_tokens,
    on_decode_side,
    link_utilization: float,
    rld_step_s: float | None = None,
) -> Timeline:
    """Mean timeline of requests at one routing and line load.

    ``rld_step_s`` is RLD's decode step (default: the TPOT target, which sizing assumes).
    What no line load changes is computed once for a few requests (:func:`_timeline_fixed`).
    """
    h = np.asarray(hit_rate, dtype=float)
    on, relay, wan_bytes, rdma_s = _timeline_fixed(paths, routing, input_tokens, h, on_decode_side)
    wan_s, wait, eager = _timeline_times(
        paths, relay, on, wan_bytes, rdma_s, output_tokens, link_utilization, rld_step_s
    )
    return Timeline(routing, relay, on, link_utilization, wan_bytes, wan_s, rdma_s, wait, eager)


def timelines(
    paths: Paths,
    routings: Sequence[Routing],
    input_tokens,
    hit_rate,
    output_tokens,
    on_decode_side,
    link_utilization: float,
) -> Timelines:
    """:func:`timeline` of each of ``routings`` at one line load, in one set of array calls (RLD
    stepping at the TPOT target): a :class:`Timelines` whose row ``i`` (:meth:`Timelines.row`)
    holds the values ``timeline(..., routings[i], ...)`` gives.

    Only which requests relay depends on the routing: the transfers, the RDMA copy and the
    bytes are computed once, and the relay wait and eager tokens (elementwise,
    :func:`_timeline_times`) once for a routing a row. A search asks for every routing of a
    problem at each rate (:meth:`~pddplan.solver.sizing.Sizing.fresh_routes`)."""
    h = np.asarray(hit_rate, dtype=float)
    fixed = [_timeline_fixed(paths, r, input_tokens, h, on_decode_side) for r in routings]
    on, _, wan_bytes, rdma_s = fixed[0]  # what no routing changes, as each routing's memo has it
    relay = np.array([f[1] for f in fixed])
    relay.setflags(write=False)  # as each routing's own mask is (_timeline_fixed)
    wan_s, wait, eager = _timeline_times(
        paths, relay, on, wan_bytes, rdma_s, output_tokens, link_utilization, None
    )
    return Timelines(
        tuple(routings), relay, on, link_utilization, wan_bytes, wan_s, rdma_s, wait, eager
    )


def _timeline_times(
    paths: Paths,
    relay: np.ndarray,
    on: np.ndarray,
    wan_bytes: np.ndarray,
    rdma_s: np.ndarray,
    output_tokens,
    link_utilization: float,
    rld_step_s: float | None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`timeline`'s ``(wan_s, relay_wait_s, eager_tokens)`` at a line load: the transfer
    to the decode pool, then RLD's wait and eager tokens where relayed. Elementwise: ``relay``
    may have a leading axis (one routing a row, :func:`timelines`), and the routing's rows then
    share the transfers."""
    util = transfer_load(link_utilization)
    wan_s = np.where(on, transfer_s(paths.decode_link, wan_bytes, util), 0.0)
    step = paths.tpot_s if rld_step_s is None else rld_step_s
    wait = np.where(relay, pipeline.relay_wait_s(wan_s, rdma_s), 0.0)
    eager = np.where(relay, pipeline.eager_tokens(wait, step, output_tokens), 0.0)
    return wan_s, wait, eager


def _timeline_fixed(
    paths: Paths, routing: Routing, input_tokens, h: np.ndarray, on_decode_side
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`timeline`'s parts that no line load changes: ``(on_decode_side, relay, wan_bytes,
    rdma_s)`` (``h`` the hit rates as floats).

    Memoized on the path, the routing and the requests' exact values where they are at most
    :data:`_TIMELINE_MEMO_MAX_SIZE` (a search's request classes, which it asks for at every
    rate of a routing; a bathtub's grid is computed each time); the arrays are read-only."""
    tokens, side = np.asarray(input_tokens), np.asarray(on_decode_side)
    key: tuple | None = None
    if max(h.size, tokens.size, side.size) <= _TIMELINE_MEMO_MAX_SIZE:
        key = (paths, routing, h.shape, h.tobytes(), tokens.dtype.str, tokens.shape)
        key += (tokens.tobytes(), side.dtype.str, side.shape, side.tobytes())
        kept = _TIMELINE_FIXED.get(key)
        if kept is not None:
            return kept
    on = np.asarray(on_decode_side, dtype=bool) & np.ones(h.shape, dtype=bool)
    relay = relays(paths.cross_dc, routing, h, on)
    wan_bytes = decode_side_bytes(paths, input_tokens, h, on)
    rdma_s = np.asarray(
        rdma_copy_s(paths.rdma, input_tokens, paths.kv_bytes_per_token), dtype=float
    ) * np.ones(h.shape)
    out = (on, relay, wan_bytes, rdma_s)
    return out if key is None else _TIMELINE_FIXED.keep(key, out)


_Arrays = TypeVar("_Arrays", bound=tuple)


class _ArraysMemo:
    """Tuples of arrays kept on exact keys, read-only, for the memos of what no line load
    changes (:func:`_timeline_fixed`, :func:`_point_weights`, :func:`_split_fixed`): at most
    ``size`` keys, all dropped when a new one would pass that."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._kept: dict[tuple, tuple[np.ndarray, ...]] = {}

    def get(self, key: tuple) -> Any:
        return self._kept.get(key)

    def keep(self, key: tuple, arrays: _Arrays) -> _Arrays:
        """``arrays``, made read-only and kept on ``key``."""
        for a in arrays:
            a.setflags(write=False)
        if len(self._kept) >= self.size:
            self._kept.clear()
        self._kept[key] = arrays
        return arrays

    def clear(self) -> None:
        self._kept.clear()

    def __len__(self) -> int:
        return len(self._kept)


#: Most requests whose :func:`_timeline_fixed` parts are memoized [-].
_TIMELINE_MEMO_MAX_SIZE = 256
#: :func:`_timeline_fixed` kept (a scenario's few paths, routings and class sets).
_TIMELINE_FIXED = _ArraysMemo(512)


def first_token_after_kv_s(
    tl: Timeline | Timelines, wan_s, md_step_s: float, rld_step_s: float
) -> np.ndarray:
    """Time from prefill end to the first token, per request [s]: one decode step after the KV
    lands on the side that decodes first.

    ``P-MD``: ``wan + step_MD``; ``P-RLD-MD``: ``min(rdma + step_RLD, wan + step_MD)`` (RLD over
    RDMA, or MD when its transfer is faster still); anomalous (finished on RLD): ``rdma +
    step_RLD``. ``wan_s`` is the transfer to the decode pool, shaped like ``tl.wan_s`` or with
    one more trailing axis (the line's jitter points, :func:`first_token_points`); the RDMA copy
    and the routing's masks broadcast against it (those of :class:`Timelines` with their
    leading routing axis: elementwise, each routing's row is its own timeline's).

    The one home of the first-token rule: the solver's TTFT, ``solve --explain``'s per-class
    rows, the bathtub and the simulator all take it from here.
    """
    wan = np.asarray(wan_s, dtype=float)
    extra = (Ellipsis,) + (None,) * (wan.ndim - np.ndim(tl.wan_s))
    rdma = np.asarray(tl.rdma_s, dtype=float)[extra]
    direct = (tl.on_decode_side & ~tl.relay)[extra]
    relay = np.asarray(tl.relay)[extra]
    md_first = wan + md_step_s
    rld_first = rdma + rld_step_s
    return np.where(direct, md_first, np.where(relay, np.minimum(rld_first, md_first), rld_first))


def _first_token_grid(
    paths: Paths,
    tl: Timeline,
    prefill_s,
    weights,
    md_step_s: float | None,
    rld_step_s: float | None,
) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
    """``(offsets_s[k, j], points)``: request ``k``'s time from prefill start to its first
    token at the line's jitter point ``j`` (one point without jitter), and the points' weights
    ``weights[k, j]`` with what :func:`first_token_points` keeps of them
    (:func:`_point_weights`)."""
    f, fw = _line_points(paths)
    offs = _first_token_offsets(paths, tl, prefill_s, f, md_step_s, rld_step_s)
    return offs, _point_weights(tl, np.asarray(weights, dtype=float), fw)


def _line_points(paths: Paths) -> tuple[np.ndarray, np.ndarray]:
    """The line's jitter points as :func:`_first_token_offsets` takes them: (factors as a row,
    weights); one point of factor 1 without jitter (or without the line)."""
    if paths.cross_dc and paths.wan.jitter_cv > 0:
        f1, fw = jitter_points(paths.wan)
        return f1[None, :], fw
    return np.ones((1, 1)), np.ones(1)


def _first_token_offsets(
    paths: Paths,
    tl: Timeline | Timelines,
    prefill_s,
    factors: np.ndarray,
    md_step_s: float | None,
    rld_step_s: float | None,
) -> np.ndarray:
    """:func:`_first_token_grid`'s offsets ``offsets_s[..., k, j]`` at the jitter ``factors``
    (:func:`_line_points`), elementwise: with :class:`Timelines`, one routing a leading row,
    each row the offsets of that routing's own timeline (the transfers, which no routing
    changes, computed once)."""
    pre = np.asarray(prefill_s, dtype=float)
    util = transfer_load(tl.link_utilization)
    link = paths.decode_link
    wan = np.where(
        tl.on_decode_side[..., None],
        transfer_s(link, tl.wan_bytes[..., None] * factors, util),
        0.0,
    )
    s_md = paths.tpot_s if md_step_s is None else float(md_step_s)
    s_rld = paths.tpot_s if rld_step_s is None else float(rld_step_s)
    return pre[:, None] + first_token_after_kv_s(tl, wan, s_md, s_rld)


def _point_weights(
    tl: Timeline, w: np.ndarray, fw: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The weights of :func:`_first_token_grid`'s points, ``weights[k, j]`` (requests finished
    on RLD never touch the line: all their weight on the first point), with what
    :func:`first_token_points` keeps of them: where they are above 0 (flat), those weights and
    each one's pipeline id.

    None of them depends on the line's load: they are memoized on the requests' weights, the
    timeline's masks and the jitter points' weights, by exact value (a search asks for them at
    every rate of a routing); the arrays are read-only."""
    on = tl.on_decode_side
    key = (w.shape, w.tobytes(), on.shape, on.tobytes(), tl.relay.tobytes(), fw.tobytes())
    kept = _POINT_WEIGHTS.get(key)
    if kept is not None:
        return kept
    wts = np.where(
        on[:, None],
        w[:, None] * fw[None, :],
        np.where(np.arange(len(fw))[None, :] == 0, w[:, None], 0.0),
    )
    pids = tl.pipeline.repeat(wts.shape[1])  # each request's id at each of its points, flat
    keep = wts.ravel() > 0
    return _POINT_WEIGHTS.keep(key, (wts, keep, wts.ravel()[keep], pids[keep]))


#: :func:`_point_weights` kept (a problem's few routings and request classes).
_POINT_WEIGHTS = _ArraysMemo(256)


def first_token_points(
    paths: Paths,
    tl: Timeline,
    prefill_s,
    weights,
    md_step_s: float | None = None,
    rld_step_s: float | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Time from prefill start to the first token, expanded over the line's jitter points.

    Returns ``(offsets_s, weights, pipeline_ids)``, flattened and without zero weights; the
    solver adds the prefill queue's waiting time to the offsets.

    Notes
    -----
    The first token is one decode step after the KV lands on the side that decodes first
    (:func:`first_token_after_kv_s`): ``pre + wan + step_MD`` (P-MD), ``pre + min(rdma +
    step_RLD, wan + step_MD)`` (P-RLD-MD), ``pre + rdma + step_RLD`` (anomalous). ``md_step_s``
    and ``rld_step_s`` are the pools' steps at their working batches (default: the TPOT target,
    an upper bound on every step, which sizing uses). The simulator emits the first token the
    same way (docs/simulate.md).
    """
    offs, (_, keep, wts, pids) = _first_token_grid(
        paths, tl, prefill_s, weights, md_step_s, rld_step_s
    )
    return offs.ravel()[keep], wts.copy(), pids.copy()


def first_token_points_by_routing(
    paths: Paths, tls: Timelines, prefill_s, weights
) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """:func:`first_token_points` of each routing of ``tls`` (at the TPOT target's steps), the
    offsets of every routing in one set of array calls: the rule is elementwise, so each
    routing's row of the grid holds the offsets its own timeline gives, and each keeps the
    points its own weights keep (:func:`_point_weights`, memoized per routing)."""
    f, fw = _line_points(paths)
    offs = _first_token_offsets(paths, tls, prefill_s, f, None, None)
    w = np.asarray(weights, dtype=float)
    out = []
    for i in range(len(tls.routings)):
        _, keep, wts, pids = _point_weights(tls.row(i), w, fw)
        out.append((offs[i].ravel()[keep], wts.copy(), pids.copy()))
    return out


def class_first_token_mean_s(
    paths: Paths,
    tl: Timeline,
    prefill_s,
    md_step_s: float | None = None,
    rld_step_s: float | None = None,
) -> np.ndarray:
    """Mean time from prefill start to the first token of each request (class) over the line's
    jitter [s]: the per-class mean of :func:`first_token_points` (add the prefill queue's mean
    wait for the mean TTFT)."""
    ones = np.ones(np.shape(tl.relay))
    offs, (wts, *_) = _first_token_grid(paths, tl, prefill_s, ones, md_step_s, rld_step_s)
    return np.sum(offs * wts, axis=1) / np.sum(wts, axis=1)


# ------------------------------------------------------------------------------- hand-over


def handover(
    mode: str,
    eager_tokens,
    threshold_tokens: int,
    extend_fixed_s: float | np.ndarray,
    extend_per_token_s: float | np.ndarray,
    rld_step_s: float,
    handover_s: float,
):
    """(rld_extra_s, md_stall_s, rounds) of a hand-over in ``mode`` (see :mod:`pipeline`)."""
    if mode == "one-shot":
        return pipeline.one_shot_handover(
            eager_tokens, extend_fixed_s, extend_per_token_s, handover_s
        )
    if mode == "catch-up":
        return pipeline.catch_up_handover(
            eager_tokens,
            threshold_tokens,
            extend_fixed_s,
            extend_per_token_s,
            rld_step_s,
            handover_s,
        )
    raise ValueError(f"hand-over mode must be one of {', '.join(HANDOVER_MODES)}, not {mode!r}")


catch_up_converges = pipeline.catch_up_converges


@lru_cache(maxsize=256)
def _catch_up_batch_transfer_s(wan: LinkNumbers, tokens: int) -> float:
    """:func:`handover_transfer_s` of one Catch-Up batch (memoized: the same few links and
    batches recur on every route and MD option of a search)."""
    return float(handover_transfer_s(wan, tokens))


def _handover_on_path(
    paths: Paths,
    mode: str,
    eager_tokens,
    e0: float | np.ndarray,
    e1: float | np.ndarray,
    rld_step_s: float,
):
    """:func:`handover` with the path's Catch-Up batch and its token-ID transfer time."""
    ho_s = _catch_up_batch_transfer_s(paths.wan, paths.catch_up_threshold_tokens)
    return handover(mode, eager_tokens, paths.catch_up_threshold_tokens, e0, e1, rld_step_s, ho_s)


@dataclass(frozen=True)
class DecodeSplit:
    """Who decodes what, per request, once the hand-over is done (as MD and RLD are sized)."""

    md_tokens: np.ndarray  # [tokens] MD is sized to decode: the whole output (see decode_split)
    md_busy_s: np.ndarray  # [s] MD slot time: its tokens at TPOT plus the hand-over stall
    extend_busy_s: np.ndarray  # [s] MD's extend passes
    md_stall_s: np.ndarray  # [s] the longest visible pause at hand-over
    rld_busy_s: np.ndarray  # [s] RLD slot time
    rld_tokens: np.ndarray  # [tokens] decoded on RLD
    rld_extra_s: np.ndarray  # [s] RLD time after MD holds the KV


def decode_split(
    paths: Paths,
    tl: Timeline | Timelines,
    output_tokens,
    mode: str,
    extend_fixed_s: float | np.ndarray,
    extend_per_token_s: float | np.ndarray,
) -> DecodeSplit:
    """Per-request decode work on MD and RLD for a hand-over mode, RLD stepping at the TPOT.

    The extend terms may be columns (one MD option a row, :meth:`~pddplan.solver.sizing.Sizing.
    decode_loads`), and the timeline may be several routings' (:class:`Timelines`, one routing
    a row; with option columns, the options' axis ahead of the routings'): the split is
    elementwise, so each row is that option's and routing's own split.

    Notes
    -----
    MD is sized as if it decoded every output token of the requests it serves: the tokens RLD
    emits before the hand-over are not credited against MD's load. Crediting them made the
    least cost rise with the line's bandwidth (a faster line hands over sooner, so MD decodes
    more), although a deployment on the faster line may always hand over as late as the slower
    line forces. The stall and extend passes still grow with RLD's tokens. Conservative by RLD's
    share of the output tokens (about 1-2% on the bundled scenarios); see docs/solve.md.
    """
    out = np.asarray(output_tokens, dtype=float)
    tpot = paths.tpot_s
    e0, e1 = extend_fixed_s, extend_per_token_s
    relay, eager = tl.relay, tl.eager_tokens
    extra, stall, rounds = _handover_on_path(paths, mode, eager, e0, e1, tpot)
    relayed = eager + extra / tpot  # RLD's tokens, where relayed (below: the others' are 0)
    if mode == "one-shot":
        extend_busy = stall  # one extend pass over every eager token: the stall itself
    else:
        extend_busy = rounds * e0 + e1 * relayed
    extra = np.where(relay, extra, 0.0)
    stall = np.where(relay, stall, 0.0)
    extend_busy = np.where(relay, extend_busy, 0.0)
    md_tokens, md_tokens_s, anomalous_s, anomalous = _split_fixed(tl.on_decode_side, out, tpot)
    md_time = md_tokens_s + stall
    rld_time = np.where(relay, tl.relay_wait_s + extra, 0.0) + anomalous_s
    rld_tokens = np.where(relay, np.minimum(relayed, out), 0.0) + anomalous
    return DecodeSplit(md_tokens, md_time, extend_busy, stall, rld_time, rld_tokens, extra)


def _split_fixed(
    on_decode_side: np.ndarray, out: np.ndarray, tpot_s: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`decode_split`'s terms that neither the line nor the hand-over changes: MD's tokens
    (the output of the requests it decodes) and their time at ``tpot_s``, and the anomalous
    requests' time and tokens on RLD (their whole output); memoized on their exact values (a
    search asks at every rate, routing and hand-over mode); read-only."""
    key = (on_decode_side.shape, on_decode_side.tobytes(), out.shape, out.tobytes(), tpot_s)
    kept = _SPLIT_FIXED.get(key)
    if kept is not None:
        return kept
    md_tokens = np.where(on_decode_side, out, 0.0)
    kept = (
        md_tokens,
        md_tokens * tpot_s,
        np.where(on_decode_side, 0.0, out * tpot_s),
        np.where(on_decode_side, 0.0, out),
    )
    return _SPLIT_FIXED.keep(key, kept)


#: :func:`_split_fixed` kept (a scenario's few class sets and TPOT targets).
_SPLIT_FIXED = _ArraysMemo(256)


def relayed_tokens_at_step(
    paths: Paths,
    tl: Timeline,
    output_tokens,
    mode: str,
    extend_fixed_s: float,
    extend_per_token_s: float,
    rld_step_s: float,
) -> tuple[np.ndarray, np.ndarray]:
    """RLD's tokens and MD's hand-over stall per relayed request with RLD at ``rld_step_s``.

    Sizing counts eager tokens at the TPOT target (conservative for MD's load); a lightly
    loaded RLD steps faster, emits more tokens before MD takes over and hands MD a longer
    extend. Returns ``(rld_tokens, md_stall_s)`` (zero where not relayed).
    """
    out = np.asarray(output_tokens, dtype=float)
    eager = pipeline.eager_tokens(tl.relay_wait_s, rld_step_s, out)
    more, stalls, _ = _handover_on_path(
        paths, mode, eager, extend_fixed_s, extend_per_token_s, rld_step_s
    )
    relayed = np.minimum(eager + np.asarray(more, dtype=float) / rld_step_s, out)
    return np.where(tl.relay, relayed, 0.0), np.where(tl.relay, stalls, 0.0)


def md_context_tokens(input_tokens, output_tokens, weights, on_decode_side) -> float:
    """Mean context of MD's sequences: input plus half the output [tokens]."""
    on = np.asarray(weights, dtype=float) * on_decode_side
    ctx = np.asarray(input_tokens, dtype=float) + np.asarray(output_tokens, dtype=float) / 2
    return float((on * ctx).sum() / max(float(on.sum()), 1e-300))
