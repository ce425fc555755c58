"""The discrete-event simulation of a PDD deployment.

A request's life. Every transfer time, relay and hand-over rule comes from
:mod:`pddplan.timing`, the closed forms' own module; the simulator adds only randomness
(arrivals, lengths, hit rates, jitter), queueing and batching around it:

1. arrives (Poisson, or replayed) and queues FCFS for a prefill instance (one request per
   instance; chunked prefill time from ``Instance.prefill_s``);
2. after prefill, by pipeline:

   - P-MD: the uncached KV (``timing.wan_payload_bytes`` times a mean-one lognormal jitter
     factor) waits its lead time (``timing.transfer_phases``: connection set-up, slow start),
     flows over the WAN line shared with every other flow (processor sharing, each transfer
     at most its own rate ceiling), and arrives after its tail (propagation); MD then
     admits it into a batch slot (waiting FIFO when every slot is taken) and emits its first
     token one decode step later;
   - P-RLD-MD: the whole KV goes to RLD over RDMA (``timing.rdma_copy_s``; the RDMA fabric
     is not shared) while the uncached KV crosses the WAN as above. RLD decodes at once (its
     first step is the first token). When the KV is at MD and MD grants a slot (RLD keeps
     relaying while MD is full), RLD hands its token IDs over: One-Shot (RLD stops, MD extends
     every token in one pass, then decodes) or Catch-Up (MD extends batches of
     ``catch_up_threshold_tokens`` while RLD keeps relaying, then the short rest One-Shot);
   - P-RLD (anomalous, and under the excluded ``p-rld`` policy every relayed request): RDMA to
     RLD and decode to the end there; no WAN transfer.

3. Decode instances batch continuously up to the plan's batch per instance; a step takes
   ``Instance.decode_step_s`` at the instance's current batch and mean context, and an extend
   pass (``Instance.extend_s``) pauses the MD instance that runs it.

TTFT is arrival to the first token from the decode side; TPOT is a request's (last token -
first token) / (output - 1), hand-over pauses included.
"""

from __future__ import annotations

import math
import time
from heapq import heappop

import numpy as np

from pddplan import timing
from pddplan.errors import OptionError, UsageError
from pddplan.executors import Progress
from pddplan.models import pipeline
from pddplan.sim import events as ev
from pddplan.sim import policies
from pddplan.sim.handlers import HANDLERS
from pddplan.sim.metrics import run_figures, series
from pddplan.sim.plan import Role, SimPlan
from pddplan.sim.requests import Requests, from_classes, from_workload
from pddplan.sim.resources import DecodePool, FcfsPool, PsLine
from pddplan.sim.result import SimConfig, SimResult
from pddplan.sim.state import MD_POOL, RLD_POOL, SimState
from pddplan.solver import Problem
from pddplan.spec import Workload

#: Points of the occupancy time series (evenly spaced over the arrival period).
SERIES_POINTS = 200
#: Progress callback granularity [requests].
PROGRESS_EVERY = 1000


def _unique_prefill_s(problem: Problem, plan: SimPlan, req: Requests) -> np.ndarray:
    inst = plan.roles["P"].instance
    key = np.stack([req.uncached_tokens, req.cached_tokens], axis=1)
    uniq, inv = np.unique(key, axis=0, return_inverse=True)
    t = np.asarray(
        timing.prefill_s(inst, uniq[:, 0], uniq[:, 1], problem.chunk_size_tokens, problem.cache),
        dtype=float,
    )
    return np.atleast_1d(t)[np.asarray(inv).ravel()]


def make_requests(
    problem: Problem, plan: SimPlan, cfg: SimConfig, workload: Workload | None = None
) -> Requests:
    """Draw the run's requests (see :mod:`pddplan.sim.requests`)."""
    if cfg.requests < 1:
        raise OptionError("requests", f"must be at least 1, not {cfg.requests}")
    rate = cfg.rate_rps if cfg.rate_rps is not None else plan.rate_rps
    rng = np.random.default_rng(cfg.seed)
    cv = problem.wan.jitter_cv if problem.topology.cross_dc else 0.0
    if cfg.sample == "classes":
        return from_classes(problem.classes, cfg.requests, rate, cv, rng)
    if cfg.sample == "workload":
        if workload is None:
            raise OptionError("sample", "workload needs the scenario's workload")
        filt = bool(problem.topology.anomalous_filter)
        return from_workload(workload, cfg.requests, rate, cv, rng, filt)
    raise OptionError("sample", f"must be classes or workload, not {cfg.sample!r}")


def simulate(
    problem: Problem,
    plan: SimPlan,
    cfg: SimConfig,
    requests: Requests | None = None,
    workload: Workload | None = None,
    progress: Progress | None = None,
) -> SimResult:
    """Simulate ``plan`` serving requests drawn from ``problem`` (or the given ``requests``).

    Parameters
    ----------
    problem : the solver's problem (classes, links, SLA, chunk size, hand-over threshold).
    plan : the fleet to run.
    cfg : run settings.
    requests : replay these instead of drawing (their arrival times are used as given).
    workload : the scenario's workload, for ``cfg.sample == "workload"``.
    progress : called as ``progress(arrived, total)`` every :data:`PROGRESS_EVERY` requests.
    """
    policies.check_policy(cfg.policy)
    mode = policies.resolve_handover(cfg.handover, plan.handover)
    if not 0.0 <= cfg.warmup_fraction < 1.0:
        raise OptionError("warmup_fraction", f"must be in [0, 1), not {cfg.warmup_fraction}")
    req = requests if requests is not None else make_requests(problem, plan, cfg, workload)
    n = len(req)
    if n < 1:
        raise UsageError("no requests to simulate")
    wall0 = time.perf_counter()
    rate = _run_rate_rps(cfg, plan, req, replayed=requests is not None)
    pid_a = _pipelines(problem, plan, req)
    pre_a = _unique_prefill_s(problem, plan, req)
    s = _wire(problem, plan, cfg, req, mode, pid_a, pre_a, progress, rate)
    s.push(s.arrival_s[0], ev.ARRIVAL, 0)
    n_events = run(s)
    if progress is not None:
        progress(n, n)
    wall = time.perf_counter() - wall0

    res = SimResult(
        config=cfg,
        plan=plan,
        rate_rps=rate,
        handover=mode if plan.rld is not None else "-",
        pipeline=pid_a,
        arrival_s=req.arrival_s,
        ttft_s=np.asarray(s.t_first) - req.arrival_s,
        tpot_s=(np.asarray(s.t_done) - np.asarray(s.t_first))
        / np.maximum(req.output_tokens - 1.0, 1.0),
        done_s=np.asarray(s.t_done),
        rld_tokens=np.asarray(s.rld_tok),
        input_tokens=req.input_tokens,
        output_tokens=req.output_tokens,
        stall_s=np.asarray(s.stall),
        md_wait_s=np.asarray(s.md_wait),
        rld_wait_s=np.asarray(s.rld_wait),
        prefill_wait_s=np.asarray(s.t_pstart) - req.arrival_s,
        measured=np.arange(n) >= int(math.ceil(cfg.warmup_fraction * n)),
        figures={},
        series=series(s.rows),
        events=n_events,
        wall_s=wall,
    )
    res.figures = run_figures(res, plan, pre_a, s.wrong, s.catch_up_ok, s.line.c)
    if not s.catch_up_ok and mode in ("catch-up", "adaptive") and plan.rld is not None:
        res.notes.append(
            "Catch-Up cannot converge on this MD (its extend of the catch-up batch is slower than "
            "RLD's decoding): hand-overs ran One-Shot, as the closed forms assume"
        )
    return res


def run(s: SimState) -> int:
    """The event loop: pop events in time order and hand each to its handler until none is left.

    Returns the number of events processed (every event pushed: the loop drains the queue).
    """
    heap = s.q.heap
    handlers = HANDLERS
    pop = heappop
    while heap:
        t_s, _, code, a, b = pop(heap)
        handlers[code](s, t_s, a, b)
    return s.q.seq


def _run_rate_rps(cfg: SimConfig, plan: SimPlan, req: Requests, replayed: bool) -> float:
    """The run's arrival rate [requests/s]: the option's, the plan's, or a trace's own mean."""
    if cfg.rate_rps is not None:
        return cfg.rate_rps
    n = len(req)
    if not replayed:
        return plan.rate_rps
    span = float(req.arrival_s[-1] - req.arrival_s[0])
    return (n - 1) / span if n > 1 and span > 0 else plan.rate_rps


def _pipelines(pb: Problem, plan: SimPlan, req: Requests) -> np.ndarray:
    """Each request's pipeline code (:mod:`pddplan.sim.policies`), by the plan's routing."""
    topo = pb.topology
    on_decode = timing.on_decode_side(req.anomalous, topo)
    has_rld = plan.rld is not None
    # the timeline's rule, and only where the plan has an RLD pool to relay through
    relay = timing.relays(topo.cross_dc, plan.routing, req.hit_rate, on_decode) & has_rld
    pid_a = np.where(
        relay, policies.P_RLD_MD, np.where(on_decode, policies.P_MD, policies.P_RLD_ANOMALOUS)
    )
    if not has_rld and np.any(pid_a == policies.P_RLD_ANOMALOUS):
        raise UsageError(
            "the plan has no RLD pool, but the workload has filtered anomalous requests"
        )
    return pid_a


def line_load(pb: Problem, req: Requests, rate_rps: float) -> float:
    """The decode link's offered load over the run [-]: ``rate_rps`` times the mean bytes a
    request sends to the decode pool, jitter included, none for the anomalous requests RLD
    finishes (the closed form's :attr:`~pddplan.solver.problem.Problem.mean_wan_bytes`)."""
    on_decode = timing.on_decode_side(req.anomalous, pb.topology)
    sent = timing.decode_side_bytes(pb.paths, req.input_tokens, req.hit_rate, on_decode)
    if pb.topology.cross_dc:
        sent = sent * req.jitter
    return timing.decode_link_utilization(pb.paths, rate_rps, float(np.mean(sent)))


def _transfers(pb: Problem, req: Requests, rate_rps: float) -> tuple[np.ndarray, ...]:
    """Per request: (lead_s, line_bytes, rate_cap_bytes_per_s, tail_s) on the decode link,
    and the RDMA copy time to RLD [s]. Slow start ends at the bandwidth-delay product of the
    rate the line leaves a transfer at its offered load over the run (``rate_rps`` times the
    mean payload), as in the closed form (:func:`pddplan.timing.transfer_phases`)."""
    n = len(req)
    kvpt = pb.model.kv_bytes_per_token
    # the line's jitter scales the payload, as in the closed form (timing.first_token_points)
    jitter = req.jitter if pb.topology.cross_dc else 1.0
    wan_bytes = np.asarray(timing.wan_payload_bytes(req.input_tokens, req.hit_rate, kvpt)) * jitter
    util = line_load(pb, req, rate_rps)
    lead_a, line_bytes_a, cap_a, tail_a = (
        np.asarray(x, dtype=float) * np.ones(n)
        for x in timing.transfer_phases(pb.paths.decode_link, wan_bytes, timing.transfer_load(util))
    )
    rdma_a = np.asarray(timing.rdma_copy_s(pb.rdma, req.input_tokens, kvpt), dtype=float)
    return lead_a, line_bytes_a, cap_a, tail_a, rdma_a


def _line(pb: Problem, cap_a: np.ndarray, q: ev.EventQueue) -> PsLine:
    """The decode link: the shared WAN line, or the unshared RDMA fabric in one DC."""
    link = pb.paths.decode_link
    cap = float(np.max(cap_a)) if len(cap_a) else math.inf
    if pb.topology.cross_dc:
        return PsLine(link.goodput_bytes_per_s, q, cap)
    # the RDMA fabric is not shared (timing.decode_link_utilization): each flow at goodput
    return PsLine(math.inf, q, min(cap, link.goodput_bytes_per_s))


def _decode_pool(pool_id: int, role: Role, max_ctx: float, q: ev.EventQueue) -> DecodePool:
    return DecodePool(pool_id, role.instance, role.instances, role.batch_per_instance, max_ctx, q)


def _catch_up_ok(pb: Problem, req: Requests, pid_a: np.ndarray, md: DecodePool) -> bool:
    """Catch-Up converges only when MD extends T tokens faster than RLD makes them (the closed
    form's rule, pipeline.catch_up_handover); otherwise the hand-over is One-Shot."""
    on_decode = pid_a != policies.P_RLD_ANOMALOUS  # the requests MD may decode
    ctx_md = (
        float(np.mean((req.input_tokens + req.output_tokens / 2)[on_decode]))
        if np.any(on_decode)
        else 0.0
    )
    thr = pb.catch_up_threshold_tokens
    # MD's extend of T tokens as the closed forms' hand-over reads it (Instance.extend_affine),
    # at the TPOT steps MD is sized at (timing.decode_split)
    e0, e1 = md.inst.extend_affine(ctx_md)
    return timing.catch_up_converges(e0 + e1 * thr, thr, pb.tpot_s)


def _wire(
    pb: Problem,
    plan: SimPlan,
    cfg: SimConfig,
    req: Requests,
    mode: str,
    pid_a: np.ndarray,
    pre_a: np.ndarray,
    progress: Progress | None,
    rate_rps: float,
) -> SimState:
    """The run's state: pools, line and per-request inputs, with the samples scheduled."""
    q = ev.EventQueue()
    lead_a, line_bytes_a, cap_a, tail_a, rdma_a = _transfers(pb, req, rate_rps)
    max_ctx = float(np.max(req.input_tokens + req.output_tokens)) + 1.0
    md = _decode_pool(MD_POOL, plan.roles["MD"], max_ctx, q)
    rld_role = plan.rld
    s = SimState(
        q=q,
        ppool=FcfsPool(plan.roles["P"].instances, q),
        line=_line(pb, cap_a, q),
        md=md,
        rld=_decode_pool(RLD_POOL, rld_role, max_ctx, q) if rld_role is not None else None,
        rld_slots=rld_role.instances * rld_role.batch_per_instance if rld_role is not None else 1,
        mode=mode,
        catch_up_ok=_catch_up_ok(pb, req, pid_a, md),
        thr_tokens=pb.catch_up_threshold_tokens,
        max_rounds=pipeline.MAX_CATCH_UP_ROUNDS,
        wrong=cfg.policy == "p-rld",
        wan=pb.wan,
        arrival_s=req.arrival_s.tolist(),
        prefill_s=pre_a.tolist(),
        pid=pid_a.tolist(),
        line_bytes=line_bytes_a.tolist(),
        lead_s=lead_a.tolist(),
        tail_s=tail_a.tolist(),
        rdma_s=rdma_a.tolist(),
        output_tokens=req.output_tokens.tolist(),
        input_tokens=req.input_tokens.tolist(),
        progress=progress,
        progress_every=PROGRESS_EVERY,
    )
    for i, ts in enumerate(_sample_times_s(req).tolist()):
        s.push(ts, ev.SAMPLE, i)
    return s


def _sample_times_s(req: Requests) -> np.ndarray:
    """Times of the occupancy samples [s]: :data:`SERIES_POINTS` over the arrival period."""
    t_end_arr = float(req.arrival_s[-1])
    n_series = SERIES_POINTS if len(req) > 1 else 1
    if t_end_arr > 0:
        return np.linspace(0.0, t_end_arr, n_series + 1)[1:]
    return np.zeros(1)
