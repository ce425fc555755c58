"""The result of ``calibrate``: fitted derates, errors before and after, every row's prediction."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pddplan.results.base import Report, Result, Row, Section

if TYPE_CHECKING:
    from pddplan.calibrate import FitResult, Measurements


@dataclass(frozen=True)
class CalibrateResult(Result):
    """A chip's derates fitted to measured latencies.

    Attributes
    ----------
    fit : the least-squares fit (parameters, predictions, errors).
    data : the measurements.
    profile_file : the chip profile written (None when not asked for).
    built : the sections and JSON document, computed when the result was built.
    """

    fit: FitResult
    data: Measurements
    profile_file: str | None
    built: Report

    @property
    def derates(self) -> dict[str, float]:
        return dict(self.fit.derates)

    def report(self) -> Report:
        return copy.deepcopy(self.built)


def calibrate_report(
    data: Measurements,
    fit: FitResult,
    chip: str,
    model: str,
    chunk_size_tokens: int,
    file: str,
    profile_file: str | None,
) -> Report:
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
    rows: list[Row] = []
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


@dataclass(frozen=True)
class LinkCalibrateResult(Result):
    """A link's transfer parameters fitted to measured transfers.

    Attributes
    ----------
    fit : the least-squares fit (:class:`pddplan.calibrate.link.LinkFit`).
    profile_file : the link profile written (None when not asked for).
    built : the sections and JSON document, computed when the result was built.
    """

    fit: Any
    profile_file: str | None
    built: Report

    def report(self) -> Report:
        return copy.deepcopy(self.built)


def link_calibrate_report(
    data: Any, fit: Any, link: str, file: str, profile_file: str | None, warnings: list[str]
) -> Report:
    params: list[Row] = [
        {
            "parameter": p.name,
            "unit": p.unit,
            "profile": p.profile,
            "fitted": p.fitted,
            "stderr": p.stderr,
            "sensitivity": p.sensitivity,
            "status": p.status,
        }
        for p in fit.parameters
    ]
    rows: list[Row] = [
        {
            "line": data.line[i],
            "payload_bytes": float(data.payload_bytes[i]),
            "concurrent_transfers": int(data.concurrent[i]),
            "statistic": data.statistic[i],
            "measured_s": float(fit.measured_s[i]),
            "profile_s": float(fit.profile_s[i]),
            "profile_error_pct": float((fit.profile_s[i] / fit.measured_s[i] - 1) * 100),
            "fitted_s": float(fit.fitted_s[i]),
            "fitted_error_pct": float((fit.fitted_s[i] / fit.measured_s[i] - 1) * 100),
        }
        for i in range(len(data))
    ]
    payload = {
        "measurements_file": file,
        "link": link,
        "parameters": params,
        "rows": rows,
        "fit": {"success": fit.success, "message": fit.message},
        "transfer_window_bytes": fit.transfer_window_bytes,
        "rate_cap_bytes_per_s": fit.rate_cap_bytes_per_s,
        "profile_file": profile_file,
    }
    notes = [
        f"{len(data)} usable rows from {file}; link {link}; least squares on log latency "
        "against the closed-form transfer time (docs/links.md).",
        "fitted: " + (", ".join(p.name for p in fit.parameters if p.was_fitted) or "none") + ".",
        f"per-transfer ceiling: {fit.link.streams_per_transfer} stream(s) x "
        f"{fit.link.max_window_bytes:,.0f} B window = {fit.transfer_window_bytes:,.0f} B per "
        f"{fit.link.rtt_ms:g} ms round trip, at most {fit.rate_cap_bytes_per_s / 1e6:,.4g} MB/s "
        "(the streams are held; rows identify only their product with the window).",
    ]
    if profile_file is not None:
        notes.append(
            f"link profile written to {profile_file}: put it in DIR/links/ and run "
            "pddplan --profiles DIR ..."
        )
    return Report(
        f"calibration of link {link} ({file})",
        [Section("parameters", params), Section("rows", rows)],
        payload,
        notes,
        warnings=warnings,
    )
