"""The scenario file: the profiles it names, roles, SLA, serving settings, limits, inventory,
revenue and uncertainty, and the defaults of its serving settings."""

from typing import Annotated, Any, Literal

from pydantic import Discriminator, Field, StrictBool, Tag, field_validator, model_validator
from typing_extensions import Self

from pddplan import defaults
from pddplan.limits import MAX_CHIPS_PER_KIND
from pddplan.spec.base import (
    Efficiency,
    Fraction,
    NonNegFloat,
    NonNegInt,
    PositiveFloat,
    PositiveUsd,
    Rate,
    Seconds,
    Source,
    Strict,
    Tokens,
)
from pddplan.spec.load import LoadProfile
from pddplan.spec.uncertainty import Uncertainty
from pddplan.spec.workloads import Workload

#: Parallel layouts of an instance the solver searches (see deployment.layouts_for).
LayoutKind = Literal["tp", "ep", "ep-tbo"]
LAYOUT_KINDS: tuple[LayoutKind, ...] = ("tp", "ep", "ep-tbo")
#: Searched unless a scenario lists others: tp, the layout the step model validates for.
DEFAULT_LAYOUTS: tuple[LayoutKind, ...] = ("tp",)


class RoleChoice(Strict):
    chips: list[str] = Field(
        min_length=1, max_length=1000, description="chip profile names, or ['*'] for all"
    )
    chips_per_instance: list[Annotated[int, Field(ge=1, le=4096)]] = Field(
        default_factory=lambda: [8],
        min_length=1,
        max_length=64,
        description="instance size options (chips per instance)",
    )
    layouts: list[LayoutKind] = Field(
        default_factory=lambda: list(DEFAULT_LAYOUTS),
        min_length=1,
        description="parallel layouts the solver may use: tp (tensor parallel), ep (expert "
        "parallel over all chips with data-parallel attention, MoE models), ep-tbo (ep with "
        "two-batch overlap); default tp only, since the ep step model is still 37-108% "
        "optimistic against published MoE throughputs (README, Validation)",
    )


class Roles(Strict):
    P: RoleChoice
    RLD: RoleChoice
    MD: RoleChoice


class Sla(Strict):
    ttft_p50_s: Seconds
    ttft_p90_s: Seconds
    ttft_p99_s: Seconds
    tpot_ms: Annotated[float, Field(ge=0.1, le=60_000)]

    @model_validator(mode="after")
    def _ordered(self) -> Self:
        if not self.ttft_p50_s <= self.ttft_p90_s <= self.ttft_p99_s:
            raise ValueError("TTFT targets must satisfy p50 <= p90 <= p99")
        return self


#: Chunked-prefill chunk [tokens] where a scenario or a command names none: the scenario's
#: ``serving.chunk_size_tokens``, the chunk of an engine a calibration measured and of an
#: offline-throughput estimate. A serving-engine setting (vLLM's ``max_num_batched_tokens``,
#: SGLang's ``--chunked-prefill-size``), not a physical constant: scenarios set their own.
DEFAULT_CHUNK_SIZE_TOKENS = defaults.CHUNK_SIZE_TOKENS
#: [tokens] A chunked-prefill chunk, wherever one is given (scenario, ``calibrate
#: --chunk-size``): below 16 tokens no engine chunks, and the prefill model's work grows with
#: the number of chunks (a chunk of 1 made a calibration run for minutes).
ChunkSizeTokens = Annotated[int, Field(ge=16, le=10**7)]
#: [-] Decode pools are sized so that a request finds every slot taken with at most this
#: probability (the level at which docs/simulate.md found the closed forms within 10%).
DEFAULT_DECODE_SLOT_WAIT_PROBABILITY_CAP = defaults.DECODE_SLOT_WAIT_PROBABILITY_CAP
#: Fraction of a chip's memory the engine may fill with weights and KV cache [-] where a
#: scenario or a command names none: vLLM's default ``gpu_memory_utilization`` (0.9); the rest
#: holds activations, the CUDA context and fragmentation.
DEFAULT_MEMORY_UTILIZATION = defaults.MEMORY_UTILIZATION
#: Points each hit-rate bin and each length distribution are discretized into [-] where a
#: scenario names none (``serving.hit_rate_points_per_bin``, ``serving.length_points``): a
#: numerical setting (more points, finer classes, slower solves), not a measured figure.
DEFAULT_HIT_RATE_POINTS_PER_BIN = 3
DEFAULT_LENGTH_POINTS = 3


class Serving(Strict):
    chunk_size_tokens: ChunkSizeTokens = DEFAULT_CHUNK_SIZE_TOKENS
    prefill_utilization_cap: Efficiency = 0.85
    decode_memory_utilization: Efficiency = DEFAULT_MEMORY_UTILIZATION
    link_utilization_cap: Efficiency = 0.8
    decode_slot_wait_probability_cap: Annotated[float, Field(gt=0, le=1)] = Field(
        default=DEFAULT_DECODE_SLOT_WAIT_PROBABILITY_CAP,
        description="MD and RLD are sized so that a request finds every decode slot taken "
        "(Erlang C over the pool's slots) with at most this probability; 1 sizes them for "
        "capacity only (docs/solve.md)",
    )
    handover: Literal["auto", "one-shot", "catch-up"] = "auto"
    catch_up_threshold_tokens: Tokens = 64
    anomalous_filter: StrictBool = True
    routing: Literal["optimize", "all-relay", "no-relay"] = "optimize"
    hit_rate_points_per_bin: Annotated[int, Field(ge=1, le=50)] = DEFAULT_HIT_RATE_POINTS_PER_BIN
    length_points: Annotated[int, Field(ge=1, le=50)] = DEFAULT_LENGTH_POINTS


class Baseline(Strict):
    chip: str
    chips_per_instance: Annotated[int, Field(ge=1, le=4096)] = 8
    layouts: list[LayoutKind] = Field(
        default_factory=lambda: list(DEFAULT_LAYOUTS),
        min_length=1,
        description="parallel layouts the baseline may use (as roles.*.layouts)",
    )


class Revenue(Strict):
    """API prices: the revenue side of the bathtub."""

    uncached_input_usd_per_mtok: Annotated[float, Field(ge=0, le=1e6)]
    cached_input_price_fraction: Fraction = Field(
        description="cached-token price as a fraction of the uncached price (10-25% today)"
    )
    output_usd_per_mtok: Annotated[float, Field(ge=0, le=1e6)]
    source: Source


class Limits(Strict):
    max_chips: dict[str, Annotated[int, Field(ge=1, le=MAX_CHIPS_PER_KIND)]] = Field(
        default_factory=dict
    )
    budget_usd_per_hour: PositiveUsd | None = None
    max_rate_rps: Rate | None = None


class Inventory(Strict):
    """Chips already owned, and how they and any further chips are priced."""

    owned: dict[str, NonNegInt] = Field(
        default_factory=dict, description="chip profile name -> chips owned; used first"
    )
    owned_cost: Literal["amortized", "sunk"] = Field(
        default="amortized",
        description="amortized: an owned chip costs its price.capex_usd spread over "
        "amortization_years (plus opex); sunk: only the opex",
    )
    amortization_years: PositiveFloat = Field(
        default=4.0, description="years over which a purchased chip's capex is spread"
    )
    opex_usd_per_chip_hour: NonNegFloat = Field(
        default=0.0, description="power, cooling and hosting of an owned or bought chip [USD/h]"
    )
    additional: Literal["rent", "buy"] = Field(
        default="rent",
        description="chips beyond the owned ones: rented (rental_usd_per_hour) or bought "
        "(amortized capex_usd plus opex; reported as new purchases)",
    )


class CacheTierChoice(Strict):
    """One tier of the P nodes' prefix cache and the capacities per node to evaluate."""

    profile: str = Field(description="a cache profile's name (profiles/caches/)")
    capacity_gb_per_node: list[Annotated[float, Field(ge=0, le=1e6)]] = Field(
        min_length=1,
        max_length=64,
        description="capacity options per P node [GB] (one number: that capacity, fixed)",
    )

    @field_validator("capacity_gb_per_node", mode="before")
    @classmethod
    def _one_capacity(cls, v: Any) -> Any:
        """A single capacity (``capacity_gb_per_node: 256``, or a sweep's point) is the one
        option."""
        return [v] if isinstance(v, int | float) and not isinstance(v, bool) else v


class CacheSessions(Strict):
    """The parametric session model: multi-turn conversations (each turn extends its
    conversation's context; conversations arrive, pause and end at random) drawn as a synthetic
    trace (:mod:`pddplan.trace.synth`) and replayed through LRU like a trace. The defaults are
    an agent-like workload (long first turns, short follow-ups, few new conversations); they
    are a shape, not a measurement (docs/cache.md)."""

    requests: Annotated[int, Field(ge=100, le=10**6)] = 10_000
    seed: Annotated[int, Field(ge=0, le=2**31)] = 0
    rate_rps: Annotated[float, Field(gt=0, le=1e6)] = 20.0
    active_conversations: Annotated[int, Field(ge=1, le=10**7)] = 2000
    new_conversation_probability: Fraction = 0.05
    first_turn_blocks_mean: Annotated[float, Field(ge=1, le=1e5)] = 60.0
    turn_blocks_mean: Annotated[float, Field(ge=1, le=1e5)] = 3.0
    max_blocks: Annotated[int, Field(ge=1, le=10**6)] = 160
    end_probability: Fraction = 0.03


class CacheHitRateTrace(Strict):
    """Hit rate against capacity: a request trace (or the session model's synthetic one)
    replayed through an LRU cache at each capacity (the replay of ``pddplan hitrate
    --cache-tokens``). Exactly one of ``trace`` and ``sessions``."""

    trace: str | None = Field(
        default=None, description="a JSONL trace with hash_ids, relative to the scenario file"
    )
    sessions: CacheSessions | None = Field(default=None, description="the session model")
    block_tokens: Annotated[int, Field(ge=1, le=10**6)] = defaults.TRACE_BLOCK_TOKENS
    warmup_s: Annotated[float, Field(ge=0, le=1e7)] = 0.0

    @model_validator(mode="after")
    def _one_source(self) -> Self:
        if (self.trace is None) == (self.sessions is None):
            raise ValueError("give either trace or sessions (exactly one)")
        return self


class CacheSection(Strict):
    """The P nodes' prefix cache: tiers, capacity options and where the hit rate comes from
    (docs/cache.md). Absent: hits are free in HBM and the workload's hit rate is taken as is."""

    tiers: list[CacheTierChoice] = Field(min_length=1, max_length=4)
    hit_rate: CacheHitRateTrace

    @model_validator(mode="after")
    def _distinct(self) -> Self:
        names = [t.profile for t in self.tiers]
        if len(set(names)) != len(names):
            raise ValueError(f"tiers: each cache profile at most once (got {', '.join(names)})")
        return self


class Scenario(Strict):
    kind: Literal["scenario"] = "scenario"
    name: str
    description: str = ""
    model: str
    workload: Annotated[
        Annotated[str, Tag("Name")] | Annotated[Workload, Tag("Workload")],
        Discriminator(
            lambda v: "Workload" if isinstance(v, dict | Workload) else "Name",
        ),
    ] = Field(description="a workload profile's name, or a workload given inline")
    link: str = Field(description="WAN link profile between datacenter A and B")
    rdma: str = Field(description="intra-datacenter RDMA link profile")
    roles: Roles
    baseline: Baseline | None = None
    sla: Sla
    serving: Serving = Field(default_factory=Serving)
    rate_rps: Rate | None = Field(default=None, description="target request rate")
    limits: Limits = Field(default_factory=Limits)
    inventory: Inventory = Field(default_factory=Inventory)
    revenue: Revenue | None = None
    overrides: dict[str, dict[str, dict[str, object]]] = Field(
        default_factory=dict,
        description="kind -> profile name -> fields to replace (deep-merged before validation)",
    )
    uncertainty: Uncertainty | None = Field(
        default=None, description="input distributions for `pddplan robust` (docs/robust.md)"
    )
    load: LoadProfile | None = Field(
        default=None,
        description="the load over a day and its growth, for `pddplan horizon` (docs/horizon.md)",
    )
    cache: CacheSection | None = Field(
        default=None,
        description="prefix-cache tiers of the P nodes, for `pddplan cache` (docs/cache.md)",
    )

    @property
    def horizon_months(self) -> int:
        """Months of the amortization horizon (``inventory.amortization_years``, rounded)."""
        return max(1, round(self.inventory.amortization_years * 12))

    @model_validator(mode="after")
    def _growth_within_horizon(self) -> Self:
        g = self.load.growth if self.load is not None else None
        n = g.path_months if g is not None else None
        if g is not None and n is not None and n > self.horizon_months:
            key = "monthly_multiplier" if g.monthly_multiplier is not None else "months"
            raise ValueError(
                f"load.growth.{key}: the growth path spans {n} months, longer than the "
                f"amortization horizon of {self.horizon_months} months "
                f"(inventory.amortization_years {self.inventory.amortization_years:g})"
            )
        if self.load is not None and self.load.elastic:
            roles = (self.roles.P, self.roles.RLD, self.roles.MD)
            used = {c for r in roles for c in r.chips}
            unused = [c for c in self.load.elastic if c not in used]
            if unused and "*" not in used:
                raise ValueError(
                    f"load.elastic: {', '.join(unused)} is no chip of the roles; they use "
                    f"{', '.join(sorted(used))}"
                )
        return self
