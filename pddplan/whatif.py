"""What-if questions: parameter sweeps, break-even points and chip ranking by role.

A swept PATH is a dotted key into the scenario as a user sees it:

- a scenario key: ``rate_rps``, ``sla.ttft_p99_s``, ``serving.chunk_size_tokens``;
- a key of a profile the scenario names: ``link.bandwidth_gbit_per_s``, ``rdma.rtt_ms``,
  ``model.dtypes.kv_cache``, ``workload.hit_rate.shift``, ``chips.gpu-b.price.rental_usd_per_hour``
  (these become ``overrides`` of that profile);
- short forms: ``chips.NAME.price_usd_per_hour`` for ``chips.NAME.price.rental_usd_per_hour``.
"""

from __future__ import annotations

import difflib
import itertools
import math
import typing
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from pddplan.errors import InfeasibleError, PddplanError, ProfileError, UsageError
from pddplan.loader import Registry, ResolvedScenario, _unwrap, load_scenario
from pddplan.solver import ratio, solve_scenario
from pddplan.spec import Chip, Link, Model, Scenario, Workload

ALIASES = {"price_usd_per_hour": ("price", "rental_usd_per_hour")}
PROFILE_ROOTS: dict[str, type[BaseModel]] = {
    "link": Link,
    "rdma": Link,
    "model": Model,
    "workload": Workload,
}


@dataclass(frozen=True)
class Axis:
    path: str
    values: list[Any]


def parse_values(text: str) -> list[Any]:
    """``1,2,3`` or ``lo:hi:step`` (inclusive of ``hi`` within rounding) or words."""
    text = text.strip()
    if not text:
        raise UsageError("--set needs at least one value after '='")
    if text.count(":") == 2 and "," not in text:
        try:
            lo, hi, step = (float(x) for x in text.split(":"))
        except ValueError:
            raise UsageError(f"range {text!r} must be lo:hi:step with numbers") from None
        if step <= 0 or hi < lo:
            raise UsageError(f"range {text!r} needs step > 0 and hi >= lo")
        n = int(math.floor((hi - lo) / step + 1e-9)) + 1
        if n > 100_000:
            raise UsageError(f"range {text!r} has {n} values; at most 100000")
        return [_clean(lo + i * step) for i in range(n)]
    return [_scalar(v.strip()) for v in text.split(",")]


def _clean(x: float) -> float | int:
    r = round(x, 12)
    return int(r) if float(r).is_integer() and abs(r) < 1e15 else r


def _scalar(v: str) -> Any:
    for conv in (int, float):
        try:
            return conv(v)
        except ValueError:
            pass
    if v in ("true", "false"):
        return v == "true"
    return v


def parse_set(expr: str) -> Axis:
    path, sep, vals = expr.partition("=")
    if not sep or not path.strip():
        raise UsageError(f"--set expects PATH=V1,V2,... or PATH=lo:hi:step, not {expr!r}")
    return Axis(path.strip(), parse_values(vals))


# -------------------------------------------------------------------------------- paths


def _fields(cls: type[BaseModel], prefix: str, depth: int = 0) -> Iterable[str]:
    for name, f in cls.model_fields.items():
        path = f"{prefix}.{name}" if prefix else name
        subs = _unwrap(f.annotation)
        if subs and depth < 4:
            for sub in subs:
                yield from _fields(sub, path, depth + 1)
        else:
            yield path


def known_paths(rs: ResolvedScenario) -> list[str]:
    paths = [
        p for p in _fields(Scenario, "") if not p.startswith(("overrides", "workload", "roles"))
    ]
    paths += [f"roles.{r}.{k}" for r in ("P", "RLD", "MD") for k in ("chips", "chips_per_instance")]
    for root, cls in PROFILE_ROOTS.items():
        paths += [f"{root}.{p}" for p in _fields(cls, "") if not p.endswith(("kind", "name"))]
    for chip in rs.chips:
        paths += [
            f"chips.{chip}.{p}" for p in _fields(Chip, "") if not p.endswith(("kind", "name"))
        ]
        paths.append(f"chips.{chip}.price_usd_per_hour")
    return sorted(set(paths))


def _valid(path: str, known: Sequence[str]) -> bool:
    if path in known:
        return True
    # a path into a dict- or union-typed field (e.g. limits.max_chips.NAME) is checked by loading
    return any(path.startswith(k + ".") for k in known if k.endswith("max_chips"))


def check_path(path: str, rs: ResolvedScenario) -> None:
    known = known_paths(rs)
    if not _valid(path, known):
        guess = difflib.get_close_matches(path, known, n=1, cutoff=0.6)
        hint = f"; did you mean {guess[0]!r}?" if guess else ""
        raise UsageError(f"--set {path}: not a key of this scenario{hint}")


def patch_for(path: str, value: Any, rs: ResolvedScenario) -> dict[str, Any]:
    """The scenario patch (deep-merged by the loader) that sets ``path`` to ``value``."""
    parts = path.split(".")
    scen = rs.scenario
    if parts[0] == "chips":
        name, rest = parts[1], parts[2:]
        if len(rest) == 1 and rest[0] in ALIASES:
            rest = list(ALIASES[rest[0]])
        return {"overrides": {"chips": {name: _nest(rest, value)}}}
    if parts[0] in ("link", "rdma"):
        return {"overrides": {"links": {getattr(scen, parts[0]): _nest(parts[1:], value)}}}
    if parts[0] == "model":
        return {"overrides": {"models": {scen.model: _nest(parts[1:], value)}}}
    if parts[0] == "workload":
        if isinstance(scen.workload, str):
            return {"overrides": {"workloads": {scen.workload: _nest(parts[1:], value)}}}
        return {"workload": _nest(parts[1:], value)}
    return _nest(parts, value)


def _nest(parts: Sequence[str], value: Any) -> dict[str, Any]:
    out: Any = value
    for p in reversed(parts):
        out = {p: out}
    return typing.cast(dict[str, Any], out)


def _merge(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    out = dict(a)
    for k, v in b.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


# -------------------------------------------------------------------------------- sweeps


def sweep_points(axes: Sequence[Axis]) -> list[tuple[Any, ...]]:
    return list(itertools.product(*(a.values for a in axes)))


def validate_axes(scenario: str | None, reg: Registry, axes: Sequence[Axis]) -> ResolvedScenario:
    """Check every PATH and every value before any point is solved."""
    rs = load_scenario(scenario, reg)
    for ax in axes:
        check_path(ax.path, rs)
        for v in ax.values:
            try:
                load_scenario(scenario, reg, patch_for(ax.path, v, rs))
            except ProfileError as exc:
                raise UsageError(f"--set {ax.path}={v!r}: {exc.detail}") from None
    return rs


def solve_point(
    scenario: str | None,
    profile_dirs: Sequence[str],
    axes: Sequence[Axis],
    values: Sequence[Any],
    baselines: bool = True,
) -> dict[str, Any]:
    """One sweep row: the swept values, then the plan's figures or the binding constraint."""
    reg, base = _base(scenario, tuple(profile_dirs))
    patch: dict[str, Any] = {}
    for ax, v in zip(axes, values, strict=True):
        patch = _merge(patch, patch_for(ax.path, v, base))
    row: dict[str, Any] = {ax.path: v for ax, v in zip(axes, values, strict=True)}
    try:
        rs = load_scenario(scenario, reg, patch)
        out = solve_scenario(rs, baselines=baselines)
    except InfeasibleError as exc:
        row.update(feasible=False, binding=exc.binding or str(exc))
        return row
    except PddplanError as exc:
        row.update(feasible=False, binding=f"error: {exc}")
        return row
    p = out.plan
    row.update(plan_row(out))
    row["feasible"] = True
    row["binding"] = "; ".join(p.binding)
    return row


_BASE_CACHE: dict[tuple[str | None, tuple[str, ...]], tuple[Registry, ResolvedScenario]] = {}


def _base(scenario: str | None, profile_dirs: tuple[str, ...]) -> tuple[Registry, ResolvedScenario]:
    """The registry and the unpatched scenario, loaded once per process."""
    key = (scenario, profile_dirs)
    if key not in _BASE_CACHE:
        _BASE_CACHE.clear()
        reg = Registry.default([Path(d) for d in profile_dirs])
        _BASE_CACHE[key] = (reg, load_scenario(scenario, reg))
    return _BASE_CACHE[key]


def plan_row(out) -> dict[str, Any]:
    p = out.plan
    row: dict[str, Any] = {}
    for role in ("P", "RLD", "MD"):
        v = p.roles.get(role)
        row[f"{role}_chip"] = v[0].chip.name if v else None
        row[f"{role}_chips_per_instance"] = v[0].tensor_parallel if v else None
        row[f"{role}_instances"] = v[1] if v else 0
    row.update(
        rate_rps=p.rate_rps,
        cost_usd_per_hour=p.cost_usd_per_hour,
        goodput_rps=p.goodput_rps,
        bcr_requests_per_usd=p.bcr_requests_per_usd,
        ttft_p50_s=p.prefill.ttft_s[0],
        ttft_p90_s=p.prefill.ttft_s[1],
        ttft_p99_s=p.prefill.ttft_s[2],
        link_utilization=p.route.link_utilization,
        rld_output_token_share=p.rld_output_token_share,
    )
    for b in out.baselines:
        row[f"bcr_ratio_vs_{b.topology}"] = ratio(p.bcr_requests_per_usd, b.bcr_requests_per_usd)
    return row


def run_sweep(
    scenario: str | None,
    profile_dirs: Sequence[str],
    axes: Sequence[Axis],
    jobs: int = 1,
    progress: Callable[[int, int], None] | None = None,
    baselines: bool = True,
) -> list[dict[str, Any]]:
    """Solve every point of the grid; the output order is the grid's order, whatever ``jobs``.

    Each point is one PDD solve plus, with ``baselines``, the two baselines at its rate.
    """
    points = sweep_points(axes)
    rows: list[dict[str, Any]] = []
    if jobs <= 1 or len(points) < 8:
        for i, pt in enumerate(points):
            rows.append(solve_point(scenario, profile_dirs, axes, pt, baselines))
            if progress:
                progress(i + 1, len(points))
        return rows
    from concurrent.futures import ProcessPoolExecutor

    chunk = max(1, min(256, len(points) // (jobs * 8)))
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        futs = pool.map(
            _solve_star,
            [(scenario, list(profile_dirs), list(axes), pt, baselines) for pt in points],
            chunksize=chunk,
        )
        for i, row in enumerate(futs):
            rows.append(row)
            if progress:
                progress(i + 1, len(points))
    return rows


def _solve_star(args: tuple[Any, ...]) -> dict[str, Any]:
    return solve_point(*args)


# ------------------------------------------------------------------------------ break-even


@dataclass(frozen=True)
class BreakEven:
    path: str
    against: str
    lo: float
    hi: float
    value: float | None
    ratio_lo: float
    ratio_hi: float
    iterations: int


def bcr_ratio_at(
    scenario: str | None,
    reg: Registry,
    base: ResolvedScenario,
    path: str,
    value: float,
    against: str,
) -> float:
    rs = load_scenario(scenario, reg, patch_for(path, value, base))
    out = solve_scenario(rs)
    for b in out.baselines:
        if b.topology == against:
            return ratio(out.plan.bcr_requests_per_usd, b.bcr_requests_per_usd)
    raise UsageError(f"the scenario has no {against} baseline (same-dc needs a 'baseline:' chip)")


def breakeven(
    scenario: str | None,
    reg: Registry,
    path: str,
    against: str,
    lo: float,
    hi: float,
    tol: float = 1e-3,
) -> BreakEven:
    """The value of ``path`` in ``[lo, hi]`` at which PDD's BCR equals the baseline's.

    Bisection on ``ratio(x) - 1``; needs a sign change between ``lo`` and ``hi``. The ratio is a
    step function of the parameter (instance counts are whole), so the crossing is located to
    within ``tol`` of the interval, at the step where the ratio crosses 1.
    """
    base = load_scenario(scenario, reg)
    check_path(path, base)
    f_lo = bcr_ratio_at(scenario, reg, base, path, lo, against) - 1.0
    f_hi = bcr_ratio_at(scenario, reg, base, path, hi, against) - 1.0
    if f_lo == 0:
        return BreakEven(path, against, lo, hi, lo, f_lo + 1, f_hi + 1, 0)
    if f_lo * f_hi > 0:
        return BreakEven(path, against, lo, hi, None, f_lo + 1, f_hi + 1, 0)
    a, b, fa = lo, hi, f_lo
    it = 0
    while b - a > tol * max(abs(hi - lo), 1e-12) and it < 60:
        it += 1
        m = (a + b) / 2
        fm = bcr_ratio_at(scenario, reg, base, path, m, against) - 1.0
        if fm == 0:
            a = b = m
            break
        if (fm > 0) == (fa > 0):
            a, fa = m, fm
        else:
            b = m
    return BreakEven(path, against, lo, hi, (a + b) / 2, f_lo + 1, f_hi + 1, it)


# ------------------------------------------------------------------------------ chip ranking


def rank_chips(
    rs: ResolvedScenario,
    reg: Registry,
    reference: str = "h100-sxm",
    tp_options: Sequence[int] = (1, 2, 4, 8, 16),
) -> list[dict[str, Any]]:
    """Four-dimension evaluation of every chip in the catalog, per role.

    For each chip and role the instance size (in ``tp_options``) that is cheapest for the role
    is used (``chips_per_instance`` for prefill, ``decode_chips_per_instance`` for decode).
    Prefill cost per million input tokens prices the mean prefill of the workload's classes at
    full utilization; decode cost per million output tokens prices one decode step at the TPOT
    target for the largest batch that fits in memory and meets TPOT at the mean decode context.
    A chip's advantage on a role is the reference chip's cost over its own (above 1: cheaper).
    """
    import numpy as np

    from pddplan.deployment import Instance, model_numbers, request_classes

    model = model_numbers(rs.model)
    sv = rs.scenario.serving
    classes = request_classes(
        rs.workload, sv.hit_rate_points_per_bin, sv.length_points, anomalous_filter=False
    )
    w = classes.weight
    mean_in = float(np.sum(w * classes.input_tokens))
    ctx = float(np.sum(w * (classes.input_tokens + classes.output_tokens / 2)))
    tpot_s = rs.scenario.sla.tpot_ms / 1e3
    rows: list[dict[str, Any]] = []
    for name in reg.index("chip"):
        chip = reg.load("chip", name)
        ds = chip.datasheet
        row: dict[str, Any] = {
            "chip": name,
            "bf16_tflops": ds.bf16_tflops,
            "memory_gb": ds.memory_gb,
            "memory_bandwidth_tb_per_s": ds.memory_bandwidth_tb_per_s,
            "scaleup_bandwidth_gb_per_s": ds.scaleup_bandwidth_gb_per_s,
            "price_usd_per_hour": chip.price.rental_usd_per_hour,
        }
        insts = [Instance(chip, model, tp, sv.decode_memory_utilization) for tp in tp_options]
        insts = [i for i in insts if i.fits]
        if not insts:
            row.update(
                chips_per_instance=None, note=f"weights do not fit in {max(tp_options)} chips"
            )
            rows.append(row)
            continue
        # each role gets the instance size that is cheapest for it
        best_p: tuple[float, int] | None = None
        best_d: tuple[float, int, int, int] | None = None
        for inst in insts:
            usd_per_s = inst.price_usd_per_hour / 3600.0
            pre = np.asarray(
                inst.prefill_s(classes.uncached_tokens, classes.cached_tokens, sv.chunk_size_tokens)
            )
            p_cost = usd_per_s * float(np.sum(w * pre)) / mean_in * 1e6
            if best_p is None or p_cost < best_p[0]:
                best_p = (p_cost, inst.tensor_parallel)
            b = inst.max_batch_at_tpot(ctx, tpot_s)
            d_cost = usd_per_s * tpot_s / b * 1e6 if b >= 1 else math.inf
            if best_d is None or d_cost < best_d[0]:
                best_d = (d_cost, inst.tensor_parallel, b, inst.max_batch_memory(ctx))
        assert best_p is not None and best_d is not None
        d_cost, d_tp, b, b_mem = best_d
        row.update(
            chips_per_instance=best_p[1],
            prefill_usd_per_mtok_input=best_p[0],
            decode_chips_per_instance=d_tp,
            decode_usd_per_mtok_output=d_cost,
            decode_batch=b,
            decode_batch_memory_limit=b_mem,
            decode_batch_bound_by="memory"
            if b >= 1 and b >= b_mem
            else ("TPOT" if b >= 1 else "TPOT (even batch 1 misses it)"),
            note="",
        )
        rows.append(row)
    ref = next((r for r in rows if r["chip"] == reference and r.get("chips_per_instance")), None)
    for r in rows:
        if not r.get("chips_per_instance") or ref is None:
            r.update(prefill_advantage=None, decode_advantage=None, best_role=None)
            continue
        pa = ref["prefill_usd_per_mtok_input"] / r["prefill_usd_per_mtok_input"]
        da = (
            ref["decode_usd_per_mtok_output"] / r["decode_usd_per_mtok_output"]
            if math.isfinite(r["decode_usd_per_mtok_output"])
            else 0.0
        )
        r.update(
            prefill_advantage=pa, decode_advantage=da, best_role="prefill" if pa >= da else "decode"
        )
    rows.sort(
        key=lambda r: (
            r.get("chips_per_instance") is None,
            -(max(r.get("prefill_advantage") or 0, r.get("decode_advantage") or 0)),
        )
    )
    return rows
