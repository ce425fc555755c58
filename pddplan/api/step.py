"""``step``: one instance's prefill and decode step times under a parallel layout."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pddplan.results.step import StepResult


def step(
    *,
    model: str,
    chip: str,
    tp: int,
    batch: int,
    input_tokens: int,
    context_tokens: int,
    ep: int | None = None,
    dp: int | None = None,
    overlap: bool = False,
    overrides: Mapping[str, Any] | None = None,
    profiles: Sequence[str | os.PathLike[str]] | None = None,
) -> StepResult:
    """Prefill time of ``batch`` sequences of ``input_tokens`` uncached tokens and the decode
    step time of ``batch`` sequences at ``context_tokens`` on one instance of ``tp x dp`` chips.

    Parameters
    ----------
    model, chip : profile names.
    tp : [-] tensor-parallel width of attention (per DP group).
    batch : [-] sequences in the step.
    input_tokens : [tokens] uncached tokens per sequence to prefill.
    context_tokens : [tokens] context per sequence in the decode step.
    ep : [-] expert-parallel ranks (mixture-of-experts models only).
    dp : [-] data-parallel attention groups.
    overlap : two-batch overlap of communication and compute.
    overrides : ``{"model.dtypes.weights": "bf16", "chip.derates.compute_efficiency": 0.7}``: keys
        of the model or chip profile set for this call, validated as the file would be
        (:func:`pddplan.io.overrides.profiles_with_overrides`).
    profiles : extra profile directories.

    Raises
    ------
    OptionError : a number that is not a whole number in its range (a batch, input or context
        below 1, a layout of more than ``limits.MAX_LAYOUT_CHIPS`` chips).
    UsageError : a layout that does not divide the chips, the experts or the heads.
    OverrideError : an override PATH that is not a key of the model or chip profile, or a value
        the profile's schema rejects.
    """
    from pddplan.api.options import StepOptions, validate_args
    from pddplan.io.loader import Registry
    from pddplan.io.overrides import profiles_with_overrides
    from pddplan.results.step import StepResult
    from pddplan.step import make_layout
    from pddplan.step import step as step_times

    o = validate_args(StepOptions, locals())
    reg = Registry.default([Path(p) for p in profiles or ()])
    specs = profiles_with_overrides(reg, {"model": model, "chip": chip}, overrides)
    times = step_times(
        specs["chip"],
        specs["model"],
        make_layout(o.tp, o.ep, o.dp, o.overlap),
        o.batch,
        o.input_tokens,
        o.context_tokens,
    )
    return StepResult(times)
