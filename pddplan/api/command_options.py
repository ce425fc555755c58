"""The option models of every command but ``solve``, made where a command asks for one, so that
a solve's start does not make their classes (:mod:`pddplan.api.options`: ``solve``'s model, the
checks, and these by name; :mod:`pddplan.api.option_base`: the base model and the shared
fields).

As in :mod:`pddplan.api.options`, annotations are evaluated as the classes are made (no ``from
__future__ import annotations``).
"""

from collections.abc import Sequence
from typing import Annotated, Literal

from pydantic import Field

from pddplan import defaults, limits
from pddplan.api.option_base import (
    BudgetUsdPerHour,
    Count,
    Fraction,
    Options,
    PositiveTokens,
    RateRps,
    Seed,
    Workers,
)
from pddplan.spec.scenario_spec import ChunkSizeTokens


class CacheOptions(Options):
    rate_rps: RateRps | None = None
    max_bcr: bool = False


class ParetoOptions(Options):
    points: Annotated[int, Field(ge=2)] = 10
    min_rate_rps: RateRps | None = None
    max_rate_rps: RateRps | None = None
    baselines: bool = True


class BathtubOptions(Options):
    step: Annotated[float, Field(ge=0.001, le=0.1)] = 0.01
    tolerance: Fraction = 0.02
    reprovision: bool = True


class SweepOptions(Options):
    baselines: bool = True
    jobs: Workers = 1
    executor: str = "local"
    scheduler: str | None = None


class RobustOptions(Options):
    samples: Annotated[int, Field(ge=2)] = defaults.ROBUST_SAMPLES
    confidence: Annotated[float, Field(gt=0.0, lt=1.0)] = defaults.ROBUST_CONFIDENCE
    seed: Seed | None = 0
    executor: str = "local"
    scheduler: str | None = None
    jobs: Workers = 1
    rate_rps: RateRps | None = None


class BreakevenOptions(Options):
    param: str | None = None  # None: the first MD chip's price (whatif.default_breakeven_param)
    against: Literal["same-dc", "no-relay", "no-relay-rld"] = "same-dc"
    lo: Annotated[float, Field(ge=-1e12, le=1e12)] | None = None
    hi: Annotated[float, Field(ge=-1e12, le=1e12)] | None = None
    tolerance: Annotated[float, Field(ge=1e-9, le=1.0)] = defaults.BREAKEVEN_TOLERANCE


class TopologyBreakevenOptions(BreakevenOptions):
    #: the cost a topology's plan is compared with (None: where its structure changes)
    against_cost_usd_per_hour: Annotated[float, Field(gt=0.0, le=1e9)] | None = None


class TopologyOptions(Options):
    resilient: bool = False
    simulate: Count | None = None  # requests per pipeline
    seed: Seed = 0
    executor: str = "local"
    jobs: Workers = 1
    scheduler: str | None = None
    budget_usd_per_hour: BudgetUsdPerHour | None = None
    max_bcr: bool = False


class ReportOptions(Options):
    rate_rps: RateRps | None = None
    bandwidths_gbit_per_s: Sequence[float] | None = None
    hit_rate_shifts: Sequence[float] = (-0.1, -0.05, 0.0, 0.05)


class RankChipsOptions(Options):
    model: str | None = None
    workload: str | None = None
    reference: str = defaults.REFERENCE_CHIP


class SimulateOptions(Options):
    requests: Count = 20_000
    seed: Seed = 0
    rate_rps: RateRps | None = None
    policy: str = "allowed"
    handover: str = "plan"
    sample: Literal["classes", "workload"] = "classes"
    warmup_fraction: Annotated[float, Field(ge=0.0, lt=1.0)] = defaults.WARMUP_FRACTION
    block_tokens: PositiveTokens = defaults.TRACE_BLOCK_TOKENS  # a trace's, as hitrate's


class HitrateOptions(Options):
    block_tokens: PositiveTokens = defaults.TRACE_BLOCK_TOKENS
    warmup_s: Annotated[float, Field(ge=0.0)] = 0.0
    anomalous_input_tokens: PositiveTokens = defaults.ANOMALOUS_INPUT_TOKENS
    anomalous_output_tokens: PositiveTokens = defaults.ANOMALOUS_OUTPUT_TOKENS
    max_points: Annotated[int, Field(ge=2)] = defaults.WORKLOAD_MAX_POINTS
    skip_bad_lines: bool = False
    trace_format: str = "auto"
    jobs: Annotated[int, Field(ge=0, le=1024)] = 0  # 0: as many as the CPUs allow, at most 4


class CalibrateOptions(Options):
    chunk_size_tokens: ChunkSizeTokens = defaults.CHUNK_SIZE_TOKENS


#: [-] a layout's chips, expert ranks or data-parallel groups (``step``)
LayoutChips = Annotated[int, Field(ge=1, le=limits.MAX_LAYOUT_CHIPS)]


class StepOptions(Options):
    """``step``'s numbers (its profiles are named, and checked by the registry)."""

    tp: LayoutChips
    batch: Count
    input_tokens: PositiveTokens
    context_tokens: PositiveTokens
    ep: LayoutChips | None = None
    dp: LayoutChips | None = None
    overlap: bool = False


class TransferOptions(Options):
    payload_bytes: list[Annotated[float, Field(ge=1.0, le=1e15)]] | None = None
    concurrent: Annotated[int, Field(ge=1, le=10**6)] = 1
