"""``pddplan calibrate``: fit a chip's derates to measured latencies, optionally write a profile."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from pddplan.cli import common

if TYPE_CHECKING:
    from pddplan.calibrate import FitResult, Measurements
    from pddplan.results import Report

PROFILE_HEADER = (
    "# Calibrated chip profile written by `pddplan calibrate` (format: profiles/README.md).\n"
    "# Only the derates differ from the chip it was fitted from; see derates.source.\n"
)


def calibrate_cmd(
    measurements: Annotated[
        Path,
        typer.Argument(
            help="CSV of measurements: phase (prefill|ttft|decode), tokens, batch, context, tp, "
            "latency_ms, source. See docs/calibrate.md.",
            dir_okay=False,
        ),
    ],
    chip: Annotated[str, typer.Option("--chip", help="Chip profile whose derates are fitted.")],
    model: Annotated[
        str, typer.Option("--model", help="Model profile the rows were measured with.")
    ],
    write: Annotated[
        Path | None,
        typer.Option(
            "--write",
            help="Write the calibrated chip profile to FILE.yaml (its name is the file stem).",
            dir_okay=False,
        ),
    ] = None,
    chunk_size: Annotated[
        int,
        typer.Option("--chunk-size", min=1, help="Prefill chunk of the measured engine [tokens]."),
    ] = 8192,
    fix: Annotated[
        list[str] | None,
        typer.Option("--fix", help="Hold a derate at the chip's value (repeatable)."),
    ] = None,
    fmt: common.FormatOpt = "table",
    output: common.OutputOpt = None,
) -> None:
    """Fit a chip's efficiency derates to measured prefill latencies and decode step times.

    Reports the error of the chip's derates and of the fitted ones (median and max absolute %),
    which derates the rows identify, and the prediction for every row. With --write, saves a
    complete chip profile with the fitted derates for solve (--profiles DIR, DIR/chips/FILE).

    Example: pddplan calibrate examples/measurements/h100-published.csv --chip h100-sxm --model llama-3.3-70b
    """
    from pddplan.calibrate import (
        PARAMETER_NAMES,
        TTFT_OFFSET,
        calibrated_chip,
        default_derates,
        fit_derates,
        instance_predictor,
        read_measurements,
        structural_reasons,
    )
    from pddplan.deployment import Instance, model_numbers
    from pddplan.errors import UsageError

    common.check_format(fmt)
    for name in fix or []:
        if name not in PARAMETER_NAMES:
            raise UsageError(
                f"--fix: {name!r} is not a derate (allowed: {', '.join(PARAMETER_NAMES)})"
            )
    if write is not None and write.suffix != ".yaml":
        raise UsageError(f"--write: the profile file must end in .yaml, not {write.name!r}")

    reg = common.registry()
    chip_spec = reg.load("chip", chip)
    model_spec = reg.load("model", model)
    data = read_measurements(measurements)
    numbers = model_numbers(model_spec)
    for tp in sorted({int(t) for t in data.tensor_parallel}):
        if not Instance(chip_spec, numbers, tp).fits:
            common.info(
                f"pddplan: warning: {model} weights do not fit on {tp} x {chip} "
                f"(rows with tp = {tp}); check --model and the tp column"
            )

    structural = structural_reasons(data, chip_spec, numbers)
    if "layer_latency_us" in (fix or ()):
        # the per-step latency is then fitted as step_overhead_ms instead
        structural.pop("step_overhead_ms", None)
    fit = fit_derates(
        data.latency_s,
        instance_predictor(chip_spec, numbers, data, chunk_size),
        default_derates(chip_spec),
        fixed=fix or (),
        nuisance=[TTFT_OFFSET.name] if data.is_ttft.any() else [],
        unidentifiable=structural,
    )
    if not fit.success:
        common.info(f"pddplan: warning: the fit did not converge: {fit.message}")

    profile_file = None
    if write is not None:
        profile = calibrated_chip(chip_spec, fit, write.stem, str(measurements), model, chunk_size)
        _write_profile(write, profile.model_dump(mode="json"))
        profile_file = str(write)
        common.info(f"pddplan: wrote chip profile {write.stem!r} to {write}")

    rep = _report(data, fit, chip, model, chunk_size, str(measurements), profile_file)
    common.emit(rep, fmt, output)


def _write_profile(path: Path, data: dict[str, Any]) -> None:
    """Write a chip profile as YAML and check that the loader reads it back as kind chip."""
    import yaml

    from pddplan.errors import UsageError
    from pddplan.loader import load_file

    text = PROFILE_HEADER + yaml.safe_dump(
        data, sort_keys=False, allow_unicode=True, width=100, default_flow_style=False
    )
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"--write: cannot write {path}: {exc.strerror}") from None
    load_file(path, "chip")


def _report(
    data: Measurements,
    fit: FitResult,
    chip: str,
    model: str,
    chunk_size_tokens: int,
    file: str,
    profile_file: str | None,
) -> Report:
    from pddplan.results import Report, Section

    params = [
        {
            "parameter": p.name,
            "unit": p.unit,
            "default": p.default,
            "fitted": p.fitted,
            "stderr": p.stderr,
            "sensitivity": p.sensitivity,
            "in_profile": p.in_profile,
            "status": p.status,
        }
        for p in fit.parameters
    ]
    nuisance = [p for p in fit.parameters if not p.in_profile and p.was_fitted]
    summaries = [("default", fit.default_errors), ("fitted", fit.fitted_errors)]
    if nuisance:
        summaries.append(("fitted, profile only", fit.profile_errors))
    errors = [
        {
            "derates": label,
            "median_abs_error_pct": e.median_abs_pct,
            "max_abs_error_pct": e.max_abs_pct,
            "rows": len(data),
        }
        for label, e in summaries
    ]
    rows = []
    for i in range(len(data)):
        measured_ms = fit.measured_s[i] * 1e3
        rows.append(
            {
                "line": data.line[i],
                "phase": str(data.phase[i]),
                "tokens": int(data.tokens[i]),
                "batch": int(data.batch[i]),
                "context_tokens": int(data.context_tokens[i]),
                "tp": int(data.tensor_parallel[i]),
                "measured_ms": measured_ms,
                "default_ms": fit.default_s[i] * 1e3,
                "default_error_pct": (fit.default_s[i] / fit.measured_s[i] - 1.0) * 100.0,
                "fitted_ms": fit.fitted_s[i] * 1e3,
                "fitted_error_pct": (fit.fitted_s[i] / fit.measured_s[i] - 1.0) * 100.0,
            }
        )
    fitted = [p.name for p in fit.parameters if p.was_fitted]
    kept = [p.name for p in fit.parameters if not p.was_fitted]
    notes = [
        f"{len(data)} rows from {file}; chip {chip}, model {model}, prefill chunk "
        f"{chunk_size_tokens} tokens; least squares on log latency.",
        f"fitted: {', '.join(fitted) or 'none'}; kept at the chip's values: "
        f"{', '.join(kept) or 'none'} (see status).",
    ]
    if nuisance:
        notes.append(
            "ttft_offset_ms: per-request time in the ttft rows outside the engine steps "
            "(HTTP, tokenization, scheduling), fitted so that it does not distort the derates; "
            "it is not written to a profile ('fitted, profile only' leaves it out)."
        )
    if not fit.success:
        notes.append(f"the fit did not converge: {fit.message}")
    if profile_file is not None:
        notes.append(
            f"chip profile written to {profile_file}: put it in DIR/chips/ and run "
            "pddplan --profiles DIR ..., or copy its derates into a scenario's overrides."
        )
    payload = {
        "measurements_file": file,
        "chip": chip,
        "model": model,
        "chunk_size_tokens": chunk_size_tokens,
        "parameters": params,
        "derates": fit.derates,
        "errors": {
            str(e["derates"]).replace(", ", "_").replace(" ", "_"): {
                k: v for k, v in e.items() if k != "derates"
            }
            for e in errors
        },
        "rows": [{**r, "source": data.source[i]} for i, r in enumerate(rows)],
        "fit": {
            "success": fit.success,
            "message": fit.message,
            "evaluations": fit.evaluations,
            "collinearity_index": fit.collinearity,
        },
        "profile_file": profile_file,
    }
    return Report(
        f"calibration of {chip} derates ({model}, {file})",
        [Section("derates", params), Section("errors", errors), Section("rows", rows)],
        payload,
        notes,
    )


def register(app: typer.Typer) -> None:
    app.command("calibrate")(calibrate_cmd)
