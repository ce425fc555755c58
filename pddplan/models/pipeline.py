"""The PDD pipeline per request class: relay occupancy, eager tokens and the two hand-over modes.

Pure functions of numbers; they broadcast over numpy arrays.

References
----------
.. [1] PDD brief, section 4: RLD decodes at once ("eager output tokens") while MD's KV copy is
   on the wire, then hands token IDs to MD, which rebuilds their KV with one parallel extend
   pass (One-Shot) or batch by batch while RLD keeps relaying (Catch-Up).
"""

from __future__ import annotations

import numpy as np

MAX_CATCH_UP_ROUNDS = 64


def relay_wait_s(wan_time_s, rdma_time_s):
    """Time RLD decodes before MD holds the KV [s]: ``max(t_wan - t_rdma, 0)``."""
    return np.maximum(np.asarray(wan_time_s, dtype=float) - rdma_time_s, 0.0)


def eager_tokens(relay_wait_s_, rld_tpot_s, output_tokens):
    """Tokens RLD emits before MD can take over, capped at the request's output [tokens].

    Notes
    -----
    One token per TPOT from the first step on: ``k = min(ceil(t_wait / tpot), L_out)``.
    """
    k = np.ceil(np.asarray(relay_wait_s_, dtype=float) / rld_tpot_s)
    return np.minimum(k, output_tokens)


def one_shot_handover(eager_tokens_, extend_fixed_s, extend_per_token_s, handover_transfer_s):
    """One-Shot hand-over: every eager token at once, then RLD is released.

    Parameters
    ----------
    eager_tokens_ : [tokens] tokens RLD generated.
    extend_fixed_s, extend_per_token_s : MD's extend pass ``e(k) = e_0 + e_1 k`` [s], [s/token].
    handover_transfer_s : [s] time to ship the token IDs to MD.

    Returns
    -------
    rld_extra_s : [s] RLD busy time after MD holds the KV.
    md_stall_s : [s] the visible pause while MD extends all ``k`` tokens.
    rounds : [-] extend passes (1).
    """
    k = np.asarray(eager_tokens_, dtype=float)
    stall = np.where(k > 0, extend_fixed_s + extend_per_token_s * k, 0.0)
    rld_extra = np.where(k > 0, handover_transfer_s, 0.0)
    return rld_extra, stall, np.where(k > 0, 1.0, 0.0)


def catch_up_gain(extend_s_at_threshold, threshold_tokens, rld_tpot_s):
    """Tokens a Catch-Up round takes off the backlog [tokens]: MD extends ``T`` tokens in
    ``e(T)`` while RLD makes ``e(T) / tpot`` more. Catch-Up converges only where it is above 0
    (:func:`catch_up_converges`). Elementwise."""
    return threshold_tokens - extend_s_at_threshold / rld_tpot_s


def catch_up_converges(
    extend_s_at_threshold: float, threshold_tokens: float, rld_tpot_s: float
) -> bool:
    """Whether Catch-Up converges: MD extends ``T`` tokens faster than RLD makes them
    (:func:`catch_up_gain` above 0). The one rule of :func:`catch_up_handover` and the
    simulator's choice of hand-over."""
    return bool(catch_up_gain(extend_s_at_threshold, threshold_tokens, rld_tpot_s) > 0)


def catch_up_handover(
    eager_tokens_,
    threshold_tokens,
    extend_fixed_s,
    extend_per_token_s,
    rld_tpot_s,
    handover_transfer_s,
):
    """Catch-Up hand-over: MD ingests batches of at most ``threshold`` tokens while RLD relays.

    Returns
    -------
    rld_extra_s : [s] RLD busy time after MD holds the KV (it keeps relaying until caught up).
    md_stall_s : [s] the largest single pause MD shows (its last, small extend).
    rounds : [-] extend passes.

    Notes
    -----
    Backlog ``k_0 = k``. While ``k_r > T``: MD extends ``T`` tokens in ``e(T)`` while RLD adds
    ``e(T) / tpot`` more, so ``k_{r+1} = k_r - T + e(T) / tpot``. The final backlog goes
    one-shot. It converges only when ``e(T) < T tpot``; otherwise the hand-over falls back to
    One-Shot of the initial backlog (returned as such).
    """
    k = np.asarray(eager_tokens_, dtype=float)
    t = float(threshold_tokens)
    e_t = extend_fixed_s + extend_per_token_s * t
    gain = catch_up_gain(e_t, t, rld_tpot_s)  # backlog reduction per round
    if np.ndim(gain):  # several MD options at once (extend terms as arrays): each its own case
        shot = one_shot_handover(k, extend_fixed_s, extend_per_token_s, handover_transfer_s)
        conv = gain > 0
        with np.errstate(divide="ignore", invalid="ignore"):  # the diverging ones: not taken
            catch = _catch_up(
                k, t, extend_fixed_s, extend_per_token_s, e_t, gain, handover_transfer_s
            )
        return tuple(np.where(conv, c, o) for c, o in zip(catch, shot, strict=True))
    if gain <= 0:
        return one_shot_handover(k, extend_fixed_s, extend_per_token_s, handover_transfer_s)
    return _catch_up(k, t, extend_fixed_s, extend_per_token_s, e_t, gain, handover_transfer_s)


def _catch_up(k, t, extend_fixed_s, extend_per_token_s, e_t, gain, handover_transfer_s):
    """:func:`catch_up_handover` where it converges (``gain > 0``)."""
    rounds_full = np.where(k > t, np.ceil((k - t) / gain), 0.0)
    rounds_full = np.minimum(rounds_full, MAX_CATCH_UP_ROUNDS)
    backlog = np.maximum(k - rounds_full * gain, 0.0)
    final_stall = np.where(backlog > 0, extend_fixed_s + extend_per_token_s * backlog, 0.0)
    rld_extra = rounds_full * (e_t + handover_transfer_s) + np.where(
        k > 0, handover_transfer_s, 0.0
    )
    stall = final_stall  # each earlier round shows at most e(T) <= the final one-shot's stall
    rounds = rounds_full + (backlog > 0)
    return rld_extra, stall, rounds


def rld_output_share(eager_tokens_, output_tokens, weights):
    """Share of all output tokens that RLD generates [-]: ``sum w k / sum w L_out``."""
    w = np.asarray(weights, dtype=float)
    return float(np.sum(w * eager_tokens_) / np.sum(w * np.asarray(output_tokens, dtype=float)))


def little_concurrency(rate_per_s, time_in_system_s):
    """Mean number in service by Little's law [-]: ``N = lambda T``."""
    return np.asarray(rate_per_s, dtype=float) * time_in_system_s
