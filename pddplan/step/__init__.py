"""``pddplan step``: one instance's prefill and decode step times under a parallel layout.

The library half of the command: it binds a chip, a model and a layout to an
:class:`~pddplan.deployment.Instance` and asks it for one prefill pass of ``B`` sequences of
``L`` uncached tokens and one decode step of ``B`` sequences at a context of ``C`` tokens, with
the part (compute, memory, communication, latency) that bounds each.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from pddplan.deployment import Instance, Layout, model_numbers
from pddplan.errors import UsageError
from pddplan.models.architecture import causal_context_sum_tokens
from pddplan.results import SCHEMA_VERSION, Report, Section

PARTS = ("compute", "memory", "communication", "latency")


@dataclass(frozen=True)
class StepResult:
    """Prefill and decode step of one instance; times in seconds, rates per chip."""

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

    def rows(self) -> list[dict[str, Any]]:
        """One row per phase, for table, CSV and markdown."""
        return [
            {
                "phase": "prefill",
                "time_s": self.prefill_s,
                "tokens_per_s_per_chip": self.prefill_tokens_per_s_per_chip,
                "bound": self.prefill_bound,
                **{f"{k}_s": v for k, v in self.prefill_parts_s.items()},
            },
            {
                "phase": "decode",
                "time_s": self.decode_step_s,
                "tokens_per_s_per_chip": self.decode_tokens_per_s_per_chip,
                "bound": self.decode_bound,
                **{f"{k}_s": v for k, v in self.decode_parts_s.items()},
            },
        ]

    def to_json(self) -> dict[str, Any]:
        doc = {"schema_version": SCHEMA_VERSION}
        doc.update(asdict(self))
        return doc

    def report(self) -> Report:
        title = (
            f"{self.model} on {self.chips} x {self.chip} ({self.layout}), batch {self.batch}, "
            f"input {self.input_tokens}, context {self.context_tokens}"
        )
        notes = [
            f"decode tokens per step (multi-token prediction): {self.decode_tokens_per_step:g}"
        ]
        notes.append(f"largest batch in memory at the context: {self.max_batch_in_memory}")
        warnings = [] if self.fits else [f"does not fit: {self.why_not}"]
        return Report(
            title=title,
            sections=[Section("step", self.rows())],
            payload=self.to_json(),
            notes=notes,
            warnings=warnings,
        )


def _bound(parts: dict[str, float]) -> str:
    return max(PARTS, key=lambda k: parts[k])


def make_layout(chips_tp: int, ep: int | None, dp: int | None, overlap: bool) -> Layout:
    """The layout of ``--tp T [--ep E] [--dp D]``: ``T D`` chips; EP over ``E`` of them."""
    d = dp or 1
    e = ep or 1
    return Layout(chips_tp, d, e, overlap=overlap)


def step(
    chip: Any,
    model: Any,
    layout: Layout,
    batch: int,
    input_tokens: int,
    context_tokens: int,
    memory_utilization: float = 0.9,
) -> StepResult:
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
    UsageError : a layout that does not divide the chips, the experts or the heads, or EP on a
        model without experts.
    """
    if batch < 1 or input_tokens < 1 or context_tokens < 1:
        raise UsageError(
            f"--batch ({batch}), --input-tokens ({input_tokens}) and --context-tokens "
            f"({context_tokens}) must be at least 1"
        )
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
    mem_b = inst.max_batch_memory(c) if not why else 0
    if not why and not fits:
        why = (
            f"weights take {inst.weight_bytes_per_chip / 1e9:.1f} GB per chip, more than "
            f"{memory_utilization:.0%} of {inst.memory_bytes_per_chip / 1e9:.0f} GB"
        )
    elif fits and mem_b < batch:
        fits = False
        why = f"KV of {batch} sequences at {context_tokens} tokens does not fit ({mem_b} do)"
    return StepResult(
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
