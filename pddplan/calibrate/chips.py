"""Fit a chip's efficiency derates to measured prefill latencies and decode step times.

The measurements are rows of ``phase, tokens, batch, context, tp, latency_ms, source`` (see
:func:`parse_measurements`): prefill latencies, times to first token measured at a client, and
decode step times. A *predictor* maps a set of derates to the latency of every row;
:func:`instance_predictor` builds it from :class:`pddplan.deployment.Instance`, so the fit
calibrates exactly the step-time model that ``solve`` uses. :func:`fit_derates` then

1. decides which derates the rows can identify (scaled sensitivity and collinearity index
   [1]_); the others keep their defaults and are reported as not identified,
2. fits the identified ones with :func:`scipy.optimize.least_squares` on log-latency residuals
   (relative errors), bounded to physical ranges, from a few deterministic starting points,
3. reports the error of the default and of the fitted derates per row and as median / max.

Client-side times to first token (``ttft`` rows) hold per-request costs that no engine step
has (HTTP, tokenization, scheduling). Left to the step model they would be charged to
``step_overhead_ms`` and distort the bandwidth efficiency with it; instead a nuisance offset
``ttft_offset_ms`` is added to those rows, fitted first, reported, and never written to a chip
profile.

Nothing here prints or touches YAML; the CLI (``pddplan calibrate``) renders and writes.

References
----------
.. [1] Brun, Reichert and Kuensch, "Practical identifiability analysis of large environmental
   simulation models", Water Resources Research 37(4), 2001: parameter importance
   ``delta_msqr`` and the collinearity index ``gamma_K``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from pddplan import units
from pddplan.calibrate.cells import (
    MIN_LATENCY_S,
    Where,
    at_least,
    at_most,
    cells,
    is_blank,
    parse_number,
    read_text,
    records,
    require,
    unknown_column,
)
from pddplan.calibrate.fit import (
    ErrorSummary,
    Fit,
    Parameter,
    ParameterFit,
    Predictor,
    Solution,
    scaled_starts,
    sensitivities,
    significant,
    solve,
    status_of,
    unfitted,
)
from pddplan.calibrate.fit import Values as Derates
from pddplan.calibrate.identify import Identification, forward_selection
from pddplan.errors import ProfileError
from pddplan.labels import plain

if TYPE_CHECKING:
    from pddplan.deployment import ModelNumbers
    from pddplan.spec import Chip

# ---------------------------------------------------------------------------------- parameters


#: The derates of :class:`pddplan.spec.ChipDerates`, with bounds. Efficiencies are fractions in
#: [0.01, 1] (the schema's range); the half-saturation point is a
#: positive token count (0.1 to 1e6 tokens covers every GEMM tile shape); the step overhead is a
#: non-negative time (up to 1 s per step, far above any engine's); the per-layer and collective
#: latencies are non-negative times up to 10 ms (far above any kernel's). Which efficiency a
#: model's GEMMs run at depends on its weights: ``compute_efficiency`` for BF16/FP16 weights,
#: ``fp8_compute_efficiency`` for FP8/FP4 weights on a chip with an FP8 rate; attention kernels
#: run at ``attention_compute_efficiency`` of the attention-precision peak.
PARAMETERS: tuple[Parameter, ...] = (
    Parameter("compute_efficiency", "-", 0.01, 1.0),
    Parameter("fp8_compute_efficiency", "-", 0.01, 1.0),
    Parameter("attention_compute_efficiency", "-", 0.01, 1.0),
    Parameter("compute_half_saturation_tokens", "tokens", 0.1, 1e6, log=True),
    Parameter("memory_bandwidth_efficiency", "-", 0.01, 1.0),
    Parameter("scaleup_efficiency", "-", 0.01, 1.0),
    Parameter("step_overhead_ms", "ms", 0.0, 1000.0, scale_floor=1.0),
    Parameter("layer_latency_us", "us", 0.0, 10_000.0, scale_floor=1.0),
    Parameter("scaleup_latency_us", "us", 0.0, 10_000.0, scale_floor=1.0),
    Parameter("scaleout_efficiency", "-", 0.01, 1.0),
    Parameter("scaleout_latency_us", "us", 0.0, 10_000.0, scale_floor=1.0),
)
#: Derates a chip profile may leave null; null means "the value of ``compute_efficiency``".
OPTIONAL_EFFICIENCIES = ("fp8_compute_efficiency", "attention_compute_efficiency")
PARAMETER_NAMES = tuple(p.name for p in PARAMETERS)
#: Derates calibration keeps at the chip profile's values: the routed experts' grouped-GEMM curve
#: and its depth effect are kernel microbenchmark fits (DeepGEMM) that step latencies of one
#: layout cannot tell apart from the linear layers' curve; the ring step latency of a scale-up all-reduce is NCCL's cost
#: model constant, which step latencies cannot tell apart from the collective's alpha
#: (``scaleup_latency_us``) without collective measurements at several ring sizes; the fused-MoE
#: call's routing kernels and its GEMMs' K-block latency are kernel measurements
#: (benchmarks/gpu_fused_moe.py) that step latencies cannot tell apart from the layer floor.
FIXED_DERATES = (
    "fp8_grouped_gemm_efficiency",
    "fp8_grouped_gemm_half_saturation_tokens",
    "fp8_grouped_gemm_half_depth_elements",
    "fp8_grouped_gemm_memory_half_depth_elements",
    "bf16_grouped_gemm_efficiency",
    "bf16_grouped_gemm_half_saturation_tokens",
    "scaleup_step_latency_us",
    "moe_routing_latency_us",
    "gemm_k_block_latency_us",
)
#: Per-request time in a client-measured TTFT outside the engine's steps (a nuisance parameter:
#: fitted only when ``ttft`` rows exist, never part of a chip profile). Up to 10 s.
TTFT_OFFSET = Parameter("ttft_offset_ms", "ms", 0.0, 10_000.0, scale_floor=1.0)
_BY_NAME = {p.name: p for p in (*PARAMETERS, TTFT_OFFSET)}

#: A parameter whose 100% change moves the log-latencies by less than this (root mean square)
#: is not identified: the rows barely depend on it. 1e-3 is 0.1% of latency, ten times below a
#: good measurement's noise.
SENSITIVITY_MIN = 1e-3
#: Largest collinearity index ``gamma_K`` of the fitted set. Brun et al. [1]_ take 10-15 as the
#: critical range; at gamma = 10 the effect of one parameter can be 90% compensated by the
#: others, so a 1% measurement noise already allows a 10% error in the parameter.
COLLINEARITY_MAX = 10.0
#: Relative step of the finite differences used for the sensitivities.
SENSITIVITY_STEP = 1e-4

#: Starting points of the fit: the defaults times each factor (see :func:`scaled_starts`).
START_FACTORS = (1.0, 0.5, 2.0)
#: A later start replaces the best fit so far only when it lowers the cost by more than this.
MIN_IMPROVEMENT = 1e-15

# -------------------------------------------------------------------------------- measurements

PHASES = ("prefill", "ttft", "decode")
COLUMNS = ("phase", "tokens", "batch", "context", "tp", "latency_ms", "source")


@dataclass(frozen=True)
class Measurements:
    """Validated measurement rows as arrays of equal length.

    Attributes
    ----------
    phase : str, ``prefill`` (latency of the whole prefill, engine side), ``ttft`` (a time to
        first token measured at a client: a prefill plus per-request costs) or ``decode``
        (time per output token of one decode step, its inter-token latency: the step over the
        tokens it emits, :meth:`~pddplan.deployment.Instance.decode_step_s`).
    tokens : [tokens] uncached tokens of a prefill; 1 for decode rows.
    batch : [-] sequences in a decode step; 1 for prefill rows.
    context_tokens : [tokens] cached prefix of a prefill, or context length of a decode step.
    tensor_parallel : [-] chips of the instance.
    latency_s : [s] the measured latency.
    source : where each row comes from.
    line : the row's line in the file (1-based).
    file : the file name, for messages.
    """

    phase: np.ndarray
    tokens: np.ndarray
    batch: np.ndarray
    context_tokens: np.ndarray
    tensor_parallel: np.ndarray
    latency_s: np.ndarray
    source: tuple[str, ...]
    line: tuple[int, ...]
    file: str

    def __len__(self) -> int:
        return len(self.latency_s)

    @property
    def is_prefill(self) -> np.ndarray:
        """Rows computed as a prefill (``prefill`` and ``ttft``)."""
        return self.phase != "decode"

    @property
    def is_ttft(self) -> np.ndarray:
        return self.phase == "ttft"


#: Largest value accepted per column: the schema's token bound, a million sequences, the
#: widest instance, a day.
COLUMN_MAX = {
    "tokens": 1e8,
    "batch": 1e6,
    "context": 1e8,
    "tp": 4096.0,
    "latency_ms": 86_400_000.0,
}
#: Smallest value accepted per column where it is above 0 (a latency: 1 ns).
COLUMN_MIN = {"latency_ms": MIN_LATENCY_S * 1e3}


def _number(text: str, column: str, at: Where, *, whole: bool, minimum: float) -> float:
    """Parse one numeric cell (``> 0`` when ``minimum`` is 0 and not ``whole``, else
    ``>= minimum``); a ProfileError names the file, line and column."""
    kind = "a whole number" if whole else "a number"
    value = parse_number(text, column, at, kind=kind)
    finite = math.isfinite(value) and (not whole or value == int(value))
    require(finite, text, column, at, f"expected {kind}")
    positive = not whole and minimum == 0.0
    bound = "> 0" if positive else f">= {minimum:g}"
    low = value < minimum or (positive and value <= 0.0)
    require(not low, text, column, at, f"must be {bound}")
    at_most(value, text, column, at, COLUMN_MAX)
    at_least(value, text, column, at, COLUMN_MIN)
    return value


_Row = tuple[str, float, float, float, float, float, str, int]


def _parse_row(cell: Mapping[str, str], at: Where) -> _Row:
    """Validate one data row (cells by column name, already stripped)."""

    def num(col: str, *, whole: bool, minimum: float, default: float | None = None) -> float:
        if cell[col] == "" and default is not None:
            return default
        if cell[col] == "":
            raise at.error("value is missing", col)
        return _number(cell[col], col, at, whole=whole, minimum=minimum)

    phase = cell["phase"].lower()
    if phase not in PHASES:
        raise at.error(f"unknown phase {cell['phase']!r} (allowed: {', '.join(PHASES)})", "phase")
    if phase != "decode":
        tokens = num("tokens", whole=True, minimum=1)
        batch = num("batch", whole=True, minimum=1, default=1.0)
        if batch != 1:
            raise at.error(
                f"a {phase} row is one sequence: batch must be 1 or empty (got {cell['batch']!r})",
                "batch",
            )
    else:
        batch = num("batch", whole=True, minimum=1)
        tokens = num("tokens", whole=True, minimum=1, default=1.0)
        if tokens != 1:
            raise at.error(
                "a decode step makes one token per sequence: tokens must be 1 or empty "
                f"(got {cell['tokens']!r})",
                "tokens",
            )
    context = num("context", whole=True, minimum=0, default=0.0)
    tp = num("tp", whole=True, minimum=1)
    latency_ms = num("latency_ms", whole=False, minimum=0.0)
    source = cell["source"]
    if len(source) < 3:
        raise at.error("every measurement needs a source (at least 3 characters)", "source")
    assert at.line is not None
    return (phase, tokens, batch, context, tp, units.ms_to_s(latency_ms), source, at.line)


def _header(rows: Iterator[tuple[int, list[str]]], file: str) -> tuple[list[str], Where]:
    """The header (the first record that is not blank) and where it is; its columns must be
    :data:`COLUMNS`, each once."""
    header_at = next(((line, row) for line, row in rows if not is_blank(row)), None)
    if header_at is None:
        raise ProfileError(
            "empty file: expected a header line and at least one measurement", file=file
        )
    header, at = [c.strip() for c in header_at[1]], Where(file, header_at[0])
    seen: set[str] = set()
    for col in header:
        if col in seen:
            raise at.error(f"duplicate column {col!r}", col)
        seen.add(col)
        unknown_column(col, COLUMNS, at, suggest=True)
    missing = [c for c in COLUMNS if c not in seen]
    if missing:
        raise at.error(f"missing column(s) {', '.join(missing)} (required: {', '.join(COLUMNS)})")
    return header, at


def parse_measurements(text: str, file: str) -> Measurements:
    """Parse and validate a measurements CSV.

    Parameters
    ----------
    text : the CSV text; the first line is the header.
    file : the file name used in error messages.

    Notes
    -----
    Columns (all required, any order, nothing else):

    - ``phase``: ``prefill`` (``latency_ms`` is the whole prefill of ``tokens`` uncached tokens
      over a cached prefix of ``context`` tokens, timed in the engine), ``ttft`` (the same,
      timed at a client as time to first token: per-request costs included) or ``decode``
      (``latency_ms`` is one decode step of ``batch`` sequences at context ``context`` per
      output token: its inter-token latency, the step over the tokens it emits with
      multi-token prediction).
    - ``tokens``: prefill and ttft: uncached tokens (>= 1); decode: empty or 1.
    - ``batch``: decode: sequences in the step (>= 1); prefill and ttft: empty or 1.
    - ``context``: tokens already in the cache (>= 0; empty means 0).
    - ``tp``: chips of the instance (tensor-parallel degree, >= 1); a tp that is no
      instance of the model on the chip is an error of ``calibrate`` (it knows the model).
    - ``latency_ms``: the measured time [ms], > 0.
    - ``source``: where the number comes from (at least 3 characters).

    Blank lines are skipped. Every error names the file, the line and the column.
    """
    rows_in = records(text, file)
    header, header_at = _header(rows_in, file)
    rows: list[_Row] = []
    for line, raw in rows_in:
        if not is_blank(raw):
            at = Where(file, line)
            rows.append(_parse_row(cells(raw, header, at), at))
    if not rows:
        raise header_at.error("no measurements: the file has a header but no rows")
    cols = list(zip(*rows, strict=True))
    return Measurements(
        phase=np.array(cols[0], dtype=str),
        tokens=np.array(cols[1], dtype=float),
        batch=np.array(cols[2], dtype=float),
        context_tokens=np.array(cols[3], dtype=float),
        tensor_parallel=np.array(cols[4], dtype=int),
        latency_s=np.array(cols[5], dtype=float),
        source=tuple(str(s) for s in cols[6]),
        line=tuple(int(n) for n in cols[7]),
        file=file,
    )


def read_measurements(path: Path) -> Measurements:
    """Read and validate a measurements CSV file (see :func:`parse_measurements`)."""
    return parse_measurements(read_text(path, undecodable="not a UTF-8 text file"), str(path))


# ---------------------------------------------------------------------------------- predictor


def with_derates(chip: Chip, derates: Derates) -> Chip:
    """A copy of ``chip`` whose derates are replaced by those in ``derates``.

    Keys that are not derates (such as ``ttft_offset_ms``) are ignored.
    """
    update = {k: float(v) for k, v in derates.items() if k in PARAMETER_NAMES}
    return chip.model_copy(update={"derates": chip.derates.model_copy(update=update)})


def default_derates(chip: Chip) -> dict[str, float]:
    """The chip's own derates, by parameter name; a null optional efficiency (see
    :data:`OPTIONAL_EFFICIENCIES`) takes ``compute_efficiency``, the value it stands for."""
    d = chip.derates
    out = {}
    for name in PARAMETER_NAMES:
        value = getattr(d, name)
        out[name] = float(d.compute_efficiency if value is None else value)
    return out


def instance_predictor(
    chip: Chip, model: ModelNumbers, data: Measurements, chunk_size_tokens: int
) -> Predictor:
    """A function mapping derates to the predicted latency [s] of every row of ``data``.

    Parameters
    ----------
    chip : the chip whose derates are replaced (datasheet and price are kept).
    model : the model's numbers (:func:`pddplan.deployment.model_numbers`).
    data : the measurement rows.
    chunk_size_tokens : [tokens] chunked-prefill chunk size of the measured engine.

    Notes
    -----
    ``prefill`` rows: :meth:`Instance.prefill_s`; ``ttft`` rows: the same plus
    ``ttft_offset_ms`` (0 when absent); ``decode`` rows: :meth:`Instance.decode_step_s`. Each
    row runs on an instance of its ``tp`` chips of ``chip`` with the given derates.
    """
    from pddplan.deployment import Instance

    groups = []
    for tp in np.unique(data.tensor_parallel):
        on_tp = data.tensor_parallel == tp
        groups.append((int(tp), on_tp & data.is_prefill, on_tp & ~data.is_prefill))
    ttft = data.is_ttft

    def predict(params: Derates) -> np.ndarray:
        c = with_derates(chip, params)
        out = np.empty(len(data))
        for tp, pre, dec in groups:
            inst = Instance(c, model, tp)
            if pre.any():
                out[pre] = inst.prefill_s(
                    data.tokens[pre], data.context_tokens[pre], chunk_size_tokens
                )
            if dec.any():
                out[dec] = inst.decode_step_s(data.batch[dec], data.context_tokens[dec])
        offset_s = units.ms_to_s(float(params.get(TTFT_OFFSET.name, 0.0)))
        return out + np.where(ttft, offset_s, 0.0)

    return predict


def structural_reasons(
    data: Measurements, chip: Chip | None = None, model: ModelNumbers | None = None
) -> dict[str, str]:
    """Parameters that the rows cannot identify by their design, whatever their values.

    - ``scaleup_efficiency`` needs rows at two or more tensor-parallel degrees, one above 1:
      at a single degree the all-reduce time grows with the tokens of a step like the other
      per-token costs and cannot be told apart from them.
    - ``scaleup_latency_us`` (the alpha of each all-reduce) needs rows at ``tp = 1`` and at
      ``tp > 1``: at ``tp > 1`` only, it is a fixed cost per step like the layer latency.
    - ``step_overhead_ms``: every row runs one model of ``L`` layers, so the per-step latency
      ``L t_layer + t_0`` is one number per step; it is fitted as ``layer_latency_us`` and
      ``step_overhead_ms`` keeps the chip's value (only rows of models with different layer
      counts would tell the two apart).
    - ``scaleout_efficiency`` and ``scaleout_latency_us`` need rows on instances larger than
      one scale-up node (``chip`` given).
    - ``compute_efficiency`` applies to BF16/FP16 GEMMs and ``fp8_compute_efficiency`` to
      FP8/FP4 GEMMs on a chip with an FP8 rate: the one the model's weights do not use is not
      identified (``chip`` and ``model`` given).
    """
    tps = sorted({int(t) for t in data.tensor_parallel})
    out: dict[str, str] = {}
    if tps == [1]:
        out["scaleup_efficiency"] = "not identified: every row has tp = 1 (no all-reduce)"
        out["scaleup_latency_us"] = "not identified: every row has tp = 1 (no all-reduce)"
    elif len(tps) == 1:
        out["scaleup_efficiency"] = (
            f"not identified: every row has tp = {tps[0]}; the all-reduce time is told apart "
            "from other per-token costs only by rows at two or more tp values"
        )
    if tps[0] > 1:
        out.setdefault(
            "scaleup_latency_us",
            "not identified: no row has tp = 1; the all-reduce latency is a fixed cost per "
            "step like layer_latency_us, told apart only by rows with and without all-reduces",
        )
    layers = f" ({model.layers} layers)" if model is not None else ""
    out["step_overhead_ms"] = (
        f"not identified: one model{layers}, so the per-step latency L t_layer + t_0 is one "
        "number; it is fitted as layer_latency_us"
    )
    if chip is not None:
        node = chip.datasheet.chips_per_node
        if tps[-1] <= node or chip.datasheet.scaleout_bandwidth_gbit_per_s is None:
            why = f"not identified: no row spans more than one {node}-chip node (no scale-out)"
            out["scaleout_efficiency"] = why
            out["scaleout_latency_us"] = why
        if model is not None:
            low = model.fp8_compute and chip.datasheet.fp8_tflops is not None
            if low:
                out["compute_efficiency"] = (
                    f"not identified: {model.name}'s GEMMs run at the FP8 rate "
                    f"({model.weight_dtype} weights), where fp8_compute_efficiency applies"
                )
            else:
                why_bf16 = (
                    f"{chip.name} has no FP8 rate"
                    if model.fp8_compute
                    else f"{model.name}'s weights are {model.weight_dtype}"
                )
                out["fp8_compute_efficiency"] = (
                    f"not identified: {why_bf16}, so its GEMMs run at compute_efficiency"
                )
    return out


# ---------------------------------------------------------------------------- identifiability


def identify(
    predict: Predictor,
    point: Derates,
    candidates: Sequence[str],
    *,
    first: Sequence[str] = (),
    sensitivity_min: float = SENSITIVITY_MIN,
    collinearity_max: float = COLLINEARITY_MAX,
) -> Identification:
    """Decide which of ``candidates`` the rows identify at ``point``.

    Parameters
    ----------
    predict : maps parameters to predicted latencies [s].
    point : [mixed units] where the sensitivities are taken.
    candidates : parameter names to consider.
    first : candidates taken before the others (nuisance parameters that stand for a cost the
        model lacks), in this order.
    sensitivity_min, collinearity_max : thresholds, see :data:`SENSITIVITY_MIN` and
        :data:`COLLINEARITY_MAX`.

    Notes
    -----
    A parameter is dropped when its importance ``delta_msqr = sqrt(mean_i S_ij^2)`` is below
    ``sensitivity_min``. The others are taken in decreasing importance (``first`` ones ahead),
    a forward selection as in [1]_: one joins the identified set only if the set's collinearity
    index stays within ``collinearity_max``; otherwise it is reported as collinear with the
    set. At most as many parameters as rows are kept.
    """
    params = [_BY_NAME[n] for n in candidates]
    return forward_selection(
        sensitivities(predict, point, params, SENSITIVITY_STEP),
        candidates,
        first=first,
        sensitivity_min=sensitivity_min,
        collinearity_max=collinearity_max,
    )


# ------------------------------------------------------------------------------------- fitting


@dataclass(frozen=True)
class FitResult(Fit):
    """Fitted derates: the :class:`Fit`, the predictions at the default derates and the
    profile's, the error summaries and the fit's figures.

    Attributes
    ----------
    default_s : [s] each row's prediction at the default derates.
    default_errors, fitted_errors : errors of the default and the fitted parameters.
    profile_s : [s] each row's prediction at the fitted derates, nuisance parameters at their
        defaults (0): what the written profile predicts.
    profile_errors : errors of ``profile_s``.
    collinearity : [-] collinearity index of the fitted set.
    evaluations : [-] residual evaluations of the whole fit.
    values : [their units] every parameter, fitted or default.
    """

    default_s: np.ndarray
    default_errors: ErrorSummary
    fitted_errors: ErrorSummary
    profile_s: np.ndarray
    profile_errors: ErrorSummary
    collinearity: float
    evaluations: int
    values: dict[str, float] = field(default_factory=dict)

    @property
    def derates(self) -> dict[str, float]:
        """The chip derates (fitted or default), as a profile needs them."""
        return {n: self.values[n] for n in PARAMETER_NAMES}

    @property
    def not_identified(self) -> list[ParameterFit]:
        return [p for p in self.parameters if p.status.startswith("not identified")]


def fit_derates(
    measured_s: np.ndarray,
    predict: Predictor,
    defaults: Derates,
    *,
    fixed: Iterable[str] = (),
    nuisance: Sequence[str] = (),
    unidentifiable: Mapping[str, str] | None = None,
    sensitivity_min: float = SENSITIVITY_MIN,
    collinearity_max: float = COLLINEARITY_MAX,
) -> FitResult:
    """Fit the identified derates to measured latencies by least squares on log latency.

    Parameters
    ----------
    measured_s : [s] measured latency of each row, > 0.
    predict : maps parameters (the derates of :data:`PARAMETER_NAMES` and the ``nuisance``
        ones) to predicted latencies [s].
    defaults : [mixed units] the derates to start from, also kept for those not fitted; a
        nuisance parameter missing here starts at 0.
    fixed : derates held at their defaults whatever the data say.
    nuisance : extra parameters that are fitted first and reported but are no derates
        (``ttft_offset_ms`` when the rows hold ``ttft`` measurements).
    unidentifiable : parameter -> reason, for those the rows cannot identify by design
        (see :func:`structural_reasons`).
    sensitivity_min, collinearity_max : identifiability thresholds (see :func:`identify`).

    Returns
    -------
    FitResult

    Notes
    -----
    Residuals ``r_i = ln t_pred,i - ln t_meas,i`` (relative errors, so a 20 ms decode step and
    a 2 s prefill weigh alike); :func:`scipy.optimize.least_squares` (trust-region reflective)
    with the bounds of :data:`PARAMETERS`, the half-saturation point in log space, from the
    starts of :func:`_starts`, keeping the lowest cost. Identified parameters are chosen at
    the defaults and checked again at the fit; those no longer identified there go back to
    their defaults and the rest is refitted once. Standard errors come from the Jacobian at
    the optimum, ``cov = s^2 (J^T J)^-1`` with ``s^2 = sum r^2 / (n - p)``: an approximation
    that ignores the model's own error.
    """
    measured_s = np.asarray(measured_s, dtype=float)
    if measured_s.ndim != 1 or len(measured_s) == 0 or np.any(~(measured_s > 0)):
        raise ValueError("measured_s must be a non-empty 1-d array of positive latencies")
    fixed = set(fixed)
    unknown = (fixed | set(nuisance)) - set(_BY_NAME)
    if unknown:
        raise ValueError(
            f"unknown parameter(s) {plain(sorted(unknown))}; allowed: {plain(_BY_NAME)}"
        )
    point = {n: float(defaults.get(n, 0.0)) for n in [*PARAMETER_NAMES, *nuisance]}
    reasons = dict(unidentifiable or {})
    candidates = [n for n in point if n not in fixed and n not in reasons]

    def which(at: Derates, names: Sequence[str]) -> Identification:
        return identify(
            predict,
            at,
            names,
            first=nuisance,
            sensitivity_min=sensitivity_min,
            collinearity_max=collinearity_max,
        )

    ident = which(point, candidates)
    reasons.update(ident.reasons)
    sol, gamma = _fit_identified(predict, measured_s, point, ident, which, reasons)
    return _fit_result(predict, measured_s, point, fixed, reasons, ident, sol, gamma)


def _solve(
    predict: Predictor, measured_s: np.ndarray, point: Derates, names: Sequence[str]
) -> Solution:
    """Least squares of ``names`` from the starts of :data:`START_FACTORS`."""
    params = [_BY_NAME[n] for n in names]
    starts = scaled_starts(params, point, START_FACTORS)
    return solve(predict, measured_s, point, params, starts, min_improvement=MIN_IMPROVEMENT)


def _fit_identified(
    predict: Predictor,
    measured_s: np.ndarray,
    point: Derates,
    ident: Identification,
    which: Callable[[Derates, Sequence[str]], Identification],
    reasons: dict[str, str],
) -> tuple[Solution, float]:
    """Fit the identified parameters; check them again at the fit, and refit once without
    those no longer identified there (their reasons go to ``reasons``).

    Returns the solution (its evaluations those of both fits) and the collinearity index of
    the parameters it fitted.
    """
    names = list(ident.identified)
    if not names:
        return unfitted(point), ident.collinearity
    first = _solve(predict, measured_s, point, names)
    again = which(first.values, names)
    if set(again.identified) == set(names):
        return first, ident.collinearity
    for n, why in again.reasons.items():
        reasons[n] = _dropped_at_fit(_BY_NAME[n], first.values[n], why)
    names = list(again.identified)
    second = _solve(predict, measured_s, point, names) if names else unfitted(point)
    return replace(second, evaluations=first.evaluations + second.evaluations), again.collinearity


def _dropped_at_fit(p: Parameter, value: float, why: str) -> str:
    """Why a parameter identified at the defaults is not at the fitted point."""
    if p.at_bound(value):
        return (
            f"not identified: the fit drives it to its bound {p.nearest_bound(value):g} {p.unit}, "
            "where the rows no longer depend on it"
        )
    return why + " at the fitted point"


def _fit_result(
    predict: Predictor,
    measured_s: np.ndarray,
    point: Derates,
    fixed: set[str],
    reasons: Mapping[str, str],
    ident: Identification,
    sol: Solution,
    gamma: float,
) -> FitResult:
    """The outcome of every parameter, the predictions and their errors."""
    values = sol.values
    default_s = predict(point)
    fitted_s = predict(values)
    profile_s = predict({n: (values[n] if n in PARAMETER_NAMES else point[n]) for n in point})
    stderr = sol.stderr(len(measured_s))
    params = []
    for n in point:
        p = _BY_NAME[n]
        status = status_of(n, fixed, sol.names, reasons, p.at_bound(values[n]))
        params.append(
            ParameterFit(
                name=n,
                unit=p.unit,
                default=point[n],
                fitted=values[n],
                status=status,
                sensitivity=ident.sensitivity.get(n),
                stderr=stderr.get(n),
                in_profile=n in PARAMETER_NAMES,
            )
        )
    return FitResult(
        parameters=tuple(params),
        measured_s=measured_s,
        default_s=default_s,
        fitted_s=fitted_s,
        default_errors=ErrorSummary.of(default_s, measured_s),
        fitted_errors=ErrorSummary.of(fitted_s, measured_s),
        profile_s=profile_s,
        profile_errors=ErrorSummary.of(profile_s, measured_s),
        collinearity=gamma,
        success=sol.success,
        message=sol.message,
        evaluations=sol.evaluations,
        values=dict(values),
    )


# ------------------------------------------------------------------------------ chip profile


def calibrated_chip(
    chip: Chip,
    fit: FitResult,
    name: str,
    measurements_file: str,
    model_name: str,
    chunk_size_tokens: int,
) -> Chip:
    """A complete chip profile: ``chip`` with the fitted derates (4 significant digits).

    Parameters
    ----------
    chip : the chip the fit started from; datasheet and price are copied unchanged.
    fit : the result of :func:`fit_derates`.
    name : the new profile's name (the file stem it will be written to).
    measurements_file, model_name, chunk_size_tokens : recorded in the derates' ``source``.

    Notes
    -----
    The derates' ``source`` names the measurements file, the fit, what was fitted, what was
    kept and why, and the errors before and after. Fitted keys leave the ``estimated`` list;
    keys kept at their defaults keep their status. Nuisance parameters are not derates and
    are only mentioned.
    """
    from pddplan.spec import Chip as ChipCls

    derate_fits = [p for p in fit.parameters if p.in_profile]
    fitted = [p.name for p in derate_fits if p.was_fitted]
    kept = "; ".join(f"{p.name} ({p.status})" for p in derate_fits if not p.was_fitted)
    d, f, o = fit.default_errors, fit.fitted_errors, fit.profile_errors
    nuisance = "".join(
        f" A nuisance {p.name} of {p.fitted:.4g} {p.unit} was fitted for the ttft rows "
        "(per-request costs outside the engine steps) and is not part of this profile; "
        f"without it the profile's error is {o.median_abs_pct:.1f}% / {o.max_abs_pct:.1f}% "
        "(median / max)."
        for p in fit.parameters
        if not p.in_profile and p.was_fitted
    )
    source = (
        f"pddplan calibrate: scipy least_squares fit on log latency of {len(fit.measured_s)} "
        f"rows of {measurements_file} (model {model_name}, prefill chunk {chunk_size_tokens} "
        f"tokens), starting from the derates of chip profile {chip.name}. "
        f"Fitted: {', '.join(fitted) or 'none'}. Kept from {chip.name}: {kept or 'none'}. "
        "Error against the measurements, median / max absolute: default derates "
        f"{d.median_abs_pct:.1f}% / {d.max_abs_pct:.1f}%, fitted {f.median_abs_pct:.1f}% / "
        f"{f.max_abs_pct:.1f}%.{nuisance} Fitted values rounded to 4 significant digits. "
        f"Source of the derates of {chip.name}: {chip.derates.source}"
    )
    data = chip.model_dump(mode="json")
    data["name"] = name
    data["display_name"] = f"{chip.display_name} (calibrated: {name})"
    data["notes"] = (
        f"Calibrated copy of {chip.name} written by pddplan calibrate from {measurements_file}; "
        f"only the derates differ. {chip.notes}"
    ).strip()
    derates = data["derates"]
    for p in derate_fits:
        # a null optional efficiency is written as the value the fit used (compute_efficiency's
        # default), so that a fitted compute_efficiency does not silently move it too
        derates[p.name] = significant(p.fitted) if p.was_fitted else p.default
    derates["source"] = source
    derates["estimated"] = [k for k in chip.derates.estimated if k not in fitted]
    return ChipCls.model_validate(data)
