"""Binds a chip, a model's numbers and a layout into an :class:`Instance`: its peaks, memory,
the numbers a layout step takes, and the step, prefill and decode times built on them.
"""

from __future__ import annotations

import atexit
import dataclasses
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from pddplan import units
from pddplan.deployment.keys import HashedKey
from pddplan.deployment.layouts import COMBINE_BYTES, FP8_BLOCK_SCALED_BYTES, Layout
from pddplan.deployment.models import ModelNumbers
from pddplan.io import physics_disk
from pddplan.io.memo import IdentityMemo
from pddplan.models import compute, memory
from pddplan.spec import DEFAULT_CHUNK_SIZE_TOKENS, DEFAULT_MEMORY_UTILIZATION, Chip, ChipDerates

#: Extend-pass chunk: MD extends all handed-over tokens in one step.
EXTEND_CHUNK_TOKENS = 1 << 30


def bf16_grouped_curve(d: ChipDerates) -> tuple[float | None, float | None]:
    """The BF16 grouped-GEMM curve of a chip's derates: ``(eta_max, half-saturation tokens)``.

    The profile's ``bf16_grouped_gemm_*`` where given. Otherwise, where the chip has an FP8
    grouped curve, an estimate from it: the same half-saturation in tokens per expert, because an
    expert GEMM turns from weight-read to compute bound at ``m* = P b / (2 B)`` tokens and halving
    the peak ``P`` doubles the bytes per weight ``b`` (the ridge stays put); and the BF16 large-GEMM
    efficiency scaled by the grouped-to-dense ratio the FP8 kernels show
    (``eta_bf16 * eta_fp8_grouped / eta_fp8``). ``(None, None)`` without either: the linear curve.
    """
    if d.bf16_grouped_gemm_efficiency is not None:
        return d.bf16_grouped_gemm_efficiency, d.bf16_grouped_gemm_half_saturation_tokens
    if d.fp8_grouped_gemm_efficiency is None:
        return None, None
    fp8_dense = d.fp8_compute_efficiency or d.compute_efficiency
    eta = d.compute_efficiency * d.fp8_grouped_gemm_efficiency / fp8_dense
    return eta, d.fp8_grouped_gemm_half_saturation_tokens


#: [-] The largest decode batch a search considers for one instance (2^20 sequences).
MAX_SEARCH_BATCH = 1 << 20


@dataclass(frozen=True)
class Instance:
    """One serving instance: ``tensor_parallel`` chips of one kind running one model replica.

    ``tensor_parallel`` is the number of chips in the instance; ``layout`` says how they share
    the model (default: pure tensor parallelism over all of them).
    """

    chip: Chip
    model: ModelNumbers
    tensor_parallel: int
    memory_utilization: float = DEFAULT_MEMORY_UTILIZATION
    layout: Layout | None = None

    def __post_init__(self) -> None:
        if self.layout is None:
            object.__setattr__(self, "layout", Layout(self.tensor_parallel))
        elif self.lay.chips != self.tensor_parallel:
            raise ValueError(
                f"layout {self.lay.label} has {self.lay.chips} chips, "
                f"the instance {self.tensor_parallel}"
            )

    @property
    def lay(self) -> Layout:
        assert self.layout is not None
        return self.layout

    @property
    def label(self) -> str:
        base = f"{self.chip.name}x{self.tensor_parallel}"
        return base if self.lay.is_pure_tp else f"{base}:{self.lay.label}"

    @property
    def price_usd_per_hour(self) -> float:
        return self.chip.price.rental_usd_per_hour * self.tensor_parallel

    @cached_property
    def low_precision(self) -> bool:
        """Whether the GEMMs run at the chip's FP8 (or FP4) rate."""
        return self.model.fp8_compute and self.chip.datasheet.fp8_tflops is not None

    @cached_property
    def peak_flops_per_s(self) -> float:
        """Dense peak of one chip at the weights' precision [FLOP/s]."""
        ds = self.chip.datasheet
        if self.model.weight_dtype in ("fp4", "int4") and ds.fp4_tflops:
            tflops = ds.fp4_tflops
        elif self.low_precision:
            assert ds.fp8_tflops is not None
            tflops = ds.fp8_tflops
        else:
            tflops = ds.bf16_tflops
        return units.tflops_to_flops_per_s(tflops)

    @cached_property
    def attention_peak_flops_per_s(self) -> float:
        """Dense peak of one chip at the attention precision [FLOP/s] (BF16 unless FP8)."""
        ds = self.chip.datasheet
        if self.model.attention_dtype_bytes <= 1.0 and ds.fp8_tflops:
            return units.tflops_to_flops_per_s(ds.fp8_tflops)
        return units.tflops_to_flops_per_s(ds.bf16_tflops)

    @cached_property
    def memory_bytes_per_chip(self) -> float:
        return units.gb_to_bytes(self.chip.datasheet.memory_gb)

    @cached_property
    def weight_bytes_per_chip(self) -> float:
        """Weights resident on each chip [bytes]: non-expert weights sliced ``t`` ways (one copy
        per attention group), routed experts spread over all chips."""
        m = self.model
        expert_total = m.experts * m.expert_params
        dense = m.total_params - expert_total
        return float(
            memory.weight_bytes_per_chip(dense, m.weight_dtype_bytes, self.lay.tensor_parallel)
            + memory.weight_bytes_per_chip(expert_total, m.weight_dtype_bytes, self.tensor_parallel)
        )

    @cached_property
    def kv_bytes_per_token_per_instance(self) -> float:
        """KV per token over the instance [bytes]: replicated only inside an attention group
        (an MLA latent cache is partitioned across data-parallel groups, not copied)."""
        return self.model.kv_bytes_per_token * self.model.kv_replication(self.lay.tensor_parallel)

    @cached_property
    def kv_bytes_per_sequence_per_instance(self) -> float:
        return self.model.kv_bytes_per_sequence * self.model.kv_replication(
            self.lay.tensor_parallel
        )

    @cached_property
    def fits(self) -> bool:
        """Whether the instance can run: no layout or node problem (:meth:`why_not`) and the
        weights within the usable memory (kept: every problem built on the instance asks)."""
        return not self.why_not() and (
            self.weight_bytes_per_chip < self.memory_bytes_per_chip * self.memory_utilization
        )

    def why_not(self) -> str:
        """Why the instance cannot run, or the empty string (memory aside: see :attr:`fits`)."""
        probs = self.lay.problems(self.model)
        ds = self.chip.datasheet
        if self.tensor_parallel > ds.chips_per_node and ds.scaleout_bandwidth_gbit_per_s is None:
            probs.append(
                f"{self.tensor_parallel} chips span more than one {ds.chips_per_node}-chip node "
                f"and {self.chip.name} has no scale-out bandwidth in its profile"
            )
        return "; ".join(probs)

    @cached_property
    def step_shape(self) -> compute.ModelShape:
        """The model's numbers a layout step takes (:class:`pddplan.models.compute.ModelShape`)."""
        m = self.model
        wb = m.weight_dtype_bytes
        return compute.ModelShape(
            dense_flops_per_token=2.0
            * (m.active_params - m.lm_head_params - m.top_k * m.expert_params),
            lm_head_flops_per_token=2.0 * m.lm_head_params,
            dense_weight_bytes=(m.dense_params - m.input_embedding_params) * wb,
            expert_flops_per_token=2.0 * m.expert_params,
            expert_weight_bytes=m.expert_params * wb,
            experts=m.experts,
            top_k=m.top_k,
            moe_layers=m.moe_layers,
            layers=m.layers,
            hidden_size=m.hidden_size,
            attention_flops_per_pair=m.attention_flops_per_pair,
            expert_shares=m.expert_shares,
            expert_intermediate_size=m.expert_intermediate_size,
        )

    @cached_property
    def decode_step_shape(self) -> compute.ModelShape:
        """:attr:`step_shape` with decode's attention FLOPs per pair, where decode runs
        attention in its own form (:attr:`ModelNumbers.decode_attention_flops_per_pair`)."""
        pair = self.model.decode_attention_flops_per_pair
        if not pair:
            return self.step_shape
        return dataclasses.replace(self.step_shape, attention_flops_per_pair=pair)

    @cached_property
    def layout_numbers(self) -> compute.LayoutNumbers:
        """The chips' and the layout's numbers a layout step takes
        (:class:`pddplan.models.compute.LayoutNumbers`)."""
        d = self.chip.derates
        ds = self.chip.datasheet
        lay = self.lay
        eff = d.compute_efficiency
        if self.low_precision and d.fp8_compute_efficiency is not None:
            eff = d.fp8_compute_efficiency
        scaleout = ds.scaleout_bandwidth_gbit_per_s
        up_bytes_per_s = (
            units.gb_per_s_to_bytes_per_s(ds.scaleup_bandwidth_gb_per_s)
            / 2.0
            * d.scaleup_efficiency
        )
        out_bytes_per_s = (
            units.gbit_per_s_to_bytes_per_s(scaleout) * d.scaleout_efficiency
            if scaleout
            else up_bytes_per_s
        )
        # the routed experts' grouped GEMMs run on their own curve where the chip has one
        # (the FP8 one for low-precision weights, the BF16 one otherwise)
        expert_eff, expert_half = eff, d.compute_half_saturation_tokens
        grouped_eff, grouped_half = (
            (d.fp8_grouped_gemm_efficiency, d.fp8_grouped_gemm_half_saturation_tokens)
            if self.low_precision
            else bf16_grouped_curve(d)
        )
        if grouped_eff is not None:
            expert_eff = grouped_eff
            if grouped_half is not None:
                expert_half = grouped_half
        # the depth effect of the experts' GEMMs: measured on FP8 block-scaled kernels only
        half_depth = memory_half_depth = 0.0
        if self.low_precision:
            half_depth = d.fp8_grouped_gemm_half_depth_elements or 0.0
            memory_half_depth = d.fp8_grouped_gemm_memory_half_depth_elements or 0.0
        # the experts' inputs, dispatched or fed to their GEMMs: FP8 with block scales where the
        # GEMMs run in FP8, BF16 otherwise
        expert_input_bytes = (
            FP8_BLOCK_SCALED_BYTES if self.low_precision else units.DTYPE_BYTES["bf16"]
        )
        skew = compute.EPLB_RESIDUAL_SKEW
        if not lay.balancer:
            skew *= compute.NO_BALANCER_SKEW_FACTOR
        return compute.LayoutNumbers(
            chips=self.tensor_parallel,
            attention_tp=lay.tensor_parallel,
            expert_parallel=lay.expert_parallel,
            ranks_per_node=min(ds.chips_per_node, self.tensor_parallel),
            linear_peak_flops_per_s=self.peak_flops_per_s,
            linear_efficiency=eff,
            half_saturation_tokens=d.compute_half_saturation_tokens,
            expert_efficiency=expert_eff,
            expert_half_saturation_tokens=expert_half,
            attention_peak_flops_per_s=self.attention_peak_flops_per_s,
            attention_efficiency=d.attention_compute_efficiency or d.compute_efficiency,
            memory_bytes_per_s=units.tb_per_s_to_bytes_per_s(ds.memory_bandwidth_tb_per_s)
            * d.memory_bandwidth_efficiency,
            activation_bytes=units.DTYPE_BYTES["bf16"],
            dispatch_bytes_per_element=expert_input_bytes,
            combine_bytes_per_element=COMBINE_BYTES,
            scaleup_bytes_per_s=up_bytes_per_s,
            scaleout_bytes_per_s=out_bytes_per_s,
            scaleup_latency_s=d.scaleup_latency_us * 1e-6,
            scaleout_latency_s=d.scaleout_latency_us * 1e-6,
            expert_skew=skew,
            layer_latency_s=d.layer_latency_us * 1e-6,
            moe_routing_latency_s=d.moe_routing_latency_us * 1e-6,
            gemm_k_block_latency_s=d.gemm_k_block_latency_us * 1e-6,
            step_overhead_s=units.ms_to_s(d.step_overhead_ms),
            overlap=lay.overlap,
            scaleup_step_latency_s=d.scaleup_step_latency_us * 1e-6,
            expert_input_bytes_per_element=expert_input_bytes,
            expert_half_depth_elements=half_depth,
            expert_memory_half_depth_elements=memory_half_depth,
        )

    @cached_property
    def kv_bytes_per_token_per_chip(self) -> float:
        return self.kv_bytes_per_token_per_instance / self.tensor_parallel

    def step_parts(
        self, tokens, lm_head_tokens, context_token_pairs, context_tokens_read, decode=False
    ):
        """One forward step split by what bounds it (see
        :func:`pddplan.models.compute.layout_step_parts_s`) [s]. ``context_tokens_read`` is the
        total context (tokens of KV) the step reads over the instance; ``decode`` says the step
        is a decode step, whose expert-parallel all-to-all runs on DeepEP's low-latency kernels
        (as DeepSeek's and SGLang's decode instances do) rather than the normal ones, and whose
        attention counts the model's decode form
        (:attr:`ModelNumbers.decode_attention_flops_per_pair`: MLA's weight-absorbed form)."""
        kv = np.asarray(context_tokens_read, dtype=float) * self.kv_bytes_per_token_per_chip
        parts = compute.layout_step_parts_s(
            tokens,
            lm_head_tokens,
            context_token_pairs,
            kv,
            self.decode_step_shape if decode else self.step_shape,
            self.layout_numbers,
            low_latency_alltoall=bool(decode),
        )
        return {
            "compute_s": parts.compute_s,
            "memory_s": parts.memory_s,
            "communication_s": parts.communication_s,
            "latency_s": parts.latency_s,
            "total_s": parts.total_s,
        }

    def _step_s(self, tokens, lm_head_tokens, pairs, context_tokens_read):
        return self.step_parts(tokens, lm_head_tokens, pairs, context_tokens_read)["total_s"]

    def prefill_s(self, uncached_tokens, cached_tokens, chunk_size_tokens: int):
        """Prefill time [s] of ``uncached_tokens`` over a cached prefix (arrays broadcast).

        Chunks are spread over the data-parallel attention groups, so with ``d > 1`` this is the
        instance time per request at full load, not one request's latency alone."""
        return compute.chunked_prefill_time_s(
            uncached_tokens, cached_tokens, chunk_size_tokens, self._step_s
        )

    def decode_parts(self, batch, context_tokens):
        """One decode step of ``batch`` sequences at ``context_tokens``, split by what bounds it
        [s] (a step verifies the drafted tokens too when the model drafts)."""
        b = np.asarray(batch, dtype=float)
        c = np.asarray(context_tokens, dtype=float)
        s = 1.0 + self.model.draft_tokens
        seq_kv = self.kv_bytes_per_sequence_per_instance / self.tensor_parallel
        parts = self.step_parts(b * s, b * s, b * s * c, b * c, decode=True)
        if seq_kv:
            extra = (
                b
                * seq_kv
                / (
                    units.tb_per_s_to_bytes_per_s(self.chip.datasheet.memory_bandwidth_tb_per_s)
                    * self.chip.derates.memory_bandwidth_efficiency
                )
            )
            parts = dict(parts)
            parts["memory_s"] = parts["memory_s"] + extra
            parts["total_s"] = parts["total_s"] + extra
        return parts

    def decode_step_s(self, batch, context_tokens):
        """Decode time per output token of each of ``batch`` sequences at ``context_tokens`` [s]:
        the step time over the tokens a step emits (1 without multi-token prediction)."""
        return (
            self.decode_parts(batch, context_tokens)["total_s"] / self.model.tokens_per_decode_step
        )

    def extend_s(self, tokens, context_tokens):
        """MD's extend pass [s]: rebuild the KV of ``tokens`` handed-over tokens in one step."""
        return self.prefill_s(tokens, context_tokens, EXTEND_CHUNK_TOKENS)

    def extend_affine(self, context_tokens: float) -> tuple[float, float]:
        """``e(k) ~ e_0 + e_1 k`` fitted through k = 1 and k = 256 [s], [s/token]."""
        key = float(context_tokens)
        cache = self._extend_cache
        if key not in cache:
            e1, e256 = (float(v) for v in self.extend_s(np.array([1.0, 256.0]), context_tokens))
            slope = (e256 - e1) / 255.0
            cache[key] = (e1 - slope, slope)
        return cache[key]

    @cached_property
    def _extend_cache(self) -> dict[float, tuple[float, float]]:
        return _physics_cache(self.physics_key, "extend")

    def max_batch_memory(self, context_tokens: float) -> int:
        """Largest number of sequences at ``context_tokens`` whose KV fits [-] (at least one
        token of context per sequence is assumed; capped at 2^20; memoized on the physics,
        as :meth:`max_batch_at_tpot`: every MD and RLD option of a search asks at each
        routing's context)."""
        key = float(context_tokens)
        cache = self._memory_batch_cache
        if key not in cache:
            cache[key] = int(min(self.kv_batch_capacity(key), float(MAX_SEARCH_BATCH)))
        return cache[key]

    def kv_batch_capacity(self, context_tokens: float) -> float:
        """How many sequences at ``context_tokens`` the instance's KV memory holds [-], not
        capped (:meth:`max_batch_memory` caps it at :data:`MAX_SEARCH_BATCH` for the search;
        ``step``'s fit verdict reads it whole)."""
        return float(
            memory.max_batch_in_memory(
                max(float(context_tokens), 1.0),
                self.memory_bytes_per_chip,
                self.tensor_parallel,
                self.memory_utilization,
                self.weight_bytes_per_chip,
                self.kv_bytes_per_token_per_instance,
                self.kv_bytes_per_sequence_per_instance,
            )
        )

    @cached_property
    def _memory_batch_cache(self) -> dict[float, int]:
        return _physics_cache(self.physics_key, "memory-batch")

    def max_batch_at_tpot(self, context_tokens: float, tpot_s: float) -> int:
        """Largest batch that fits in memory and steps within ``tpot_s`` at a context [-]."""
        key = (float(context_tokens), float(tpot_s))
        cache = self._batch_cache
        if key not in cache:
            self.max_batches_at_tpot([context_tokens], tpot_s)  # kept there
        return cache[key]

    def max_batches_at_tpot(self, contexts_tokens: list[float], tpot_s: float) -> list[int]:
        """:meth:`max_batch_at_tpot` at several contexts [tokens], the same values, those not
        kept yet computed together (:func:`~pddplan.models.compute.max_batches_at_step_time`:
        each stage's batches of every context in one decode-step call; a robust sample's RLD
        at each routing's context, say) and kept as that method keeps them."""
        cache = self._batch_cache
        keys = [(float(c), float(tpot_s)) for c in contexts_tokens]
        todo = [k for k in dict.fromkeys(keys) if k not in cache]
        if todo:
            found = compute.max_batches_at_step_time(
                self.decode_step_s,
                [k[0] for k in todo],
                tpot_s,
                [min(self.max_batch_memory(k[0]), 1 << 16) for k in todo],
            )
            cache.update(zip(todo, found, strict=True))
        return [cache[k] for k in keys]

    @cached_property
    def _batch_cache(self) -> dict[tuple[float, float], int]:
        return _physics_cache(self.physics_key, "batch")

    @cached_property
    def physics_key(self) -> HashedKey:
        """What the instance's timings depend on: not the price. Equal keys share caches; the
        key's hash is computed once (its model and layout numbers are large dataclasses)."""
        return HashedKey.of(
            (
                *chip_physics(self.chip),
                self.model,
                self.tensor_parallel,
                self.memory_utilization,
                self.layout,
            )
        )

    def cache(self, name: str) -> dict[Any, Any]:
        """A memo table shared by every instance of the same physics (see :attr:`physics_key`)."""
        return _physics_cache(self.physics_key, name)

    def offline_output_tokens_per_s_per_chip(
        self,
        input_tokens: float,
        output_tokens: float,
        max_batch: int = 2048,
        chunk_size_tokens: int = DEFAULT_CHUNK_SIZE_TOKENS,
    ) -> float:
        """Offline (max-throughput) output tokens/s per chip, prefill and decode on the same chips.

        Notes
        -----
        The batch is the largest that fits in memory at the mean context ``I + O/2`` (capped at
        the engine's ``max_batch``); each request costs its prefill plus ``O`` decode steps shared
        with ``B - 1`` others: ``T = t_prefill(I) + O t_step(B, I + O/2) / B`` instance-seconds,
        so the throughput per chip is ``O / (T tp)``. This is how published offline benchmarks
        (in-flight batching, all requests queued at once) are set up.
        """
        ctx = input_tokens + output_tokens / 2.0
        b = min(self.max_batch_memory(ctx), max_batch)
        if b < 1:
            return 0.0
        per_request_s = (
            float(self.prefill_s(input_tokens, 0.0, chunk_size_tokens))
            + output_tokens * float(self.decode_step_s(b, ctx)) / b
        )
        return output_tokens / per_request_s / self.tensor_parallel


_PHYSICS: dict[HashedKey, dict[str, dict[Any, Any]]] = {}
_PHYSICS_MAX = 4096
# the tables that grew in this process are kept for the next (pddplan.io.physics_disk)
atexit.register(lambda: physics_disk.save(_PHYSICS))


def _physics_cache(key: HashedKey, name: str) -> dict[Any, Any]:
    """Memo tables keyed by an instance's physics, so that what-if points that change only
    prices (or nothing the instance sees) reuse its timings."""
    tables = _PHYSICS.get(key)
    if tables is None:
        if len(_PHYSICS) >= _PHYSICS_MAX:
            _PHYSICS.clear()
        tables = _PHYSICS[key] = physics_disk.load(key)  # kept from earlier runs, if any
    return tables.setdefault(name, {})


def chip_physics(chip: Chip) -> tuple[str, str]:
    """What an instance's derived numbers read of its chip besides the name: the datasheet and
    the derates, as text without their sources and estimate marks (:attr:`Instance.
    physics_key`'s part; :meth:`~pddplan.spec.base.Strict.content_text`). Text, not compared as
    models: a value written -0.0 is not 0.0 here, as it is not in the numbers computed from it.
    Memoized on the chip object (a frozen profile)."""
    return _CHIP_PHYSICS.get(chip, None, lambda: _chip_physics(chip))


def _chip_physics(chip: Chip) -> tuple[str, str]:
    leave_out = frozenset({"source", "estimated"})
    return (chip.datasheet.content_text(leave_out), chip.derates.content_text(leave_out))


_CHIP_PHYSICS = IdentityMemo(size=256)


def repriced(instances: list[Instance], chip: Chip) -> list[Instance] | None:
    """``instances`` (all on one chip object) on ``chip``, a variant of that chip with the same
    name, datasheet and derates (:func:`chip_physics`: a price sweep's point, whose price, notes
    or display name may differ), their derived numbers kept; None where ``chip`` differs in any
    of the three.

    Every derived number of an :class:`Instance` (its cached properties, :attr:`Instance.
    physics_key`) reads the chip's name, datasheet and derates alone; the price is read where
    it is used (:attr:`Instance.price_usd_per_hour`)."""
    if not instances:
        return []
    old = instances[0].chip
    assert all(inst.chip is old for inst in instances)
    if chip.name != old.name:
        return None
    # the very group objects are the same physics (a point whose override changes the price
    # group alone shares the others with the profile as loaded): no serialization needed
    same_groups = chip.datasheet is old.datasheet and chip.derates is old.derates
    if not same_groups and chip_physics(chip) != chip_physics(old):
        return None
    out = []
    for inst in instances:
        new = object.__new__(Instance)
        new.__dict__.update(inst.__dict__)  # the fields and every derived number computed
        new.__dict__["chip"] = chip
        out.append(new)
    return out
