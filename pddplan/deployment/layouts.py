"""Parallel layouts of an instance (tensor, data-parallel attention, expert parallel) and which
of them can run a model on a chip.
"""

from __future__ import annotations

from dataclasses import dataclass

from pddplan.deployment.models import ModelNumbers
from pddplan.spec import Chip

#: Bytes per hidden element of an MoE dispatch in FP8 with one FP32 scale per 128 elements
#: (DeepSeek-V3 technical report, section 3.3.2: 1x128 activation tiles; DeepEP dispatches FP8).
FP8_BLOCK_SCALED_BYTES = 1.0 + 4.0 / 128.0
#: Bytes per hidden element of an MoE combine (DeepEP combines in BF16).
COMBINE_BYTES = 2.0


@dataclass(frozen=True)
class Layout:
    """How an instance's chips share the model: tensor, data-parallel attention, expert parallel.

    ``tensor_parallel`` (``t``) slices attention and the other non-expert weights inside each of
    ``data_parallel`` (``d``) attention groups, so the instance has ``t d`` chips; the routed
    experts are spread over ``expert_parallel`` (``e``) ranks (``e = 1``: every expert is sliced
    over all chips, plain tensor parallelism). ``overlap`` runs two micro-batches whose
    communication hides under each other's compute; ``balancer`` places experts by load (EPLB).
    """

    tensor_parallel: int
    data_parallel: int = 1
    expert_parallel: int = 1
    overlap: bool = False
    balancer: bool = True

    @property
    def chips(self) -> int:
        return self.tensor_parallel * self.data_parallel

    @property
    def is_pure_tp(self) -> bool:
        return self.data_parallel == 1 and self.expert_parallel == 1 and not self.overlap

    @property
    def label(self) -> str:
        if self.is_pure_tp:
            return f"tp{self.tensor_parallel}"
        parts = [f"tp{self.tensor_parallel}"]
        if self.data_parallel > 1:
            parts.append(f"dp{self.data_parallel}")
        if self.expert_parallel > 1:
            parts.append(f"ep{self.expert_parallel}")
        if self.overlap:
            parts.append("tbo")
        return "-".join(parts)

    def problems(self, model: ModelNumbers) -> list[str]:
        """Why this layout cannot run ``model`` (empty when it can), one line each."""
        out: list[str] = []
        t, d, e = self.tensor_parallel, self.data_parallel, self.expert_parallel
        if min(t, d, e) < 1:
            return [f"layout tp={t} dp={d} ep={e}: every size must be at least 1"]
        n = self.chips
        if model.heads % t:
            out.append(f"tp={t} does not divide the model's {model.heads} attention heads")
        if e > 1 and not model.is_moe:
            out.append(f"ep={e} needs a mixture-of-experts model; {model.name} has no experts")
        if e > 1 and n % e:
            out.append(f"ep={e} does not divide the instance's {n} chips (tp={t} x dp={d})")
        if e > 1 and model.is_moe and model.experts % e:
            out.append(f"ep={e} does not divide the model's {model.experts} routed experts")
        return out


def layouts_for(chip: Chip, model: ModelNumbers, chips_per_instance: int) -> list[Layout]:
    """The valid layouts of ``chips_per_instance`` chips of ``chip`` for ``model``.

    Pure tensor parallelism when the heads allow it; for a mixture-of-experts model also expert
    parallelism over all chips with data-parallel attention (``tp = 1``, ``dp = ep = N``, as
    DeepSeek and SGLang serve), with and without two-batch overlap. An instance larger than a
    node needs a scale-out NIC in the chip profile. Layouts that do not fit in memory are kept:
    :attr:`Instance.fits` says which.
    """
    n = int(chips_per_instance)
    ds = chip.datasheet
    if n > ds.chips_per_node and ds.scaleout_bandwidth_gbit_per_s is None:
        return []
    out = [Layout(n)] if not Layout(n).problems(model) else []
    if model.is_moe and n > 1:
        for overlap in (False, True):
            lay = Layout(1, n, n, overlap=overlap)
            if not lay.problems(model):
                out.append(lay)
    return out
