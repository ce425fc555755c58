"""Routing policies and hand-over modes of the simulated deployment.

Pipelines (the brief, section 5): P-MD for high-hit requests, P-RLD-MD for low-hit (relayed)
ones, and P-RLD only for filtered anomalous traffic. The ``p-rld`` policy is the excluded one:
relayed requests are finished on RLD instead of being handed over to MD, which the brief says
overloads RLD; it exists to show that.

Hand-over modes (the brief, section 4): One-Shot hands every eager token to MD at once; Catch-Up
hands batches of at most ``catch_up_threshold_tokens`` while RLD keeps relaying; ``adaptive``
switches between the two by RLD's load at the moment of the hand-over, as the brief describes.
"""

from __future__ import annotations

from pddplan import timing
from pddplan.errors import OptionError
from pddplan.timing import P_MD as P_MD
from pddplan.timing import P_RLD_ANOMALOUS as P_RLD_ANOMALOUS
from pddplan.timing import P_RLD_MD as P_RLD_MD
from pddplan.timing import pipeline_names

POLICIES = ("allowed", "p-rld")
HANDOVER_CHOICES = ("plan", "one-shot", "catch-up", "adaptive")

#: Pipeline ids are the timeline's (:data:`pddplan.timing.P_MD`, ``P_RLD_MD``,
#: ``P_RLD_ANOMALOUS``), named as the planner names them across datacenters.
PIPELINE_NAMES = pipeline_names(cross_dc=True)
#: Name of the relayed pipeline under the excluded policy.
P_RLD_WRONG = "P-RLD (low-hit, p-rld policy)"

#: ``adaptive`` hand-over: Catch-Up while RLD's slots are less than this full, else One-Shot.
#: An illustrative switch point (the brief gives none): Catch-Up keeps RLD busy longer, so it is
#: used only while RLD has room.
ADAPTIVE_RLD_OCCUPANCY = 0.5


def check_policy(policy: str) -> str:
    if policy not in POLICIES:
        raise OptionError("policy", f"must be one of {', '.join(POLICIES)}, not {policy!r}")
    return policy


def resolve_handover(choice: str, plan_handover: str) -> str:
    """The hand-over mode to simulate: ``one-shot``, ``catch-up`` or ``adaptive``."""
    if choice not in HANDOVER_CHOICES:
        raise OptionError(
            "handover", f"must be one of {', '.join(HANDOVER_CHOICES)}, not {choice!r}"
        )
    if choice == "plan":
        return timing.handover_mode(plan_handover)
    return choice


def catch_up_now(
    mode: str, backlog_tokens: float, threshold_tokens: int, rld_occupancy: float
) -> bool:
    """Whether a hand-over of ``backlog_tokens`` should go Catch-Up (else One-Shot).

    Parameters
    ----------
    mode : "one-shot", "catch-up" or "adaptive".
    backlog_tokens : [tokens] eager tokens not yet handed over.
    threshold_tokens : [tokens] the Catch-Up batch size.
    rld_occupancy : [-] RLD's used slots over its slots, now.
    """
    if backlog_tokens <= threshold_tokens or mode == "one-shot":
        return False
    if mode == "adaptive":
        return rld_occupancy < ADAPTIVE_RLD_OCCUPANCY
    return True
