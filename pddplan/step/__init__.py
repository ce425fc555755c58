"""``pddplan step``: one instance's prefill and decode step times under a parallel layout.

The library half of the command: it binds a chip, a model and a layout to an
:class:`~pddplan.deployment.Instance` and asks it for one prefill pass of ``B`` sequences of
``L`` uncached tokens and one decode step of ``B`` sequences at a context of ``C`` tokens, with
the part (compute, memory, communication, latency) that bounds each.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pddplan import defaults, limits
from pddplan.deployment import Instance, Layout, model_numbers
from pddplan.errors import OptionError, UsageError
from pddplan.models.architecture import causal_context_sum_tokens

PARTS = ("compute", "memory", "communication", "latency")


@dataclass(frozen=True)
class StepTimes:
    """Prefill and decode step of one instance; times in seconds, rates per chip
    (:class:`pddplan.results.step.StepResult` renders it)."""

    model: str
    chip: str
    layout: str
    chips: int
    tensor_parallel: int
    data_parallel: int
    expert_parallel: int
    batch: int
    input_tokens: int
    context_tokens: int
    fits: bool
    why_not: str
    prefill_s: float
    prefill_bound: str
    prefill_tokens_per_s_per_chip: float
    decode_step_s: float
    decode_tokens_per_step: float
    decode_bound: str
    decode_tokens_per_s_per_chip: float
    max_batch_in_memory: int
    prefill_parts_s: dict[str, float]
    decode_parts_s: dict[str, float]


def _bound(parts: dict[str, float]) -> str:
    return max(PARTS, key=lambda k: parts[k])


#: Most chips one layout's width, expert ranks or data-parallel groups may count [-].
MAX_LAYOUT_CHIPS = limits.MAX_LAYOUT_CHIPS


def make_layout(chips_tp: int, ep: int | None, dp: int | None, overlap: bool) -> Layout:
    """The layout of tensor-parallel width ``T``, ``D`` data-parallel groups (``T D`` chips) and
    EP over ``E`` of them."""
    for option, value in (("tp", chips_tp), ("ep", ep), ("dp", dp)):
        if value is not None and not 1 <= value <= MAX_LAYOUT_CHIPS:
            raise OptionError(
                option, f"must be a whole number from 1 to {MAX_LAYOUT_CHIPS:,}, not {value}"
            )
    d = dp or 1
    e = ep or 1
    if chips_tp * d > MAX_LAYOUT_CHIPS:  # each is within; their product is the layout's chips
        raise OptionError(
            "dp",
            f"must keep the layout within {MAX_LAYOUT_CHIPS:,} chips: tp {chips_tp} x dp {d} "
            f"= {chips_tp * d:,}",
        )
    return Layout(chips_tp, d, e, overlap=overlap)


def step(
    chip: Any,
    model: Any,
    layout: Layout,
    batch: int,
    input_tokens: int,
    context_tokens: int,
    memory_utilization: float = defaults.MEMORY_UTILIZATION,
) -> StepTimes:
    """Prefill and decode step of ``batch`` sequences on one instance.

    Parameters
    ----------
    chip, model : the :class:`~pddplan.spec.Chip` and :class:`~pddplan.spec.Model` specs.
    layout : how the chips share the model.
    batch : [-] sequences ``B``.
    input_tokens : [tokens] ``L``, uncached tokens of each sequence to prefill.
    context_tokens : [tokens] ``C``, context of each sequence in the decode step.

    Raises
    ------
    OptionError : a batch, input or context below 1.
    UsageError : a layout that does not divide the chips, the experts or the heads, or EP on a
        model without experts.
    """
    for option, value in (
        ("batch", batch),
        ("input_tokens", input_tokens),
        ("context_tokens", context_tokens),
    ):
        if value < 1:
            raise OptionError(option, f"must be at least 1, not {value}")
    m = model_numbers(model)
    probs = layout.problems(m)
    if probs:
        raise UsageError("; ".join(probs))
    inst = Instance(chip, m, layout.chips, memory_utilization, layout)
    b, li, c = float(batch), float(input_tokens), float(context_tokens)
    pre = inst.step_parts(b * li, b, b * causal_context_sum_tokens(li, 0.0), b * li)
    dec = inst.decode_parts(b, c)
    pre_parts = {k: float(pre[f"{k}_s"]) for k in PARTS}
    dec_parts = {k: float(dec[f"{k}_s"]) for k in PARTS}
    pre_s = float(pre["total_s"])
    dec_s = float(dec["total_s"])
    per_step = m.tokens_per_decode_step
    why = inst.why_not()
    fits = inst.fits
    mem_b = int(inst.kv_batch_capacity(c)) if not why else 0
    if not why and not fits:
        why = (
            f"weights take {inst.weight_bytes_per_chip / 1e9:.1f} GB per chip, more than "
            f"{memory_utilization:.0%} of {inst.memory_bytes_per_chip / 1e9:.0f} GB"
        )
    elif fits and mem_b < batch:
        fits = False
        why = f"KV of {batch} sequences at {context_tokens} tokens does not fit ({mem_b} do)"
    return StepTimes(
        model=m.name,
        chip=chip.name,
        layout=layout.label,
        chips=layout.chips,
        tensor_parallel=layout.tensor_parallel,
        data_parallel=layout.data_parallel,
        expert_parallel=layout.expert_parallel,
        batch=batch,
        input_tokens=input_tokens,
        context_tokens=context_tokens,
        fits=fits,
        why_not=why,
        prefill_s=pre_s,
        prefill_bound=_bound(pre_parts),
        prefill_tokens_per_s_per_chip=b * li / pre_s / layout.chips,
        decode_step_s=dec_s,
        decode_tokens_per_step=per_step,
        decode_bound=_bound(dec_parts),
        decode_tokens_per_s_per_chip=b * per_step / dec_s / layout.chips,
        max_batch_in_memory=mem_b,
        prefill_parts_s=pre_parts,
        decode_parts_s=dec_parts,
    )
