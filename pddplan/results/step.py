"""The result of ``step``: one instance's prefill and decode step, and what bounds each."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from pddplan.results.base import SCHEMA_VERSION, Report, Result, Row, Section

if TYPE_CHECKING:
    from pddplan.step import StepTimes


@dataclass(frozen=True)
class StepResult(Result):
    """The step times of one instance (:class:`pddplan.step.StepTimes`), arranged for the
    renderers.

    Attributes
    ----------
    times : prefill and decode step of the instance; times in seconds, rates per chip.
    """

    times: StepTimes

    def __getattr__(self, name: str) -> Any:
        # the figures read as the result's own (``res.prefill_s``)
        if name == "times":
            raise AttributeError(name)
        return getattr(self.times, name)

    def rows(self, section: str | None = None) -> list[Row]:
        """One row per phase, for table, CSV and markdown. A decode step's time is per step;
        a model with multi-token prediction emits more than one token a step, and the time per
        output token (what a TPOT target and the solver's sizing read) is the step's over its
        tokens: both are given, in every format."""
        t = self.times
        return [
            {
                "phase": "prefill",
                "time_s": t.prefill_s,
                "tokens_per_step": None,
                "time_per_output_token_s": None,
                "tokens_per_s_per_chip": t.prefill_tokens_per_s_per_chip,
                "bound": t.prefill_bound,
                **{f"{k}_s": v for k, v in t.prefill_parts_s.items()},
            },
            {
                "phase": "decode",
                "time_s": t.decode_step_s,
                "tokens_per_step": t.decode_tokens_per_step,
                "time_per_output_token_s": t.decode_step_s / t.decode_tokens_per_step,
                "tokens_per_s_per_chip": t.decode_tokens_per_s_per_chip,
                "bound": t.decode_bound,
                **{f"{k}_s": v for k, v in t.decode_parts_s.items()},
            },
        ]

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"schema_version": SCHEMA_VERSION}
        doc.update(asdict(self.times))
        return doc

    def report(self) -> Report:
        t = self.times
        title = (
            f"{t.model} on {t.chips} x {t.chip} ({t.layout}), batch {t.batch}, "
            f"input {t.input_tokens}, context {t.context_tokens}"
        )
        notes = [
            f"decode tokens per step (multi-token prediction): {t.decode_tokens_per_step:g}",
            f"largest batch in memory at the context: {t.max_batch_in_memory}",
        ]
        warnings = [] if t.fits else [f"does not fit: {t.why_not}"]
        return Report(
            title=title,
            sections=[Section("step", self.rows())],
            payload=self.to_json(),
            notes=notes,
            warnings=warnings,
        )
