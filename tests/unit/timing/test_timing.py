"""Unit tests of pddplan.timing: hand-computed timelines on every route.

The links are chosen so that every number can be worked out on paper:

* WAN line: 10 Gbit/s, efficiency 1 (goodput ``C = 1.25e9`` bytes/s), RTT 20 ms, a pooled
  connection (no handshake), slow start after idle off (no slow start), no window or loss
  ceiling (rate cap = C), no jitter. A transfer of ``x`` bytes at line load ``u`` takes
  ``x / (C (1 - u)) + RTT / 2``.
* RDMA fabric: 400 Gbit/s, goodput ``5e10`` bytes/s, RTT 2 ms, a fixed 1 ms per transfer. A
  copy of ``x`` bytes takes ``1 ms + x / 5e10 + 1 ms``.
* KV: 1e5 bytes per token; TPOT target 50 ms; Catch-Up batch T = 4 tokens.

Four requests, one per route (routing: relay hit rates below 0.6):

====  ======  ====  ======  ============  ================================
req   L_in    h     L_out   decode side   route
====  ======  ====  ======  ============  ================================
r0    10000   0.5   100     MD            P-RLD-MD (h < 0.6)
r1    10000   1.0   100     MD            P-MD (h >= 0.6; nothing to send)
r2    2000    0.0   0       MD            P-RLD-MD with zero output
r3    4000    0.25  50      RLD           anomalous, finished on RLD
====  ======  ====  ======  ============  ================================
"""

from __future__ import annotations

import dataclasses
import math
from statistics import NormalDist

import numpy as np
import pytest

from pddplan import timing
from pddplan.deployment import LinkNumbers
from pddplan.timing import P_MD, P_RLD_ANOMALOUS, P_RLD_MD, Paths, Routing

REL = 1e-12

WAN = LinkNumbers(
    name="wan-10g",
    bandwidth_gbit_per_s=10.0,
    goodput_bytes_per_s=1.25e9,
    rtt_s=0.02,
    setup_rtts=1.0,  # paid only on a cold connection; this one is pooled
    jitter_cv=0.0,
    price_usd_per_hour=0.0,
    tcp=True,
    connection_reuse=True,
    slow_start_after_idle=False,
    max_window_bytes=math.inf,
    loss_rate=0.0,
)
RDMA = LinkNumbers(
    name="rdma-400g",
    bandwidth_gbit_per_s=400.0,
    goodput_bytes_per_s=5e10,
    rtt_s=0.002,
    setup_rtts=0.0,
    jitter_cv=0.0,
    price_usd_per_hour=0.0,
    tcp=False,
    per_transfer_latency_s=0.001,
)
KV_BYTES_PER_TOKEN = 1e5
TPOT_S = 0.05
T_TOKENS = 4
PATHS = Paths(
    kv_bytes_per_token=KV_BYTES_PER_TOKEN,
    wan=WAN,
    rdma=RDMA,
    cross_dc=True,
    tpot_s=TPOT_S,
    catch_up_threshold_tokens=T_TOKENS,
)
SAME_DC = dataclasses.replace(PATHS, cross_dc=False)
ROUTING = Routing.below(0.6)

INPUT_TOKENS = np.array([10000.0, 10000.0, 2000.0, 4000.0])
HIT_RATE = np.array([0.5, 1.0, 0.0, 0.25])
OUTPUT_TOKENS = np.array([100.0, 100.0, 0.0, 50.0])
ON_DECODE_SIDE = np.array([True, True, True, False])
WEIGHTS = np.array([0.4, 0.3, 0.2, 0.1])
PREFILL_S = np.array([1.0, 0.5, 0.2, 0.3])

# The token-ID hand-over of one Catch-Up batch: 4 tokens x 16 bytes = 64 bytes on the warm
# line (no lead): 64 / 1.25e9 + 0.01 = 0.0100000512 s.
HO_S = 0.0100000512
E0_S, E1_S = 0.02, 0.001  # MD's extend pass e(k) = 20 ms + 1 ms per token


def _timeline(paths: Paths = PATHS, routing: Routing = ROUTING, utilization: float = 0.0):
    return timing.timeline(
        paths, routing, INPUT_TOKENS, HIT_RATE, OUTPUT_TOKENS, ON_DECODE_SIDE, utilization
    )


# ------------------------------------------------------------------------------- transfers


def test_wan_payload_bytes_scalar_and_array() -> None:
    # 10000 x (1 - 0.5) x 1e5 = 5e8 bytes
    assert float(timing.wan_payload_bytes(10000, 0.5, KV_BYTES_PER_TOKEN)) == 5e8
    # [10000 x 0.5, 10000 x 0, 2000 x 1, 4000 x 0.75] x 1e5
    got = timing.wan_payload_bytes(INPUT_TOKENS, HIT_RATE, KV_BYTES_PER_TOKEN)
    np.testing.assert_allclose(got, [5e8, 0.0, 2e8, 3e8], rtol=REL)


def test_transfer_s_on_the_idle_and_loaded_line() -> None:
    # idle: 5e8 / 1.25e9 + 0.02 / 2 = 0.4 + 0.01
    assert float(timing.transfer_s(WAN, 5e8)) == pytest.approx(0.41, rel=REL)
    # half loaded: 5e8 / 0.625e9 + 0.01
    assert float(timing.transfer_s(WAN, 5e8, 0.5)) == pytest.approx(0.81, rel=REL)
    # nothing to send: the last byte's propagation only
    assert float(timing.transfer_s(WAN, 0.0)) == pytest.approx(0.01, rel=REL)
    # arrays: [0, 1.25e8, 1.25e9] bytes -> [0, 0.1, 1] s on the line, plus 10 ms
    got = timing.transfer_s(WAN, np.array([0.0, 1.25e8, 1.25e9]))
    np.testing.assert_allclose(got, [0.01, 0.11, 1.01], rtol=REL)


def test_transfer_s_cold_tcp_connection_slow_starts() -> None:
    cold = dataclasses.replace(
        WAN, connection_reuse=False, slow_start_after_idle=True, max_window_bytes=math.inf
    )
    # W0 = 10 x 1448 = 14480 bytes; BDP = 1.25e9 x 0.02 = 2.5e7 bytes;
    # K = ceil(log2(2.5e7 / 14480)) = ceil(10.75) = 11 window-limited rounds at most;
    # the payload would end in round ceil(log2(5e8 / 14480 + 1)) - 1 = 15, so it waits 11
    # rounds having sent 14480 x (2^11 - 1) = 29,640,560 bytes.
    # lead = (1 handshake + 11 rounds) x 0.02 = 0.24 s
    # line = (5e8 - 29,640,560) / 1.25e9 = 0.376287552 s; tail 0.01 s
    assert float(timing.transfer_s(cold, 5e8)) == pytest.approx(0.626287552, rel=1e-12)


def test_transfer_s_window_ceiling_under_load() -> None:
    # a 5e6-byte window over 20 ms caps one transfer at 2.5e8 bytes/s; on a line at 90 % load
    # the free share is 1.25e8 bytes/s, which binds instead
    capped = dataclasses.replace(WAN, max_window_bytes=5e6)
    # idle: 5e8 / 2.5e8 + 0.01 = 2.01 s
    assert float(timing.transfer_s(capped, 5e8)) == pytest.approx(2.01, rel=REL)
    # 50 % load: free 6.25e8 > cap 2.5e8, still 2.01 s
    assert float(timing.transfer_s(capped, 5e8, 0.5)) == pytest.approx(2.01, rel=REL)
    # 90 % load: 5e8 / 1.25e8 + 0.01 = 4.01 s
    assert float(timing.transfer_s(capped, 5e8, 0.9)) == pytest.approx(4.01, rel=1e-9)


def test_transfer_s_memo_gives_the_computed_times_in_fresh_arrays() -> None:
    # small payload arrays at a scalar load are memoized: the same bits as the computation
    # itself (timing._transfer_s), a fresh writable array each call, and a load given as an
    # array (calibrate, transfer) is computed each time
    cold = dataclasses.replace(WAN, connection_reuse=False, slow_start_after_idle=True)
    x = np.array([0.0, 1.0, 14480.0, 5e6, 5e8, 3.3e9])
    for link in (WAN, cold, RDMA):
        for util in (0.0, 0.37, np.float64(0.5), 0.999999):
            want = timing._transfer_s(link, x, float(util))
            a = timing.transfer_s(link, x, util)
            assert a.tobytes() == want.tobytes()
            a[:] = -1.0  # the caller's copy: the memo keeps its own
            b = timing.transfer_s(link, x.copy(), util)
            assert b.tobytes() == want.tobytes() and b.flags.writeable and b is not a
    grid = x[:, None] * np.array([0.5, 1.0, 2.0])[None, :]
    assert (
        timing.transfer_s(WAN, grid, 0.2).tobytes() == timing._transfer_s(WAN, grid, 0.2).tobytes()
    )
    rho = np.array([0.0, 0.1, 0.2, 0.3, 0.4, 0.5])
    np.testing.assert_array_equal(
        timing.transfer_s(WAN, x, rho),
        [float(timing.transfer_s(WAN, v, float(r))) for v, r in zip(x, rho, strict=True)],
    )
    # a scalar payload stays a scalar
    assert np.ndim(timing.transfer_s(WAN, 5e8, 0.5)) == 0


def test_transfer_s_is_the_network_model_s_mean_time_to_the_bit() -> None:
    # one rule: the timeline's transfer (phases memoized, an idle-line shortcut) gives the
    # mean time of pddplan.models.network.transfer_time_s, whose formulas its tests check by
    # hand, on every kind of link and load
    from pddplan.models import network

    cold = dataclasses.replace(WAN, connection_reuse=False, slow_start_after_idle=True)
    capped = dataclasses.replace(cold, max_window_bytes=4e6, loss_rate=1e-5)
    x = np.array([0.0, 1.0, 14480.0, 5e6, 5e8, 3.3e9])
    for link in (WAN, cold, capped, RDMA):
        params = link.transfer_params()
        goodput = params.pop("goodput_bytes_per_s")
        for util in (0.0, 0.37, 0.5, 0.999999):
            want = network.transfer_time_s(x, goodput, util, **params)
            assert timing.transfer_s(link, x, util).tobytes() == np.asarray(want).tobytes()


def test_rdma_copy_s_scalar_and_array() -> None:
    # the whole context, no prefix cache on RLD: 1e9 / 5e10 + 1 ms latency + 1 ms tail
    assert float(timing.rdma_copy_s(RDMA, 10000, KV_BYTES_PER_TOKEN)) == pytest.approx(
        0.022, rel=REL
    )
    # [0, 2e8, 1e9] bytes -> [0, 4, 20] ms on the fabric, plus 2 ms
    got = timing.rdma_copy_s(RDMA, np.array([0.0, 2000.0, 10000.0]), KV_BYTES_PER_TOKEN)
    np.testing.assert_allclose(got, [0.002, 0.006, 0.022], rtol=REL)


def test_handover_transfer_s_skips_the_lead() -> None:
    # 4 token IDs x 16 bytes = 64 bytes on the warm line: 64 / 1.25e9 + 0.01; a per-transfer
    # latency (part of the lead) is not paid by the hand-over
    assert float(timing.handover_transfer_s(WAN, 4)) == pytest.approx(HO_S, rel=REL)
    slow = dataclasses.replace(WAN, per_transfer_latency_s=0.5)
    assert float(timing.handover_transfer_s(slow, 4)) == pytest.approx(HO_S, rel=REL)
    # 1000 tokens: 16000 / 1.25e9 + 0.01 = 0.0100128
    got = timing.handover_transfer_s(WAN, np.array([0, 1000]))
    np.testing.assert_allclose(got, [0.01, 0.0100128], rtol=REL)


def test_line_and_decode_link_utilization() -> None:
    # across datacenters: 2 req/s x 5e8 bytes / 1.25e9 bytes/s = 0.8
    assert timing.decode_link_utilization(PATHS, 2.0, 5e8) == pytest.approx(0.8, rel=REL)
    # no traffic: an idle line
    assert timing.decode_link_utilization(PATHS, 0.0, 5e8) == 0.0
    assert timing.decode_link_utilization(PATHS, 2.0, 0.0) == 0.0
    # one datacenter: every copy has its own NICs, nothing shared, whatever the rate
    assert timing.decode_link_utilization(SAME_DC, 2.0, 5e8) == 0.0
    assert timing.decode_link_utilization(SAME_DC, 1e6, 1e12) == 0.0
    # the RDMA fabric's own offered load: 2 x 5e8 / 5e10
    assert timing.line_utilization(RDMA, 2.0, 5e8) == pytest.approx(0.02, rel=REL)


# ------------------------------------------------------------------------------- routing


def test_routing_relays() -> None:
    h = np.array([0.0, 0.3, 0.6, 1.0])
    np.testing.assert_array_equal(Routing.below(0.6).relays(h), [True, True, False, False])
    np.testing.assert_array_equal(Routing.none().relays(h), [False] * 4)
    np.testing.assert_array_equal(Routing.all().relays(h), [True] * 4)
    # a threshold above 1 relays everything, hit rate 1 included; one below 0 relays nothing
    assert Routing.below(1.5) == Routing.all()
    assert Routing.below(-0.2) == Routing.none()
    assert Routing.from_hit_rate(1.0) == Routing.all()
    assert Routing.from_hit_rate(0.6) == Routing.below(0.6)
    assert Routing.all().hit_rate == 1.0
    assert Routing.below(0.6).hit_rate == 0.6
    assert (str(Routing.none()), str(Routing.all())) == ("relay none", "relay all")
    assert str(Routing.below(0.6)) == "relay hit rate < 0.6"


# ------------------------------------------------------------------------------- timeline


def test_timeline_every_route_cross_dc_idle_line() -> None:
    tl = _timeline()
    np.testing.assert_array_equal(tl.relay, [True, False, True, False])
    np.testing.assert_array_equal(tl.on_decode_side, ON_DECODE_SIDE)
    np.testing.assert_array_equal(tl.pipeline, [P_RLD_MD, P_MD, P_RLD_MD, P_RLD_ANOMALOUS])
    # KV to MD: r3 is finished on RLD and sends nothing
    np.testing.assert_allclose(tl.wan_bytes, [5e8, 0.0, 2e8, 0.0], rtol=REL)
    # r0: 0.4 + 0.01; r1: 0.01 (propagation only); r2: 0.16 + 0.01; r3: never on the line
    np.testing.assert_allclose(tl.wan_s, [0.41, 0.01, 0.17, 0.0], rtol=REL)
    # whole context over RDMA: [1e9, 1e9, 2e8, 4e8] / 5e10 + 2 ms
    np.testing.assert_allclose(tl.rdma_s, [0.022, 0.022, 0.006, 0.010], rtol=REL)
    # relayed only: r0 0.41 - 0.022; r2 0.17 - 0.006
    np.testing.assert_allclose(tl.relay_wait_s, [0.388, 0.0, 0.164, 0.0], rtol=REL, atol=1e-15)
    # r0: ceil(0.388 / 0.05) = ceil(7.76) = 8; r2: ceil(3.28) = 4 capped at 0 output tokens
    np.testing.assert_array_equal(tl.eager_tokens, [8.0, 0.0, 0.0, 0.0])
    assert tl.link_utilization == 0.0
    assert tl.routing == ROUTING


def test_timeline_loaded_line_and_rld_step() -> None:
    tl = _timeline(utilization=0.5)
    # the line's free half: r0 5e8 / 6.25e8 + 0.01 = 0.81; r1 0.01; r2 2e8 / 6.25e8 + 0.01
    np.testing.assert_allclose(tl.wan_s, [0.81, 0.01, 0.33, 0.0], rtol=REL)
    # the RDMA copy does not share the line
    np.testing.assert_allclose(tl.rdma_s, [0.022, 0.022, 0.006, 0.010], rtol=REL)
    np.testing.assert_allclose(tl.relay_wait_s, [0.788, 0.0, 0.324, 0.0], rtol=REL, atol=1e-15)
    # ceil(0.788 / 0.05) = ceil(15.76) = 16
    np.testing.assert_array_equal(tl.eager_tokens, [16.0, 0.0, 0.0, 0.0])
    # RLD stepping at 100 ms on the idle line: ceil(0.388 / 0.1) = ceil(3.88) = 4
    fast = timing.timeline(
        PATHS, ROUTING, INPUT_TOKENS, HIT_RATE, OUTPUT_TOKENS, ON_DECODE_SIDE, 0.0, 0.1
    )
    np.testing.assert_array_equal(fast.eager_tokens, [4.0, 0.0, 0.0, 0.0])


def test_timeline_saturated_line_is_clamped_not_infinite() -> None:
    tl = _timeline(utilization=1.0)
    # the load is clamped at 0.999999: free share 1.25e9 x 1e-6 = 1250 bytes/s;
    # r0 5e8 / 1250 + 0.01 = 400000.01 s
    assert tl.wan_s[0] == pytest.approx(400000.01, rel=1e-6)
    assert np.all(np.isfinite(tl.wan_s))
    assert tl.link_utilization == 1.0  # the offered load is kept as given


def test_timeline_relay_all_and_none() -> None:
    every = _timeline(routing=Routing.all())
    # hit rate 1 is relayed too; r3 is not (it never reaches MD)
    np.testing.assert_array_equal(every.relay, [True, True, True, False])
    np.testing.assert_array_equal(every.pipeline, [P_RLD_MD, P_RLD_MD, P_RLD_MD, P_RLD_ANOMALOUS])
    # r1: MD's 0.01 s beats RLD's 0.022 s, so RLD never waits
    assert every.relay_wait_s[1] == 0.0
    assert every.eager_tokens[1] == 0.0
    none = _timeline(routing=Routing.none())
    np.testing.assert_array_equal(none.relay, [False] * 4)
    np.testing.assert_array_equal(none.pipeline, [P_MD, P_MD, P_MD, P_RLD_ANOMALOUS])
    np.testing.assert_array_equal(none.relay_wait_s, [0.0] * 4)
    np.testing.assert_array_equal(none.eager_tokens, [0.0] * 4)


def test_timeline_same_datacenter_goes_over_rdma_and_never_relays() -> None:
    assert SAME_DC.decode_link is RDMA
    assert PATHS.decode_link is WAN
    tl = timing.timeline(
        SAME_DC, Routing.all(), INPUT_TOKENS, HIT_RATE, OUTPUT_TOKENS, ON_DECODE_SIDE, 0.0
    )
    np.testing.assert_array_equal(tl.relay, [False] * 4)
    np.testing.assert_array_equal(tl.pipeline, [P_MD, P_MD, P_MD, P_RLD_ANOMALOUS])
    # the uncached KV over RDMA: [5e8, 0, 2e8] / 5e10 + 2 ms; r3 stays on RLD
    np.testing.assert_allclose(tl.wan_s, [0.012, 0.002, 0.006, 0.0], rtol=REL)
    np.testing.assert_array_equal(tl.relay_wait_s, [0.0] * 4)
    np.testing.assert_array_equal(tl.eager_tokens, [0.0] * 4)


def test_timeline_scalar_request() -> None:
    tl = timing.timeline(PATHS, ROUTING, 10000, 0.5, 100, True, 0.0)
    assert np.shape(tl.wan_s) == ()
    assert float(tl.wan_bytes) == 5e8
    assert float(tl.wan_s) == pytest.approx(0.41, rel=REL)
    assert float(tl.rdma_s) == pytest.approx(0.022, rel=REL)
    assert float(tl.relay_wait_s) == pytest.approx(0.388, rel=REL)
    assert float(tl.eager_tokens) == 8.0
    assert int(tl.pipeline) == P_RLD_MD


# ------------------------------------------------------------------------------- first token


def test_first_token_after_kv_every_route() -> None:
    """One decode step after the KV lands on the side that decodes first (MD steps 0.05 s,
    RLD 0.03 s)."""
    tl = _timeline()
    # r0 relayed: min(RDMA 0.022 + 0.03, WAN 0.41 + 0.05) = 0.052; r1 P-MD: 0.01 + 0.05;
    # r2 relayed: min(0.006 + 0.03, 0.17 + 0.05) = 0.036; r3 anomalous: 0.010 + 0.03
    got = timing.first_token_after_kv_s(tl, tl.wan_s, 0.05, 0.03)
    np.testing.assert_allclose(got, [0.052, 0.06, 0.036, 0.040], rtol=REL)
    # the WAN twice as slow: only r1's time moves (0.02 + 0.05)
    got = timing.first_token_after_kv_s(tl, 2.0 * tl.wan_s, 0.05, 0.03)
    np.testing.assert_allclose(got, [0.052, 0.07, 0.036, 0.040], rtol=REL)
    # relayed with a faster WAN: MD's 0.01 + 0.05 loses to RLD's 0.022 + 0.03 = 0.052
    every = _timeline(routing=Routing.all())
    got = timing.first_token_after_kv_s(every, every.wan_s, 0.05, 0.03)
    np.testing.assert_allclose(got, [0.052, 0.052, 0.036, 0.040], rtol=REL)
    # a WAN 30x faster than r0's 0.41 s (0.41 / 30 = 0.01367, + 0.03 = 0.04367) beats RLD
    got = timing.first_token_after_kv_s(tl, tl.wan_s / 30, 0.03, 0.03)
    assert got[0] == pytest.approx(0.41 / 30 + 0.03, rel=REL)
    # a trailing axis of jitter points broadcasts against the RDMA copy
    grid = timing.first_token_after_kv_s(
        tl, np.stack([tl.wan_s, 2.0 * tl.wan_s], axis=1), 0.05, 0.03
    )
    np.testing.assert_allclose(grid[:, 1], [0.052, 0.07, 0.036, 0.040], rtol=REL)


def test_class_first_token_mean_s_is_the_points_mean() -> None:
    """Without jitter, each class has one point: its mean is prefill plus the first token."""
    tl = _timeline()
    pre = np.array([1.0, 2.0, 3.0, 4.0])
    got = timing.class_first_token_mean_s(PATHS, tl, pre, 0.05, 0.03)
    np.testing.assert_allclose(got, pre + np.array([0.052, 0.06, 0.036, 0.040]), rtol=REL)


def test_first_token_points_every_route_default_steps() -> None:
    tl = _timeline()
    offs, wts, pids = timing.first_token_points(PATHS, tl, PREFILL_S, WEIGHTS)
    # no jitter: one point per request, in order
    # r0: 1.0 + min(0.022 + 0.05, 0.41 + 0.05) = 1.072
    # r1: 0.5 + 0.01 + 0.05 = 0.56
    # r2: 0.2 + min(0.006 + 0.05, 0.17 + 0.05) = 0.256
    # r3: 0.3 + 0.010 + 0.05 = 0.36
    np.testing.assert_allclose(offs, [1.072, 0.56, 0.256, 0.36], rtol=REL)
    np.testing.assert_allclose(wts, WEIGHTS, rtol=REL)
    np.testing.assert_array_equal(pids, [P_RLD_MD, P_MD, P_RLD_MD, P_RLD_ANOMALOUS])


def test_timeline_memo_is_the_computed_timeline() -> None:
    """A timeline's parts that no line load changes are memoized for a few requests: a memo
    hit gives the timeline the computation gives, field by field, at any load, routing and
    path; a larger request array is computed each time."""
    jittered = dataclasses.replace(PATHS, wan=dataclasses.replace(WAN, jitter_cv=0.5))
    one_dc = dataclasses.replace(PATHS, cross_dc=False)
    fields = [f.name for f in dataclasses.fields(timing.Timeline)]
    for paths in (PATHS, jittered, one_dc):
        for routing in (ROUTING, Routing.none(), Routing.all()):
            for util in (0.0, 0.3, 0.7):
                timing._TIMELINE_FIXED.clear()
                fresh = _timeline(paths, routing, util)
                assert timing._TIMELINE_FIXED
                kept = _timeline(paths, routing, util)
                for name in fields:
                    a, b = getattr(fresh, name), getattr(kept, name)
                    if isinstance(a, np.ndarray):
                        assert a.dtype == b.dtype and a.tobytes() == b.tobytes(), name
                    else:
                        assert a == b, name
    n = timing._TIMELINE_MEMO_MAX_SIZE + 1
    timing._TIMELINE_FIXED.clear()
    big = timing.timeline(
        PATHS, ROUTING, np.full(n, 4000.0), np.linspace(0, 1, n), np.full(n, 50.0), True, 0.2
    )
    assert not timing._TIMELINE_FIXED and big.relay.shape == (n,)


def test_first_token_points_weights_memo_is_the_computed_points() -> None:
    """The points' weights, kept mask and pipeline ids are memoized (no line load changes
    them): a memo hit returns what the computation returns, at any load and routing, as fresh
    arrays the caller may change."""
    cv = 0.5
    jittered = dataclasses.replace(PATHS, wan=dataclasses.replace(WAN, jitter_cv=cv))
    for paths in (PATHS, jittered):
        for routing in (ROUTING, Routing.none(), Routing.all()):
            for util in (0.0, 0.3, 0.7):
                tl = _timeline(paths, routing, util)
                timing._POINT_WEIGHTS.clear()
                fresh = timing.first_token_points(paths, tl, PREFILL_S, WEIGHTS)
                fresh_mean = timing.class_first_token_mean_s(paths, tl, PREFILL_S)
                kept = timing.first_token_points(paths, tl, PREFILL_S, WEIGHTS)
                assert timing._POINT_WEIGHTS
                for a, b in zip(fresh, kept, strict=True):
                    assert a.dtype == b.dtype and a.tobytes() == b.tobytes()
                    b[...] = 0  # the caller's own copies
                again = timing.first_token_points(paths, tl, PREFILL_S, WEIGHTS)
                for a, b in zip(fresh, again, strict=True):
                    assert a.tobytes() == b.tobytes()
                mean = timing.class_first_token_mean_s(paths, tl, PREFILL_S)
                assert mean.tobytes() == fresh_mean.tobytes()


def test_first_token_points_pool_steps() -> None:
    tl = _timeline()
    offs, _, _ = timing.first_token_points(
        PATHS, tl, PREFILL_S, WEIGHTS, md_step_s=0.03, rld_step_s=0.07
    )
    # r0: 1.0 + min(0.022 + 0.07, 0.41 + 0.03) = 1.092
    # r1: 0.5 + 0.01 + 0.03 = 0.54
    # r2: 0.2 + min(0.006 + 0.07, 0.17 + 0.03) = 0.276
    # r3: 0.3 + 0.010 + 0.07 = 0.38
    np.testing.assert_allclose(offs, [1.092, 0.54, 0.276, 0.38], rtol=REL)
    # relayed, MD first: hit rate 1 relayed, min(0.022 + 0.05, 0.01 + 0.05) = 0.06
    every = _timeline(routing=Routing.all())
    offs, _, pids = timing.first_token_points(PATHS, every, PREFILL_S, WEIGHTS)
    assert offs[1] == pytest.approx(0.56, rel=REL)
    assert pids[1] == P_RLD_MD
    # RLD much slower than MD: r0 1.0 + min(0.022 + 0.5, 0.41 + 0.05) = 1.46 (MD first)
    offs, _, _ = timing.first_token_points(PATHS, tl, PREFILL_S, WEIGHTS, rld_step_s=0.5)
    assert offs[0] == pytest.approx(1.46, rel=REL)


def test_first_token_points_drop_zero_weights() -> None:
    tl = _timeline()
    offs, wts, pids = timing.first_token_points(
        PATHS, tl, PREFILL_S, np.array([0.4, 0.0, 0.6, 0.0])
    )
    np.testing.assert_allclose(offs, [1.072, 0.256], rtol=REL)
    np.testing.assert_allclose(wts, [0.4, 0.6], rtol=REL)
    np.testing.assert_array_equal(pids, [P_RLD_MD, P_RLD_MD])


def test_first_token_points_jitter_expands_line_requests_only() -> None:
    cv = 0.5
    paths = dataclasses.replace(PATHS, wan=dataclasses.replace(WAN, jitter_cv=cv))
    tl = timing.timeline(
        paths,
        Routing.none(),
        np.array([10000.0, 4000.0]),
        np.array([0.5, 0.25]),
        np.array([100.0, 50.0]),
        np.array([True, False]),
        0.0,
    )
    offs, wts, pids = timing.first_token_points(
        paths, tl, np.array([1.0, 0.3]), np.array([0.75, 0.25])
    )
    # the P-MD request takes the 9 equal-probability points of a mean-one lognormal factor
    # on its payload: sigma^2 = ln(1 + cv^2), f_i = exp(-sigma^2 / 2 + sigma z_i),
    # z_i = Phi^-1((i + 0.5) / 9); the anomalous one never touches the line: one point
    sigma = math.sqrt(math.log(1.0 + cv * cv))
    z = [NormalDist().inv_cdf((i + 0.5) / 9) for i in range(9)]
    f = np.array([math.exp(-sigma * sigma / 2 + sigma * zi) for zi in z])
    # 1.0 + 5e8 f / 1.25e9 + 0.01 + 0.05
    expected = list(1.06 + 0.4 * f) + [0.3 + 0.010 + 0.05]
    np.testing.assert_allclose(offs, expected, rtol=1e-9)
    np.testing.assert_allclose(wts, [0.75 / 9] * 9 + [0.25], rtol=REL)
    np.testing.assert_array_equal(pids, [P_MD] * 9 + [P_RLD_ANOMALOUS])
    # the median point: z = 0, f = 1 / sqrt(1.25) = 0.894427191
    assert offs[4] == pytest.approx(1.06 + 0.4 * 0.894427191, rel=1e-9)


def test_first_token_points_no_jitter_inside_one_datacenter() -> None:
    # the WAN's jitter does not apply to KV that goes over RDMA
    paths = dataclasses.replace(SAME_DC, wan=dataclasses.replace(WAN, jitter_cv=0.5))
    tl = timing.timeline(paths, ROUTING, INPUT_TOKENS, HIT_RATE, OUTPUT_TOKENS, ON_DECODE_SIDE, 0.0)
    offs, wts, pids = timing.first_token_points(paths, tl, PREFILL_S, WEIGHTS)
    # [1.0 + 0.012, 0.5 + 0.002, 0.2 + 0.006, 0.3 + 0.010] + 0.05
    np.testing.assert_allclose(offs, [1.062, 0.552, 0.256, 0.36], rtol=REL)
    np.testing.assert_allclose(wts, WEIGHTS, rtol=REL)
    np.testing.assert_array_equal(pids, [P_MD, P_MD, P_MD, P_RLD_ANOMALOUS])


# ------------------------------------------------------------------------------- hand-over


def test_handover_one_shot() -> None:
    extra, stall, rounds = timing.handover(
        "one-shot", np.array([0.0, 2.0, 8.0]), T_TOKENS, E0_S, E1_S, TPOT_S, 0.01
    )
    # k = 0: nothing to hand over; k > 0: one transfer, one extend e0 + e1 k
    np.testing.assert_allclose(extra, [0.0, 0.01, 0.01], rtol=REL)
    np.testing.assert_allclose(stall, [0.0, 0.022, 0.028], rtol=REL)
    np.testing.assert_array_equal(rounds, [0.0, 1.0, 1.0])
    # scalar
    extra, stall, rounds = timing.handover("one-shot", 8, T_TOKENS, E0_S, E1_S, TPOT_S, 0.01)
    assert (float(extra), float(rounds)) == (0.01, 1.0)
    assert float(stall) == pytest.approx(0.028, rel=REL)


def test_handover_catch_up() -> None:
    extra, stall, rounds = timing.handover(
        "catch-up", np.array([0.0, 2.0, 4.0, 8.0]), T_TOKENS, E0_S, E1_S, TPOT_S, 0.01
    )
    # e(T) = 0.02 + 0.004 = 0.024 s; RLD adds 0.024 / 0.05 = 0.48 tokens meanwhile, so each
    # full round cuts the backlog by 4 - 0.48 = 3.52 tokens.
    # k <= T (0, 2, 4): one-shot of the backlog.
    # k = 8: rounds = ceil((8 - 4) / 3.52) = 2, backlog 8 - 7.04 = 0.96, final extend
    #   0.02 + 0.00096 = 0.02096 s; RLD: 2 x (0.024 + 0.01) + 0.01 = 0.078 s; 3 extends
    np.testing.assert_allclose(extra, [0.0, 0.01, 0.01, 0.078], rtol=REL)
    np.testing.assert_allclose(stall, [0.0, 0.022, 0.024, 0.02096], rtol=REL)
    np.testing.assert_array_equal(rounds, [0.0, 1.0, 1.0, 3.0])


def test_handover_catch_up_that_cannot_converge_falls_back_to_one_shot() -> None:
    # e(T) = 0.2 + 0.004 = 0.204 s >= T x tpot = 0.2 s: RLD outruns MD
    k = np.array([0.0, 8.0])
    slow = timing.handover("catch-up", k, T_TOKENS, 0.2, E1_S, TPOT_S, 0.01)
    np.testing.assert_allclose(slow[0], [0.0, 0.01], rtol=REL)
    np.testing.assert_allclose(slow[1], [0.0, 0.208], rtol=REL)
    np.testing.assert_array_equal(slow[2], [0.0, 1.0])


def test_handover_rejects_an_unknown_mode() -> None:
    with pytest.raises(ValueError, match="one-shot, catch-up"):
        timing.handover("eager", 8, T_TOKENS, E0_S, E1_S, TPOT_S, 0.01)


def test_catch_up_converges() -> None:
    # T x step = 4 x 0.25 = 1.0 s
    assert timing.catch_up_converges(0.999, 4, 0.25)
    assert not timing.catch_up_converges(1.0, 4, 0.25)  # a tie never catches up
    assert not timing.catch_up_converges(1.5, 4, 0.25)
    assert timing.catch_up_converges(0.024, T_TOKENS, TPOT_S)


def test_decode_split_one_shot() -> None:
    tl = _timeline()
    ds = timing.decode_split(PATHS, tl, OUTPUT_TOKENS, "one-shot", E0_S, E1_S)
    # r0 (relayed, 8 eager tokens): RLD ships the IDs (HO_S), MD extends 0.02 + 0.008
    # r1 (P-MD), r2 (relayed, no output), r3 (anomalous): no hand-over
    np.testing.assert_allclose(ds.rld_extra_s, [HO_S, 0.0, 0.0, 0.0], rtol=REL)
    np.testing.assert_allclose(ds.md_stall_s, [0.028, 0.0, 0.0, 0.0], rtol=REL)
    np.testing.assert_allclose(ds.extend_busy_s, [0.028, 0.0, 0.0, 0.0], rtol=REL)
    # MD is sized for every output token of the requests it serves (r3 is RLD's)
    np.testing.assert_array_equal(ds.md_tokens, [100.0, 100.0, 0.0, 0.0])
    # 100 x 0.05 + the stall
    np.testing.assert_allclose(ds.md_busy_s, [5.028, 5.0, 0.0, 0.0], rtol=REL)
    # RLD: r0 the wait 0.388 + HO_S; r2 holds its slot for the wait 0.164 s although it
    # emits nothing; r3 decodes its 50 tokens at 0.05 s
    np.testing.assert_allclose(ds.rld_busy_s, [0.388 + HO_S, 0.0, 0.164, 2.5], rtol=REL)
    # r0: 8 + HO_S / 0.05 = 8.200001024 tokens; r3: all 50
    np.testing.assert_allclose(ds.rld_tokens, [8.200001024, 0.0, 0.0, 50.0], rtol=REL)


def test_decode_split_catch_up() -> None:
    tl = _timeline()
    ds = timing.decode_split(PATHS, tl, OUTPUT_TOKENS, "catch-up", E0_S, E1_S)
    # r0, k = 8 as in test_handover_catch_up with the batch's transfer HO_S:
    # RLD extra = 2 x (0.024 + HO_S) + HO_S = 0.048 + 3 x 0.0100000512 = 0.0780001536 s
    # stall 0.02096 s, 3 extends;
    # extend busy = 3 x 0.02 + 0.001 x (8 + 0.0780001536 / 0.05) = 0.069560003072 s
    np.testing.assert_allclose(ds.rld_extra_s, [0.0780001536, 0.0, 0.0, 0.0], rtol=REL)
    np.testing.assert_allclose(ds.md_stall_s, [0.02096, 0.0, 0.0, 0.0], rtol=REL)
    np.testing.assert_allclose(ds.extend_busy_s, [0.069560003072, 0.0, 0.0, 0.0], rtol=REL)
    np.testing.assert_allclose(ds.md_busy_s, [5.02096, 5.0, 0.0, 0.0], rtol=REL)
    # 0.388 + 0.0780001536
    np.testing.assert_allclose(ds.rld_busy_s, [0.4660001536, 0.0, 0.164, 2.5], rtol=REL)
    # 8 + 0.0780001536 / 0.05 = 9.560003072
    np.testing.assert_allclose(ds.rld_tokens, [9.560003072, 0.0, 0.0, 50.0], rtol=REL)


def _split_by_the_formulas(tl, out, mode, e0, e1):
    """decode_split's terms written out, each computed afresh (no memo, no shared term)."""
    tpot = PATHS.tpot_s
    extra, stall, rounds = timing._handover_on_path(PATHS, mode, tl.eager_tokens, e0, e1, tpot)
    if mode == "one-shot":
        busy = np.where(tl.eager_tokens > 0, e0 + e1 * tl.eager_tokens, 0.0)
    else:
        busy = rounds * e0 + e1 * (tl.eager_tokens + extra / tpot)
    extra = np.where(tl.relay, extra, 0.0)
    stall = np.where(tl.relay, stall, 0.0)
    md_tokens = np.where(tl.on_decode_side, out, 0.0)
    return (
        md_tokens,
        md_tokens * tpot + stall,
        np.where(tl.relay, busy, 0.0),
        stall,
        np.where(tl.relay, tl.relay_wait_s + extra, 0.0)
        + np.where(tl.on_decode_side, 0.0, out * tpot),
        np.where(tl.relay, np.minimum(tl.eager_tokens + extra / tpot, out), 0.0)
        + np.where(tl.on_decode_side, 0.0, out),
        extra,
    )


def test_decode_split_is_its_formulas_bit_for_bit() -> None:
    """The split's shared terms (the one-shot stall as its extend pass, RLD's relayed tokens)
    and its memoized ones (MD's tokens, the anomalous requests') give the values each formula
    gives on its own, memo cold or warm, for one MD option or several (columns)."""
    columns = (np.array([[E0_S], [2 * E0_S]]), np.array([[E1_S], [0.5 * E1_S]]))
    for routing in (ROUTING, Routing.none(), Routing.all()):
        for util in (0.0, 0.4, 0.9):
            tl = _timeline(PATHS, routing, util)
            for mode in ("one-shot", "catch-up"):
                for e0, e1 in ((E0_S, E1_S), columns):
                    want = _split_by_the_formulas(tl, OUTPUT_TOKENS, mode, e0, e1)
                    timing._SPLIT_FIXED.clear()
                    for _ in range(2):  # the memo cold, then warm
                        got = timing.decode_split(PATHS, tl, OUTPUT_TOKENS, mode, e0, e1)
                        for a, b in zip(dataclasses.astuple(got), want, strict=True):
                            assert a.shape == b.shape and a.tobytes() == b.tobytes()


def test_decode_split_same_datacenter_has_no_hand_over() -> None:
    tl = timing.timeline(
        SAME_DC, Routing.all(), INPUT_TOKENS, HIT_RATE, OUTPUT_TOKENS, ON_DECODE_SIDE, 0.0
    )
    ds = timing.decode_split(SAME_DC, tl, OUTPUT_TOKENS, "catch-up", E0_S, E1_S)
    np.testing.assert_array_equal(ds.rld_extra_s, [0.0] * 4)
    np.testing.assert_array_equal(ds.md_stall_s, [0.0] * 4)
    np.testing.assert_array_equal(ds.extend_busy_s, [0.0] * 4)
    np.testing.assert_allclose(ds.md_busy_s, [5.0, 5.0, 0.0, 0.0], rtol=REL)
    # only the anomalous request is RLD's
    np.testing.assert_allclose(ds.rld_busy_s, [0.0, 0.0, 0.0, 2.5], rtol=REL)
    np.testing.assert_allclose(ds.rld_tokens, [0.0, 0.0, 0.0, 50.0], rtol=REL)


def test_relayed_tokens_at_step_one_shot() -> None:
    tl = _timeline()
    tokens, stalls = timing.relayed_tokens_at_step(
        PATHS, tl, OUTPUT_TOKENS, "one-shot", E0_S, E1_S, 0.02
    )
    # r0 with RLD at 20 ms: ceil(0.388 / 0.02) = ceil(19.4) = 20 eager tokens, then
    # HO_S / 0.02 = 0.50000256 more while the IDs travel; MD extends 0.02 + 0.020
    # r2 is relayed but has no output; r1 and r3 are not relayed
    np.testing.assert_allclose(tokens, [20.50000256, 0.0, 0.0, 0.0], rtol=REL)
    np.testing.assert_allclose(stalls, [0.04, 0.0, 0.0, 0.0], rtol=REL)


def test_relayed_tokens_at_step_catch_up_and_output_cap() -> None:
    tl = _timeline()
    tokens, stalls = timing.relayed_tokens_at_step(
        PATHS, tl, OUTPUT_TOKENS, "catch-up", E0_S, E1_S, 0.02
    )
    # k = 20; e(T) = 0.024 s = 1.2 RLD steps, so each round cuts 4 - 1.2 = 2.8 tokens:
    # rounds = ceil(16 / 2.8) = 6, backlog 20 - 16.8 = 3.2, final extend 0.02 + 0.0032;
    # RLD extra = 6 x (0.024 + HO_S) + HO_S = 0.144 + 7 x 0.0100000512 = 0.2140003584 s
    # tokens = 20 + 0.2140003584 / 0.02 = 30.70001792
    np.testing.assert_allclose(tokens, [30.70001792, 0.0, 0.0, 0.0], rtol=REL)
    np.testing.assert_allclose(stalls, [0.0232, 0.0, 0.0, 0.0], rtol=REL)
    # an output of 25 tokens caps RLD's share (20 eager + 10.7 relayed) at 25
    short = np.array([25.0, 100.0, 0.0, 50.0])
    tokens, _ = timing.relayed_tokens_at_step(PATHS, tl, short, "catch-up", E0_S, E1_S, 0.02)
    np.testing.assert_allclose(tokens, [25.0, 0.0, 0.0, 0.0], rtol=REL)


# ------------------------------------------------------------------------------- MD context


def test_md_context_tokens() -> None:
    # context = input + output / 2: [10050, 10050, 2000, 4025]; r3 is not MD's
    # (0.4 x 10050 + 0.3 x 10050 + 0.2 x 2000) / 0.9 = 7435 / 0.9
    got = timing.md_context_tokens(INPUT_TOKENS, OUTPUT_TOKENS, WEIGHTS, ON_DECODE_SIDE)
    assert got == pytest.approx(7435 / 0.9, rel=REL)
    # one request: 10000 + 0 / 2
    assert timing.md_context_tokens(10000, 0, 1.0, True) == 10000.0
    # nothing on MD: 0, not a division by zero
    assert timing.md_context_tokens(INPUT_TOKENS, OUTPUT_TOKENS, WEIGHTS, np.zeros(4, bool)) == 0
