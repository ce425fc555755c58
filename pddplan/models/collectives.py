"""Collectives with latency and bandwidth (alpha-beta): all-reduce, all-gather, all-to-all.

Each collective costs ``alpha + bytes_on_the_bottleneck_link / beta``: a fixed latency per call
(kernel launch, synchronization, the first hop) plus the bytes the busiest link of a rank carries
over its achieved bandwidth. The fabric is one of scale-up (NVLink-class, inside a node or an
NVL72 rack), PCIe (cards without NVLink), or scale-out (an RDMA NIC per chip); the achieved
bandwidth ``beta`` is the datasheet rate times a measured efficiency (nccl-tests bus bandwidth,
DeepEP's dispatch and combine bandwidths), kept in the chip profile. All functions are pure and
broadcast over numpy arrays.

References
----------
.. [1] Hockney, "The communication challenge for MPP: Intel Paragon and Meiko CS-2", Parallel
   Computing 20, 1994 (the alpha-beta model).
.. [2] Patarasuk and Yuan, "Bandwidth optimal all-reduce algorithms for clusters", JPDC 2009:
   a ring all-reduce moves ``2 (n - 1) / n`` of the message over each rank's link; an
   all-gather ``(n - 1) / n``.
.. [3] NVIDIA nccl-tests, doc/PERFORMANCE.md: bus bandwidth ``busbw = algbw * 2 (n - 1) / n``
   for all-reduce, ``(n - 1) / n`` for all-gather and all-to-all.
.. [4] DeepSeek-AI, DeepEP README (2025; V1 figures now in docs/legacy.md): MoE dispatch (FP8)
   and combine (BF16) all-to-all kernels; normal kernels reach 153-158 GB/s over NVLink (EP8) and
   43-58 GB/s over a 400 Gbit/s CX7 NIC (EP16-64), low-latency kernels 39-46 GB/s over RDMA at
   EP32-256. The low-latency kernels are "pure RDMA": no NVLink forwarding, every (token, expert)
   copy is its own message; at 128 tokens per rank on H800 (7168 hidden, top-8) dispatch takes
   155 / 173 / 192 / 194 us and combine 273 / 314 / 369 / 360 us at EP32 / 64 / 128 / 256.
.. [5] NVIDIA NCCL, src/graph/tuning.cc (commit 5067397, 2026-06-11): the tuner's cost model,
   ``time = latency + size / busBw`` per (algorithm, protocol), the least taken; a ring's
   latency is a base plus ``2 (n - 1)`` per-step hardware latencies (NVLink: LL 6.6 + 0.6 us
   per step, Simple 8.4 + 3.4 us per step), and Ring/LL runs at half the bus bandwidth.
"""

from __future__ import annotations

import numpy as np

#: Bus bandwidth of NCCL's low-latency (LL) protocol as a fraction of the bulk (Simple) one [-].
#: LL sends 8-byte lines of 4 data and 4 flag bytes, so half the wire carries data; NCCL's own
#: cost model takes a ring LL bus bandwidth of ``0.5`` times the link's (NVIDIA/nccl
#: src/graph/tuning.cc, ``busBw * .5`` for Ring/LL, commit 5067397 of 2026-06-11) [5]_.
LOW_LATENCY_BANDWIDTH_FRACTION = 0.5


def allreduce_time_s(message_bytes, ranks, link_bytes_per_s, latency_s, step_latency_s=0.0):
    """Ring all-reduce of one message over ``ranks`` ranks [s]: the faster of NCCL's two regimes.

    Parameters
    ----------
    message_bytes : [bytes] size of the reduced tensor on each rank.
    ranks : [-] ranks taking part; zero time for one rank.
    link_bytes_per_s : [bytes/s] achieved bus bandwidth of the bulk protocol (nccl-tests
        ``busbw`` at large messages).
    latency_s : [s] fixed cost of one call (alpha): the small-message latency.
    step_latency_s : [s] latency of one of the ring's ``2 (n - 1)`` steps in the bulk protocol
        (each step waits for the previous rank's chunk); 0 leaves the single-alpha model.

    Notes
    -----
    A ring all-reduce moves ``S = 2 (n - 1) / n m`` over each rank's link [2]_ [3]_. NCCL picks,
    per message, the protocol of least time [5]_: the low-latency one (LL: flag-synchronized
    lines, no per-step handshake, half the bandwidth) for small messages and the bulk one
    (Simple: full bandwidth, a handshake per ring step) for large:

    ``t = min(alpha + S / (f_LL beta), alpha + 2 (n - 1) alpha_step + S / beta)`` for ``n > 1``,
    else 0, with ``f_LL`` :data:`LOW_LATENCY_BANDWIDTH_FRACTION`. With ``alpha_step = 0`` the
    second term always wins and this is the plain ``alpha + S / beta``.
    """
    n = np.asarray(ranks, dtype=float)
    m = np.asarray(message_bytes, dtype=float)
    bus_bytes = 2.0 * (n - 1.0) / np.maximum(n, 1.0) * m
    low_latency = latency_s + bus_bytes / (LOW_LATENCY_BANDWIDTH_FRACTION * link_bytes_per_s)
    bulk = latency_s + 2.0 * (n - 1.0) * step_latency_s + bus_bytes / link_bytes_per_s
    return np.where(n > 1.0, np.minimum(low_latency, bulk), 0.0)


def allgather_time_s(message_bytes, ranks, link_bytes_per_s, latency_s):
    """Ring all-gather of a tensor of ``message_bytes`` (the gathered size) [s].

    Notes
    -----
    ``t = alpha + (n - 1) / n * m / beta`` for ``n > 1``, else 0 [2]_ [3]_.
    """
    n = np.asarray(ranks, dtype=float)
    m = np.asarray(message_bytes, dtype=float)
    t = latency_s + (n - 1.0) / np.maximum(n, 1.0) * m / link_bytes_per_s
    return np.where(n > 1.0, t, 0.0)


def alltoall_time_s(
    tokens_per_rank,
    token_bytes,
    top_k,
    ranks,
    ranks_per_node,
    scaleup_bytes_per_s,
    scaleout_bytes_per_s,
    latency_s,
    load_factor=1.0,
):
    """One MoE all-to-all (a dispatch or a combine) over ``ranks`` ranks [s].

    Parameters
    ----------
    tokens_per_rank : [tokens] tokens each rank routes.
    token_bytes : [bytes] one copy of one token's hidden state.
    top_k : [-] experts per token (copies to route).
    ranks : [-] ranks of the expert-parallel group; zero time for one rank.
    ranks_per_node : [-] ranks joined by the scale-up fabric.
    scaleup_bytes_per_s : [bytes/s] achieved one-direction scale-up bandwidth of a rank.
    scaleout_bytes_per_s : [bytes/s] achieved one-direction scale-out (NIC) bandwidth of a rank.
    latency_s : [s] fixed cost of one call (alpha).
    load_factor : [-] the busiest rank's traffic over the mean (expert imbalance: the rank that
        holds the hottest experts receives the most in a dispatch and sends the most in a
        combine, and the call ends when it is done); 1 for a balanced load.

    Notes
    -----
    These are DeepEP's normal (high-throughput) kernels, used in prefill. Experts are uniform
    over the ``n`` ranks in ``G = ceil(n / n_node)`` nodes. Over the NIC a
    token crosses once per remote node it has experts on and is forwarded inside that node over
    scale-up (DeepEP's NVLink forwarding [4]_), so a rank sends
    ``T b (G - 1) (1 - (1 - 1/G)^k)`` bytes over its NIC and ``T b k (n_node - 1) / n`` over
    scale-up. Both links run at once and the slower bounds the call:

    ``t = alpha + f max(S_up / beta_up, S_out / beta_out)`` with ``f`` the load factor.
    """
    n = np.asarray(ranks, dtype=float)
    t = np.asarray(tokens_per_rank, dtype=float) * token_bytes * load_factor
    n_node = np.minimum(n, ranks_per_node)
    nn = np.maximum(n, 1.0)
    g = np.ceil(nn / np.maximum(n_node, 1.0))
    remote_nodes = (g - 1.0) * (1.0 - (1.0 - 1.0 / g) ** top_k)
    up = t * top_k * (n_node - 1.0) / nn / scaleup_bytes_per_s
    out = t * remote_nodes / scaleout_bytes_per_s
    total = latency_s + np.maximum(up, out)
    return np.where(n > 1.0, total, 0.0)


def low_latency_alltoall_time_s(
    tokens_per_rank,
    token_bytes,
    top_k,
    ranks,
    ranks_per_node,
    scaleup_bytes_per_s,
    scaleout_bytes_per_s,
    latency_s,
    load_factor=1.0,
):
    """One MoE all-to-all of DeepEP's low-latency kernels (decode) over ``ranks`` ranks [s].

    Parameters
    ----------
    As :func:`alltoall_time_s`.

    Notes
    -----
    The low-latency kernels send every (token, expert) copy as its own RDMA message, with no
    per-node deduplication and no NVLink forwarding [4]_: of a rank's ``T k`` copies, those for
    experts on the other ``n - n_node`` ranks cross its NIC, those for the other ``n_node - 1``
    ranks of its node cross scale-up (the rank's own stay local):

    ``t = alpha + f max(T b k (n_node - 1) / n / beta_up, T b k (n - n_node) / n / beta_out)``.

    With a NIC at 0.85 of 50 GB/s and alpha = 20 us this gives 154 / 176 / 187 / 193 us for a
    128-token FP8 dispatch at EP32 / 64 / 128 / 256 and 279 / 322 / 344 / 355 us for the BF16
    combine, against DeepEP's measured 155 / 173 / 192 / 194 and 273 / 314 / 369 / 360 us [4]_.
    The normal kernels' formula (:func:`alltoall_time_s`), which sends a token once per remote
    node, would give 19-24% less at EP128 (155 and 281 us).
    """
    n = np.asarray(ranks, dtype=float)
    copies = np.asarray(tokens_per_rank, dtype=float) * token_bytes * top_k * load_factor
    n_node = np.minimum(n, ranks_per_node)
    nn = np.maximum(n, 1.0)
    up = copies * (n_node - 1.0) / nn / scaleup_bytes_per_s
    out = copies * (n - n_node) / nn / scaleout_bytes_per_s
    total = latency_s + np.maximum(up, out)
    return np.where(n > 1.0, total, 0.0)


def ring_link_bytes_per_s(ranks, ranks_per_node, scaleup_bytes_per_s, scaleout_bytes_per_s):
    """The bus bandwidth a ring over ``ranks`` ranks runs at [bytes/s].

    Parameters
    ----------
    ranks : [-] ``n``, ranks in the ring.
    ranks_per_node : [-] ``n_node``, ranks joined by the scale-up fabric (each with its own NIC).
    scaleup_bytes_per_s : [bytes/s] ``beta_up``, achieved one-direction scale-up bandwidth of a
        rank.
    scaleout_bytes_per_s : [bytes/s] ``beta_out``, achieved one-direction bandwidth of a rank's
        NIC.

    Notes
    -----
    Inside one node every hop is scale-up: ``beta = beta_up``. A ring that spans nodes is run by
    NCCL as several rings (channels) side by side, one per NIC (rail), each entering and leaving
    every node once [6]_: of a rank's bus bytes ``S`` a share ``1 / n_node`` crosses its NIC and
    the rest its scale-up links, both at once, so

    ``beta = 1 / max((1 - 1 / n_node) / beta_up, 1 / (n_node beta_out))`` for ``n > n_node``,

    about the node's summed NIC bandwidth ``n_node beta_out`` where the NICs are the slower
    path. NCCL's maintainers state this for nccl-tests' ring all-reduce over several nodes: its
    busbw "is going to reflect exactly what's going through the NICs", all of them (80 GB/s over
    four NICs: "20 GB/s per NIC"; 95.3 GB/s over four 200 Gbit/s NICs: "~24 GB/s per NIC"; with
    NDR 400 Gbit/s "you should see 46-48 GB/s per NIC") [6]_. A single ring through one NIC
    (``min(beta_up, beta_out)``) would be ``n_node`` times slower.

    References
    ----------
    .. [6] NVIDIA/nccl-tests issues #160 (S. Jeaugey, 2023-08-01), #252 (D. Addison,
       2024-09-24) and #290 (D. Addison, 2025-03-03), maintainers' comments on multi-node
       ``all_reduce_perf`` with ``NCCL_ALGO=RING``.
    """
    n = np.asarray(ranks, dtype=float)
    n_node = np.maximum(np.asarray(ranks_per_node, dtype=float), 1.0)
    nic_share = 1.0 / n_node
    spanning = 1.0 / np.maximum(
        (1.0 - nic_share) / scaleup_bytes_per_s, nic_share / scaleout_bytes_per_s
    )
    return np.where(n <= n_node, scaleup_bytes_per_s, spanning)
