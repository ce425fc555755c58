"""``calibrate`` (a chip's efficiency derates) and ``calibrate_link`` (a link's transfer
parameters) fitted to measurements."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pddplan.api.command_options import CalibrateOptions
from pddplan.api.options import validate
from pddplan.api.scenario import PathLike, Profiles, library_warning, registry
from pddplan.errors import OptionError, ProfileError, write_failed

if TYPE_CHECKING:
    from pddplan.results import CalibrateResult, LinkCalibrateResult

_D = CalibrateOptions()


def calibrate(
    measurements: PathLike,
    *,
    chip: str,
    model: str,
    write: PathLike | None = None,
    chunk_size_tokens: int = _D.chunk_size_tokens,
    fix: Sequence[str] = (),
    profiles: Profiles = None,
    warn: Callable[[str], None] | None = None,
) -> CalibrateResult:
    """Fit a chip's efficiency derates to measured prefill latencies and decode step times.

    Parameters
    ----------
    measurements : CSV of measurements (docs/calibrate.md).
    chip, model : the chip profile whose derates are fitted and the model measured.
    write : write the calibrated chip profile (``.yaml``; its name is the file's stem).
    chunk_size_tokens : [tokens] prefill chunk of the measured engine.
    fix : derates held at the chip's values.
    warn : receives diagnostics (default: :class:`PddplanWarning` warnings).
    """
    from pddplan.calibrate import (
        PARAMETER_NAMES,
        calibrated_chip,
        read_measurements,
    )
    from pddplan.deployment import model_numbers
    from pddplan.results.calibrate import CalibrateResult, calibrate_report

    say = warn or library_warning
    fix = [fix] if isinstance(fix, str) else list(fix)
    for name in fix:
        if name not in PARAMETER_NAMES:
            raise OptionError(
                "fix", f": {name!r} is not a derate (allowed: {', '.join(PARAMETER_NAMES)})"
            )
    o = validate(CalibrateOptions, chunk_size_tokens=chunk_size_tokens)
    write_path = _yaml_path(write)
    reg = registry(profiles)
    chip_spec = reg.load("chip", chip)
    model_spec = reg.load("model", model)
    path = Path(measurements)
    data = read_measurements(path)
    numbers = model_numbers(model_spec)
    fit = _fit_chip(chip_spec, numbers, data, o.chunk_size_tokens, fix, path, chip, model, say)
    profile_file = None
    if write_path is not None:
        _check_writable_fit(fit, path)
        profile = calibrated_chip(
            chip_spec, fit, write_path.stem, str(path), model, o.chunk_size_tokens
        )
        profile_file = _write(write_path, profile.model_dump(mode="json"), "chip")
    built = calibrate_report(data, fit, chip, model, o.chunk_size_tokens, str(path), profile_file)
    return CalibrateResult(fit, data, profile_file, built)


def _fit_chip(
    chip_spec: Any,
    numbers: Any,
    data: Any,
    chunk_size_tokens: int,
    fix: list[str],
    path: Path,
    chip: str,
    model: str,
    say: Callable[[str], None],
) -> Any:
    """The derates fitted (warning when the weights do not fit a row's tp, or the fit does
    not converge). A row whose tp is no instance of the model on the chip (:meth:`Instance.
    why_not`: the heads, or a node without scale-out) is an error naming its line and column,
    as every other invalid row is."""
    import numpy as np

    from pddplan.calibrate import (
        TTFT_OFFSET,
        default_derates,
        fit_derates,
        instance_predictor,
        structural_reasons,
    )
    from pddplan.calibrate.cells import Where
    from pddplan.calibrate.fit import fit_warnings
    from pddplan.deployment import Instance

    why_not = {
        t: Instance(chip_spec, numbers, t).why_not() for t in {int(t) for t in data.tensor_parallel}
    }
    bad = next(
        (
            (n, int(t))
            for n, t in zip(data.line, data.tensor_parallel, strict=True)
            if why_not[int(t)]
        ),
        None,
    )
    if bad is not None:
        line, tp = bad
        # every tp that can run: none above the heads (they do not divide them)
        ok = [
            t for t in range(1, numbers.heads + 1) if not Instance(chip_spec, numbers, t).why_not()
        ]
        raise Where(str(path), line).error(
            f"{why_not[tp]} (allowed for {model} on {chip}: tp {', '.join(map(str, ok)) or 'none'})",
            "tp",
        )
    for tp in sorted(why_not):
        if not Instance(chip_spec, numbers, tp).fits:
            say(
                f"{model} weights do not fit on {tp} x {chip} (rows with tp = {tp}); "
                "check the model and the tp column"
            )
    structural = structural_reasons(data, chip_spec, numbers)
    if "layer_latency_us" in fix:
        # the per-step latency is then fitted as step_overhead_ms instead
        structural.pop("step_overhead_ms", None)
    try:
        fit = fit_derates(
            data.latency_s,
            instance_predictor(chip_spec, numbers, data, chunk_size_tokens),
            default_derates(chip_spec),
            fixed=fix,
            nuisance=[TTFT_OFFSET.name] if data.is_ttft.any() else [],
            unidentifiable=structural,
        )
    except (np.linalg.LinAlgError, ValueError) as exc:
        raise ProfileError(
            f"the measurements cannot be fitted ({exc}); check the rows' values",
            file=str(path),
        ) from None
    for w in fit_warnings(fit):
        say(w)
    return fit


def calibrate_link(
    measurements: PathLike,
    *,
    link: str,
    write: PathLike | None = None,
    fix: Sequence[str] = (),
    fit: Sequence[str] | None = None,
    profiles: Profiles = None,
) -> LinkCalibrateResult:
    """Fit a link's transfer parameters to measured transfer latencies (docs/links.md).

    Parameters
    ----------
    measurements : CSV of transfers: payload_bytes, latency_s and optional
        concurrent_transfers, statistic, samples, source.
    link : the link profile whose parameters are fitted.
    write : write the calibrated link profile (``.yaml``; its name is the file's stem).
    fix : parameters held at the profile's values.
    fit : when given, the only parameters fitted (the others are held); each must be
        identified by the rows, or a :class:`ProfileError` says why it is not (e.g. the
        window from rows of one payload size).
    """
    import numpy as np

    from pddplan.calibrate.fit import fit_warnings
    from pddplan.calibrate.link import calibrated_link, fit_link, read_link_measurements
    from pddplan.results.calibrate import LinkCalibrateResult, link_calibrate_report

    fix = [fix] if isinstance(fix, str) else list(fix)
    only = None if fit is None else [fit] if isinstance(fit, str) else list(fit)
    write_path = _yaml_path(write)
    spec = registry(profiles).load("link", link)
    path = Path(measurements)
    data = read_link_measurements(path)
    warnings = list(data.skipped)
    try:
        result = fit_link(spec, data, fix, only)
    except (np.linalg.LinAlgError, ValueError) as exc:
        raise ProfileError(
            f"the measurements cannot be fitted ({exc}); check the rows' values",
            file=str(path),
        ) from None
    warnings.extend(fit_warnings(result))
    if result.not_identified:
        warnings.append(
            ", ".join(result.not_identified)
            + " not identified by these rows (kept at the profile's values; the parameters "
            "table says why)"
        )
    profile_file = None
    if write_path is not None:
        _check_writable_fit(result, path)
        prof = calibrated_link(result, write_path.stem, str(path))
        profile_file = _write(write_path, prof.model_dump(mode="json"), "link")
    built = link_calibrate_report(data, result, link, str(path), profile_file, warnings)
    return LinkCalibrateResult(result, profile_file, built)


def _check_writable_fit(fit: Any, path: Path) -> None:
    """A fit is written as a profile only where nothing says not to trust it
    (:func:`~pddplan.calibrate.fit.fit_warnings`: a fit that did not converge, or a parameter
    driven to an end of its range): latencies in seconds typed into ``latency_ms`` wrote a
    chip at ``memory_bandwidth_efficiency`` 1.0 with a 72,418% median error, exit 0."""
    from pddplan.calibrate.fit import fit_warnings

    found = fit_warnings(fit)
    if found:
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        raise ProfileError(
            f"no profile written: {found[0]}{more}; run without --write to see the fit "
            "(a unit in the wrong column?)",
            file=str(path),
        )


def _yaml_path(write: PathLike | None) -> Path | None:
    """``write`` as a path, checked to end in ``.yaml``."""
    write_path = None if write is None else Path(write)
    if write_path is not None and write_path.suffix != ".yaml":
        raise OptionError("write", f": the profile file must end in .yaml, not {write_path.name!r}")
    return write_path


def _write(path: Path, data: dict[str, Any], kind: str) -> str:
    """Write a calibrated profile of ``kind`` (``chip`` or ``link``) and read it back."""
    from pddplan.io.profile_writer import CHIP_PROFILE_HEADER, LINK_PROFILE_HEADER, write_profile

    header = CHIP_PROFILE_HEADER if kind == "chip" else LINK_PROFILE_HEADER
    try:
        write_profile(path, data, kind, header)
    except OSError as exc:
        raise write_failed(path, exc, "write") from None
    return str(path)
