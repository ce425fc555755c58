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
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from pddplan import timing
from pddplan.errors import UsageError
from pddplan.models import pipeline
from pddplan.sim import events as ev
from pddplan.sim import policies
from pddplan.sim.plan import SimPlan
from pddplan.sim.requests import Requests, from_classes, from_workload
from pddplan.sim.resources import DecodePool, FcfsPool, PsLine, StepTable
from pddplan.solver import Problem
from pddplan.spec import Workload

#: Default share of the first requests left out of the statistics (the empty-system transient).
WARMUP_FRACTION = 0.05
#: Points of the occupancy time series (evenly spaced over the arrival period).
SERIES_POINTS = 200
#: Progress callback granularity [requests].
PROGRESS_EVERY = 1000
#: Batches of consecutive measured requests for the percentiles' confidence half-widths.
CI_BATCHES = 10

MD_POOL, RLD_POOL = 0, 1
# RLD status of a request
_RLD_NONE, _RLD_WAITING, _RLD_ON, _RLD_LEFT, _RLD_FINISHED = 0, 1, 2, 3, 4

Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class SimConfig:
    """How to run a simulation.

    Attributes
    ----------
    requests : [-] requests to simulate.
    seed : random seed; one seed gives one run.
    rate_rps : [requests/s] arrival rate; ``None`` takes the plan's.
    policy : "allowed" (P-MD and P-RLD-MD, anomalous on RLD) or "p-rld" (relayed requests
        finish on RLD: the excluded pipeline).
    handover : "plan", "one-shot", "catch-up" or "adaptive".
    sample : "classes" (the problem's discretized classes, as the closed forms see them),
        "workload" (the workload's continuous distributions), or "trace" (a label only: the
        requests are passed to :func:`simulate`).
    warmup_fraction : [-] share of the first requests left out of the statistics.
    """

    requests: int = 20_000
    seed: int = 0
    rate_rps: float | None = None
    policy: str = "allowed"
    handover: str = "plan"
    sample: str = "classes"
    warmup_fraction: float = WARMUP_FRACTION


@dataclass
class SimResult:
    """Per-request outcomes, pool figures and the occupancy time series of one run."""

    config: SimConfig
    plan: SimPlan
    rate_rps: float
    handover: str
    pipeline: np.ndarray  # per request: 0 P-MD, 1 P-RLD-MD (or P-RLD under p-rld), 2 anomalous
    arrival_s: np.ndarray
    ttft_s: np.ndarray
    tpot_s: np.ndarray
    done_s: np.ndarray
    rld_tokens: np.ndarray
    input_tokens: np.ndarray
    output_tokens: np.ndarray
    stall_s: np.ndarray  # relayed: MD's first token after RLD stopped (nan otherwise)
    md_wait_s: np.ndarray  # wait for an MD slot (nan when MD was not used)
    rld_wait_s: np.ndarray  # wait for an RLD slot after the RDMA copy (nan when RLD not used)
    prefill_wait_s: np.ndarray
    measured: np.ndarray  # bool: counted in the statistics
    figures: dict[str, float]
    series: dict[str, np.ndarray]
    events: int
    wall_s: float
    notes: list[str] = field(default_factory=list)


def _unique_prefill_s(problem: Problem, plan: SimPlan, req: Requests) -> np.ndarray:
    inst = plan.roles["P"].instance
    key = np.stack([req.uncached_tokens, req.cached_tokens], axis=1)
    uniq, inv = np.unique(key, axis=0, return_inverse=True)
    t = np.asarray(inst.prefill_s(uniq[:, 0], uniq[:, 1], problem.chunk_size_tokens), dtype=float)
    return np.atleast_1d(t)[np.asarray(inv).ravel()]


def make_requests(
    problem: Problem, plan: SimPlan, cfg: SimConfig, workload: Workload | None = None
) -> Requests:
    """Draw the run's requests (see :mod:`pddplan.sim.requests`)."""
    if cfg.requests < 1:
        raise UsageError("--requests must be at least 1")
    rate = cfg.rate_rps if cfg.rate_rps is not None else plan.rate_rps
    rng = np.random.default_rng(cfg.seed)
    cv = problem.wan.jitter_cv if problem.topology.cross_dc else 0.0
    if cfg.sample == "classes":
        return from_classes(problem.classes, cfg.requests, rate, cv, rng)
    if cfg.sample == "workload":
        if workload is None:
            raise UsageError("--sample workload needs the scenario's workload")
        filt = bool(problem.topology.anomalous_filter)
        return from_workload(workload, cfg.requests, rate, cv, rng, filt)
    raise UsageError(f"--sample must be classes or workload, not {cfg.sample!r}")


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
        raise UsageError("--warmup must be in [0, 1)")
    req = requests if requests is not None else make_requests(problem, plan, cfg, workload)
    n = len(req)
    if n < 1:
        raise UsageError("no requests to simulate")
    wall0 = time.perf_counter()
    if cfg.rate_rps is not None:
        rate = cfg.rate_rps
    elif requests is None:
        rate = plan.rate_rps
    else:  # replayed: the trace's own mean rate
        span = float(req.arrival_s[-1] - req.arrival_s[0])
        rate = (n - 1) / span if n > 1 and span > 0 else plan.rate_rps

    pb = problem
    topo = pb.topology
    kvpt = pb.model.kv_bytes_per_token
    on_decode = ~(req.anomalous & topo.anomalous_filter & topo.relay)
    has_rld = plan.rld is not None
    relay = plan.routing.relays(req.hit_rate) & on_decode & has_rld & topo.cross_dc
    pid_a = np.where(
        relay, policies.P_RLD_MD, np.where(on_decode, policies.P_MD, policies.P_RLD_ANOMALOUS)
    )
    if not has_rld and np.any(pid_a == policies.P_RLD_ANOMALOUS):
        raise UsageError(
            "the plan has no RLD pool, but the workload has filtered anomalous requests"
        )
    wrong = cfg.policy == "p-rld"
    link = pb.paths.decode_link
    # the line's jitter scales the payload, as in the closed form (timing.first_token_points)
    wan_bytes = np.asarray(timing.wan_payload_bytes(req.input_tokens, req.hit_rate, kvpt)) * (
        req.jitter if topo.cross_dc else 1.0
    )
    lead_a, line_bytes_a, cap_a, tail_a = (
        np.asarray(x, dtype=float) * np.ones(n) for x in timing.transfer_phases(link, wan_bytes)
    )
    rdma_s = np.asarray(timing.rdma_copy_s(pb.rdma, req.input_tokens, kvpt), dtype=float)
    pre_a = _unique_prefill_s(pb, plan, req)

    q = ev.EventQueue()
    push = q.push
    p_role = plan.roles["P"]
    md_role = plan.roles["MD"]
    max_ctx = float(np.max(req.input_tokens + req.output_tokens)) + 1.0
    ppool = FcfsPool(p_role.instances, q)
    if topo.cross_dc:
        line = PsLine(link.goodput_bytes_per_s, q, float(np.max(cap_a)) if n else math.inf)
    else:  # the RDMA fabric is not shared (timing.decode_link_utilization): each flow at goodput
        flow_cap = min(float(np.max(cap_a)) if n else math.inf, link.goodput_bytes_per_s)
        line = PsLine(math.inf, q, flow_cap)
    md = DecodePool(
        MD_POOL, md_role.instance, md_role.instances, md_role.batch_per_instance, max_ctx, q
    )
    rld_role = plan.rld
    rld = (
        DecodePool(
            RLD_POOL, rld_role.instance, rld_role.instances, rld_role.batch_per_instance, max_ctx, q
        )
        if rld_role is not None
        else None
    )
    rld_slots = rld_role.instances * rld_role.batch_per_instance if rld_role is not None else 1
    tpot = pb.tpot_s
    thr_tokens = pb.catch_up_threshold_tokens
    # Catch-Up converges only when MD extends T tokens faster than RLD makes them (closed form's
    # rule, pipeline.catch_up_handover); otherwise the hand-over is One-Shot.
    ctx_md = (
        float(np.mean((req.input_tokens + req.output_tokens / 2)[on_decode]))
        if np.any(on_decode)
        else 0.0
    )
    catch_up_ok = timing.catch_up_converges(md.extend_s(thr_tokens, ctx_md), thr_tokens, tpot)
    max_rounds = pipeline.MAX_CATCH_UP_ROUNDS
    ho_cache: dict[int, float] = {}

    def ho_s(k: float) -> float:
        key = int(k)
        v = ho_cache.get(key)
        if v is None:
            v = float(timing.handover_transfer_s(pb.wan, key))
            ho_cache[key] = v
        return v

    # per-request lists (fast scalar access)
    arr = req.arrival_s.tolist()
    pre = pre_a.tolist()
    pid = pid_a.tolist()
    wanb = line_bytes_a.tolist()
    lead = lead_a.tolist()
    tail = tail_a.tolist()
    rdma = rdma_s.tolist()
    nout = req.output_tokens.tolist()
    ctx_in = req.input_tokens.tolist()
    nan = math.nan
    t_first = [nan] * n
    t_done = [nan] * n
    t_pstart = [nan] * n
    rld_st = [_RLD_NONE] * n
    rld_tok = [0.0] * n
    md_inst = [-1] * n
    md_req_t = [nan] * n
    md_wait = [nan] * n
    rld_req_t = [nan] * n
    rld_wait = [nan] * n
    handed = [0.0] * n
    rounds = [0] * n
    final = [False] * n
    t_stop = [nan] * n
    stall = [nan] * n

    t_end_arr = float(req.arrival_s[-1])
    n_series = SERIES_POINTS if n > 1 else 1
    series_t = np.linspace(0.0, t_end_arr, n_series + 1)[1:] if t_end_arr > 0 else np.zeros(1)
    s_rows: list[tuple[float, ...]] = []
    for i, ts in enumerate(series_t.tolist()):
        push(ts, ev.SAMPLE, i)

    # ---- helpers (closures over the state above)
    def md_release(t: float, j: int) -> None:
        md.used[j] -= 1
        wq = md.waitq
        while wq:
            r2 = wq.popleft()
            if rld_st[r2] == _RLD_FINISHED:
                continue
            md.used[j] += 1
            md_granted(t, r2, j)
            return

    def rld_release(t: float, j: int) -> None:
        assert rld is not None
        rld.used[j] -= 1
        wq = rld.waitq
        while wq:
            r2 = wq.popleft()
            if rld_st[r2] != _RLD_WAITING:
                continue
            rld.used[j] += 1
            rld_join(t, r2, j)
            return

    def rld_join(t: float, r: int, j: int) -> None:
        assert rld is not None
        rld_st[r] = _RLD_ON
        rld_wait[r] = t - rld_req_t[r]
        first = rld.join(t, j, r, ctx_in[r], nout[r])
        if t_first[r] != t_first[r]:  # nan
            t_first[r] = first

    def md_request(t: float, r: int) -> None:
        md_req_t[r] = t
        j = md.pick()
        if j >= 0:
            md.used[j] += 1
            md_granted(t, r, j)
        else:
            md.waitq.append(r)

    def handover_step(t: float, r: int) -> None:
        """Start the next hand-over round of ``r`` (RLD on, MD slot held)."""
        assert rld is not None
        backlog = math.floor(rld.tokens_of(t, r) + 1e-9) - handed[r]
        occ = rld.occupancy() / rld_slots
        if (
            catch_up_ok
            and rounds[r] < max_rounds
            and policies.catch_up_now(mode, backlog, thr_tokens, occ)
        ):
            rounds[r] += 1
            push(t + ho_s(thr_tokens), ev.HANDOVER_AT_MD, r, float(thr_tokens))
        else:
            final_handover(t, r)

    def final_handover(t: float, r: int) -> None:
        assert rld is not None
        j_r, k = rld.leave(t, r)
        rld_release(t, j_r)
        kf = min(float(math.floor(k + 1e-9)), nout[r])
        rld_tok[r] = kf
        rld_st[r] = _RLD_LEFT
        t_stop[r] = t
        final[r] = True
        if kf < 1.0:
            t_first[r] = nan  # RLD left before its first token: MD gives it
        push(t + ho_s(max(kf - handed[r], 0.0)), ev.HANDOVER_AT_MD, r, max(kf - handed[r], 0.0))

    def md_after_handover(t: float, r: int, j: int) -> None:
        togo = nout[r] - rld_tok[r]
        if togo <= 0:
            t_done[r] = t
            md_release(t, j)
            return
        first = md.join(t, j, r, ctx_in[r] + rld_tok[r], togo)
        if t_first[r] != t_first[r]:
            t_first[r] = first
        stall[r] = first - t_stop[r]

    def md_granted(t: float, r: int, j: int) -> None:
        md_inst[r] = j
        md_wait[r] = t - md_req_t[r]
        st = rld_st[r]
        if st == _RLD_FINISHED:
            md_release(t, j)
        elif st == _RLD_ON:
            handover_step(t, r)
        else:
            first = md.join(t, j, r, ctx_in[r], nout[r])
            if t_first[r] != t_first[r]:
                t_first[r] = first

    # ---- main loop
    heap = q.heap
    from heapq import heappop

    next_arrival = 0
    push(arr[0], ev.ARRIVAL, 0)
    p_md, p_relay = policies.P_MD, policies.P_RLD_MD
    n_ev = 0
    while heap:
        t, _, code, a, b = heappop(heap)
        n_ev += 1
        if code == ev.ARRIVAL:
            r = a
            if ppool.free:
                t_pstart[r] = t
            ppool.arrive(t, r, pre[r])
            next_arrival = r + 1
            if next_arrival < n:
                push(arr[next_arrival], ev.ARRIVAL, next_arrival)
            if progress is not None and next_arrival % PROGRESS_EVERY == 0:
                progress(next_arrival, n)
        elif code == ev.PREFILL_DONE:
            r = a
            nxt = ppool.done(b)
            if nxt >= 0:
                t_pstart[nxt] = t
                ppool.start(t, nxt, b, pre[nxt])
            p = pid[r]
            if p == p_md:
                push(t + lead[r], ev.WAN_START, r)
            elif p == p_relay and not wrong:
                push(t + lead[r], ev.WAN_START, r)
                push(t + rdma[r], ev.RDMA_DONE, r)
            else:
                push(t + rdma[r], ev.RDMA_DONE, r)
        elif code == ev.DECODE_DONE:
            j, ver = b
            if a == MD_POOL:
                for r in md.done(t, j, ver):
                    t_done[r] = t
                    md_release(t, j)
            else:
                assert rld is not None
                for r in rld.done(t, j, ver):
                    t_done[r] = t
                    rld_tok[r] = nout[r]
                    rld_st[r] = _RLD_FINISHED
                    rld_release(t, j)
        elif code == ev.WAN_START:
            line.add(t, a, wanb[a])
        elif code == ev.LINE_DONE:
            for r in line.done(t, a):
                push(t + tail[r], ev.KV_AT_MD, r)
        elif code == ev.KV_AT_MD:
            r = a
            st = rld_st[r]
            if pid[r] == p_md or st in (_RLD_NONE, _RLD_WAITING):
                if st == _RLD_WAITING or (pid[r] == p_relay and st == _RLD_NONE):
                    rld_st[r] = _RLD_LEFT  # the KV beat the relay: go straight to MD
                md_request(t, r)
            elif st == _RLD_ON:
                md_request(t, r)  # RLD keeps relaying until MD has a slot
        elif code == ev.RDMA_DONE:
            r = a
            if rld_st[r] != _RLD_NONE:
                continue
            assert rld is not None
            rld_req_t[r] = t
            j = rld.pick()
            if j >= 0:
                rld.used[j] += 1
                rld_join(t, r, j)
            else:
                rld_st[r] = _RLD_WAITING
                rld.waitq.append(r)
        elif code == ev.HANDOVER_AT_MD:
            r = a
            j = md_inst[r]
            k = float(b)
            if not final[r] and rld_st[r] == _RLD_FINISHED:
                md_release(t, j)
            elif k > 0:
                md.extend(t, j, r, k, ctx_in[r] + handed[r])
            else:
                md_after_handover(t, r, j)
        elif code == ev.EXTEND_DONE:
            j = b
            r, k = md.extend_done(t, j)
            handed[r] += k
            if final[r]:
                md_after_handover(t, r, j)
            elif rld_st[r] == _RLD_FINISHED:
                md_release(t, j)
            else:
                handover_step(t, r)
        elif code == ev.SAMPLE:
            md.snapshot(t)
            line.snapshot(t)
            if rld is not None:
                rld.snapshot(t)
            s_rows.append(
                (
                    t,
                    float(len(ppool.queue)),
                    float(line.n),
                    float(line.busy_s),
                    float(md.occupancy() + len(md.waitq)),
                    float(md.tokens),
                    float(md.busy_s),
                    float(rld.occupancy() + sum(1 for x in rld.waitq if rld_st[x] == _RLD_WAITING))
                    if rld
                    else 0.0,
                    float(rld.tokens) if rld else 0.0,
                    float(rld.busy_s) if rld else 0.0,
                )
            )
    if progress is not None:
        progress(n, n)
    wall = time.perf_counter() - wall0

    res = SimResult(
        config=cfg,
        plan=plan,
        rate_rps=rate,
        handover=mode if has_rld else "-",
        pipeline=pid_a,
        arrival_s=req.arrival_s,
        ttft_s=np.asarray(t_first) - req.arrival_s,
        tpot_s=(np.asarray(t_done) - np.asarray(t_first))
        / np.maximum(req.output_tokens - 1.0, 1.0),
        done_s=np.asarray(t_done),
        rld_tokens=np.asarray(rld_tok),
        input_tokens=req.input_tokens,
        output_tokens=req.output_tokens,
        stall_s=np.asarray(stall),
        md_wait_s=np.asarray(md_wait),
        rld_wait_s=np.asarray(rld_wait),
        prefill_wait_s=np.asarray(t_pstart) - req.arrival_s,
        measured=np.arange(n) >= int(math.ceil(cfg.warmup_fraction * n)),
        figures={},
        series=_series(s_rows),
        events=n_ev,
        wall_s=wall,
    )
    res.figures = _figures(res, pb, plan, pre_a, wrong, catch_up_ok)
    if not catch_up_ok and mode in ("catch-up", "adaptive") and has_rld:
        res.notes.append(
            "Catch-Up cannot converge on this MD (its extend of the catch-up batch is slower than "
            "RLD's decoding): hand-overs ran One-Shot, as the closed forms assume"
        )
    return res


_SERIES_COLS = (
    "t_s",
    "prefill_queue",
    "line_flows",
    "line_busy_s",
    "md_occupancy",
    "md_tokens",
    "md_busy_s",
    "rld_occupancy",
    "rld_tokens",
    "rld_busy_s",
)


def _series(rows: list[tuple[float, ...]]) -> dict[str, np.ndarray]:
    a = np.asarray(rows, dtype=float).reshape(-1, len(_SERIES_COLS))
    return {k: a[:, i] for i, k in enumerate(_SERIES_COLS)}


def _slope_per_s(t: np.ndarray, y: np.ndarray) -> float:
    """Least-squares slope of ``y`` over ``t`` [1/s]; 0 with fewer than three points."""
    if len(t) < 3 or float(np.ptp(t)) <= 0:
        return 0.0
    return float(np.polyfit(t, y, 1)[0])


def _batch_ci(x: np.ndarray, p: float) -> float:
    """95% half-width of the ``p``-th percentile by batch means [same unit as ``x``].

    The samples (in arrival order) are cut into :data:`CI_BATCHES` consecutive batches; the
    spread of the batch percentiles, over ``sqrt(batches)``, accounts for the correlation
    between neighbouring requests that queueing creates. nan with fewer than 20 samples per
    batch.
    """
    if len(x) < 20 * CI_BATCHES:
        return math.nan
    qs = [float(np.percentile(b, p)) for b in np.array_split(x, CI_BATCHES)]
    return float(1.96 * np.std(qs, ddof=1) / math.sqrt(CI_BATCHES))


def _figures(
    res: SimResult, pb: Problem, plan: SimPlan, pre_s: np.ndarray, wrong: bool, catch_up_ok: bool
) -> dict[str, float]:
    m = res.measured & np.isfinite(res.ttft_s)
    s = res.series
    t = s["t_s"]
    n_req = len(res.ttft_s)
    win = t >= res.config.warmup_fraction * (t[-1] if len(t) else 0.0)
    i0 = int(np.argmax(win)) if np.any(win) else 0
    dt = float(t[-1] - t[i0]) if len(t) > 1 else 0.0

    def d(col: str) -> float:
        return float(s[col][-1] - s[col][i0]) if len(t) > 1 else 0.0

    tt = res.ttft_s[m]
    figs: dict[str, float] = {
        "requests": float(n_req),
        "measured_requests": float(m.sum()),
        "unfinished_requests": float(np.sum(~np.isfinite(res.done_s))),
        "rate_rps": res.rate_rps,
    }
    for p in (50, 90, 99):
        figs[f"ttft_p{p}_s"] = float(np.percentile(tt, p)) if len(tt) else math.nan
        figs[f"ci:ttft_p{p}_s"] = _batch_ci(tt, p)
    figs["ttft_mean_s"] = float(np.mean(tt)) if len(tt) else math.nan
    tp = res.tpot_s[m & (res.output_tokens > 1) & np.isfinite(res.tpot_s)]
    figs["tpot_mean_s"] = float(np.mean(tp)) if len(tp) else math.nan
    figs["tpot_p99_s"] = float(np.percentile(tp, 99)) if len(tp) else math.nan
    out = res.output_tokens[m]
    figs["rld_output_token_share"] = (
        float(np.sum(res.rld_tokens[m]) / np.sum(out)) if len(out) else math.nan
    )
    n_p = plan.roles["P"].instances
    span = (
        float(res.arrival_s[-1] - res.arrival_s[int(np.argmax(res.measured))]) if m.any() else 0.0
    )
    figs["prefill_utilization"] = (
        float(np.sum(pre_s[res.measured]) / (n_p * span)) if span > 0 else math.nan
    )
    pw = res.prefill_wait_s[m]
    figs["prefill_mean_wait_s"] = float(np.mean(pw)) if len(pw) else math.nan
    figs["prefill_wait_probability"] = float(np.mean(pw > 1e-12)) if len(pw) else math.nan
    figs["link_utilization"] = d("line_busy_s") / dt if dt > 0 else math.nan
    mw = res.md_wait_s[m & np.isfinite(res.md_wait_s)]
    figs["md_mean_slot_wait_s"] = float(np.mean(mw)) if len(mw) else 0.0
    figs["md_p99_slot_wait_s"] = float(np.percentile(mw, 99)) if len(mw) else 0.0
    rw = res.rld_wait_s[m & np.isfinite(res.rld_wait_s)]
    figs["rld_mean_slot_wait_s"] = float(np.mean(rw)) if len(rw) else 0.0
    figs["rld_p99_slot_wait_s"] = float(np.percentile(rw, 99)) if len(rw) else 0.0
    st = res.stall_s[m & np.isfinite(res.stall_s)]
    figs["md_stall_mean_s"] = float(np.mean(st)) if len(st) else 0.0
    figs["md_stall_max_s"] = float(np.max(st)) if len(st) else 0.0
    # pool loads over the measured window
    md_role = plan.roles["MD"]
    figs["md_tokens_per_s_per_instance"] = (
        d("md_tokens") / dt / md_role.instances if dt > 0 else math.nan
    )
    figs["md_busy_fraction"] = d("md_busy_s") / dt / md_role.instances if dt > 0 else math.nan
    sel_t = t[i0:]
    figs["md_occupancy_slope_per_s"] = _slope_per_s(sel_t, s["md_occupancy"][i0:])
    figs["md_occupancy_final"] = float(s["md_occupancy"][-1]) if len(t) else 0.0
    rr = plan.rld
    # demanded token rates: what each side is asked to decode per second of arrivals
    win_req = res.measured
    span_req = span if span > 0 else math.nan
    to_rld = np.where(
        (res.pipeline == policies.P_RLD_ANOMALOUS) | ((res.pipeline == policies.P_RLD_MD) & wrong),
        res.output_tokens,
        res.rld_tokens,
    )
    rld_demand = float(np.sum(to_rld[win_req])) / span_req
    md_demand = float(np.sum((res.output_tokens - to_rld)[win_req])) / span_req
    figs["md_demand_tokens_per_s"] = md_demand
    figs["rld_demand_tokens_per_s"] = rld_demand
    if rr is not None:
        figs["rld_tokens_per_s_per_instance"] = (
            d("rld_tokens") / dt / rr.instances if dt > 0 else math.nan
        )
        figs["rld_busy_fraction"] = d("rld_busy_s") / dt / rr.instances if dt > 0 else math.nan
        figs["rld_occupancy_slope_per_s"] = _slope_per_s(sel_t, s["rld_occupancy"][i0:])
        figs["rld_occupancy_final"] = float(s["rld_occupancy"][-1]) if len(t) else 0.0
        figs["rld_occupancy_max"] = float(np.max(s["rld_occupancy"])) if len(t) else 0.0
        # capacity: a full batch at the mean context of what RLD decodes
        sel = to_rld > 0
        ctx = (
            float(np.mean(res.output_tokens[sel] / 2 + res.input_tokens[sel])) if sel.any() else 0.0
        )
        tab = StepTable(rr.instance, rr.batch_per_instance, max(ctx, 1.0) * 2)
        cap = rr.instances * rr.batch_per_instance / tab.step_s(rr.batch_per_instance, ctx)
        figs["rld_capacity_tokens_per_s"] = cap
        figs["rld_offered_load"] = rld_demand / cap if cap > 0 else math.nan
        md_per = md_demand / md_role.instances
        figs["rld_to_md_load_ratio_per_instance"] = (
            (rld_demand / rr.instances) / md_per if md_per > 0 else math.nan
        )
    figs["rld_to_md_token_ratio"] = rld_demand / md_demand if md_demand > 0 else math.nan
    # per pipeline TTFT
    for p_id, name in policies.PIPELINE_NAMES.items():
        sel = m & (res.pipeline == p_id)
        if not sel.any():
            continue
        key = policies.P_RLD_WRONG if (wrong and p_id == policies.P_RLD_MD) else name
        figs[f"pipeline:{key}:share"] = float(sel.sum() / m.sum())
        for p in (50, 90, 99):
            figs[f"pipeline:{key}:ttft_p{p}_s"] = float(np.percentile(res.ttft_s[sel], p))
            figs[f"ci:pipeline:{key}:ttft_p{p}_s"] = _batch_ci(res.ttft_s[sel], p)
    figs["catch_up_converges"] = float(catch_up_ok)
    return figs
