"""Typed simulation figures: plain figures, their confidence half-widths, and per pipeline.

The engine reports a flat mapping of figures; :meth:`SimFigures.from_engine` reads it once, by
the names it knows (the pipelines of :mod:`pddplan.sim.policies`), so nothing downstream takes
keys apart. :meth:`SimFigures.flat` writes the same flat mapping back for the JSON document.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from pddplan.sim import policies
from pddplan.solver.problem import PERCENTILES as SLA_PERCENTILES

#: TTFT percentiles reported per pipeline: the SLA's (the closed forms' per-pipeline figures,
#: :meth:`pddplan.solver.Solver.ttft_by_pipeline`, are keyed ``p50``, ``p90``, ``p99`` by them).
PERCENTILES = tuple(round(100 * p) for p in SLA_PERCENTILES)
#: Every pipeline name the engine may report, in a fixed order.
PIPELINES = (*policies.PIPELINE_NAMES.values(), policies.P_RLD_WRONG)


def _pipe_key(name: str, what: str) -> str:
    return f"pipeline:{name}:{what}"


def _ci_key(key: str) -> str:
    return f"ci:{key}"


@dataclass(frozen=True)
class PipelineFigures:
    """One pipeline's share of the measured requests and its TTFT percentiles.

    ``ttft_s`` and ``ttft_ci95_s`` map a percentile (50, 90, 99) to seconds; the confidence
    half-width is nan where unknown (closed forms, too few samples).
    """

    share: float
    ttft_s: dict[int, float]
    ttft_ci95_s: dict[int, float] = field(default_factory=dict)

    def ci95_s(self, p: int) -> float:
        return self.ttft_ci95_s.get(p, math.nan)


@dataclass(frozen=True)
class SimFigures:
    """Figures of a simulation (or the closed forms' same figures).

    Attributes
    ----------
    scalars : figure name (unit-suffixed) -> value.
    ci95 : figure name -> batch-means 95% half-width (percentile figures only).
    pipelines : pipeline name -> :class:`PipelineFigures`, sorted by name.
    """

    scalars: dict[str, float]
    ci95: dict[str, float] = field(default_factory=dict)
    pipelines: dict[str, PipelineFigures] = field(default_factory=dict)

    @classmethod
    def from_engine(cls, flat: Mapping[str, float]) -> SimFigures:
        pipe_keys: set[str] = set()
        pipes: dict[str, PipelineFigures] = {}
        for name in PIPELINES:
            share_key = _pipe_key(name, "share")
            if share_key not in flat:
                continue
            ttft: dict[int, float] = {}
            ci: dict[int, float] = {}
            keys = [share_key]
            for p in PERCENTILES:
                k = _pipe_key(name, f"ttft_p{p}_s")
                ttft[p] = flat[k]
                keys.append(k)
                if _ci_key(k) in flat:
                    ci[p] = flat[_ci_key(k)]
                    keys.append(_ci_key(k))
            pipe_keys.update(keys)
            pipes[name] = PipelineFigures(flat[share_key], ttft, ci)
        scalars: dict[str, float] = {}
        ci95: dict[str, float] = {}
        for k, v in flat.items():
            if k in pipe_keys:
                continue
            if k.startswith("ci:") and k[3:] in flat:
                ci95[k[3:]] = v
            else:
                scalars[k] = v
        return cls(scalars, ci95, dict(sorted(pipes.items())))

    def __getitem__(self, key: str) -> float:
        return self.scalars[key]

    def __contains__(self, key: object) -> bool:
        return key in self.scalars

    def get(self, key: str, default: float = math.nan) -> float:
        return self.scalars.get(key, default)

    def flat(self, pipelines: bool = True) -> dict[str, float]:
        """The engine's flat mapping (``ci:`` and ``pipeline:`` keys), for the JSON document."""
        out: dict[str, float] = {}
        for k, v in self.scalars.items():
            out[k] = v
        for k, v in self.ci95.items():
            out[_ci_key(k)] = v
        for name, pf in self.pipelines.items():
            if pipelines:
                out[_pipe_key(name, "share")] = pf.share
            for p in PERCENTILES:
                k = _pipe_key(name, f"ttft_p{p}_s")
                if pipelines:
                    out[k] = pf.ttft_s[p]
                if p in pf.ttft_ci95_s:
                    out[_ci_key(k)] = pf.ttft_ci95_s[p]
        return out
