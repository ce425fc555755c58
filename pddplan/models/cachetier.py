"""Loading a prefix hit's KV from a cache tier, overlapped layer by layer with prefill compute.

Pure functions of numbers; they broadcast over numpy arrays.
"""

from __future__ import annotations

import numpy as np


def tier_load_s(hit_bytes, tier_shares, read_bytes_per_s):
    """Time to read a hit's KV from the tiers that hold it [s].

    Parameters
    ----------
    hit_bytes : [bytes] the cached prefix's KV, per request.
    tier_shares : [-] the share of a hit each tier holds (sums to 1 over the tiers).
    read_bytes_per_s : [bytes/s] each tier's read bandwidth to the node's GPUs.

    Notes
    -----
    ``t = sum_i s_i b / B_i``: the tiers are read one after the other (a conservative bound:
    a hierarchy that reads its tiers in parallel would take ``max_i s_i b / B_i``).
    """
    b = np.asarray(hit_bytes, dtype=float)
    per_byte_s = sum(s / bw for s, bw in zip(tier_shares, read_bytes_per_s, strict=True))
    return b * per_byte_s


def overlapped_prefill_s(compute_s, load_s, layers: int):
    """Prefill time when a hit's KV is loaded layer by layer under the prefill compute [s].

    Parameters
    ----------
    compute_s : [s] the prefill's compute time with the hit already in HBM.
    load_s : [s] the time to load the hit's KV from its tiers (:func:`tier_load_s`).
    layers : [-] transformer layers; the load of layer ``k+1`` runs under the compute of
        layer ``k``.

    Notes
    -----
    A two-stage pipeline over ``L`` equal layers, each loading ``l/L`` and computing ``c/L``:
    ``t = min(c, l)/L + max(c, l)`` (the first layer's load, or the last layer's compute, is not
    hidden). With ``l = 0`` this is ``c``. Layer-wise overlap of KV loading with prefill is what
    LMCache (layer-wise KV streaming), Mooncake (layer-wise prefill with KVCache loading,
    FAST'25 section 5) and SGLang HiCache (layer-wise overlapped loading, docs
    "HiCache System Design") implement.

    References
    ----------
    Qin et al., "Mooncake: Trading More Storage for Less Computation", FAST'25.
    """
    c = np.asarray(compute_s, dtype=float)
    ld = np.asarray(load_s, dtype=float)
    n = max(int(layers), 1)
    return np.minimum(c, ld) / n + np.maximum(c, ld)
