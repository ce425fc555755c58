"""Link calibration: recovers known parameters from data the model made; bad input."""

from __future__ import annotations

import numpy as np
import pytest

from pddplan.calibrate.link import (
    calibrated_link,
    fit_link,
    parse_link_measurements,
    predict_s,
)
from pddplan.errors import OptionError, ProfileError, UsageError
from pddplan.io.loader import Registry

SIZES = [1e4, 1e5, 1e6, 4.649e6, 1e7, 1e8, 1e9, 3e9]


def _base():
    # one stream per transfer: the regimes the tests below describe (window-bound, half the
    # loss ceiling) are those of a single stream
    return (
        Registry.default()
        .load("link", "wan-10g-cross-city")
        .model_copy(update={"streams_per_transfer": 1})
    )


def _csv(rows: list[tuple[float, float, str]]) -> str:
    return "payload_bytes,latency_s,statistic\n" + "".join(f"{x},{t!r},{s}\n" for x, t, s in rows)


def test_recovers_rtt_latency_and_window_from_means() -> None:
    # a window-bound line: 3 MB / 31 ms = 96.8 MB/s, half the loss ceiling at 1e-7 (181 MB/s)
    truth = _base().model_copy(
        update={"rtt_ms": 31.0, "per_transfer_latency_ms": 4.0, "max_window_bytes": 3e6}
    )
    probe = parse_link_measurements(_csv([(x, 1.0, "mean") for x in SIZES]), "synthetic.csv")
    t = predict_s(truth, probe)
    data = parse_link_measurements(
        _csv([(x, float(v), "mean") for x, v in zip(SIZES, t, strict=True)]), "s"
    )
    fit = fit_link(_base(), data)
    got = {p.name: p for p in fit.parameters}
    assert got["rtt_ms"].was_fitted and got["rtt_ms"].fitted == pytest.approx(31.0, rel=1e-3)
    assert got["max_window_bytes"].fitted == pytest.approx(3e6, rel=1e-3)
    assert got["per_transfer_latency_ms"].fitted == pytest.approx(4.0, rel=1e-2)
    assert np.allclose(fit.fitted_s, t, rtol=1e-4)
    # means alone say nothing about the jitter; the window hides the loss rate
    assert "jitter_cv" in fit.not_identified
    assert "loss_rate" in fit.not_identified


def test_recovers_jitter_from_percentiles() -> None:
    truth = _base().model_copy(update={"jitter_cv": 0.8})
    rows = [(x, s) for x in (1e8, 1e9, 3e9) for s in ("mean", "p50", "p90", "p99")]
    probe = parse_link_measurements(_csv([(x, 1.0, s) for x, s in rows]), "p")
    t = predict_s(truth, probe)
    data = parse_link_measurements(
        _csv([(x, float(v), s) for (x, s), v in zip(rows, t, strict=True)]), "d"
    )
    fit = fit_link(_base(), data, fixed=["per_transfer_latency_ms", "rtt_ms"])
    got = {p.name: p for p in fit.parameters}
    assert got["jitter_cv"].fitted == pytest.approx(0.8, rel=1e-3)
    assert got["rtt_ms"].status == "held fixed"


def test_one_row_identifies_one_parameter_and_writes_a_valid_profile() -> None:
    data = parse_link_measurements(_csv([(4.649e6, 0.185, "mean")]), "brief.csv")
    fit = fit_link(Registry.default().load("link", "wan-100g-cross-city"), data)
    fitted = [p.name for p in fit.parameters if p.was_fitted]
    assert len(fitted) == 1
    assert fit.fitted_s[0] == pytest.approx(0.185, rel=1e-6)
    assert len(fit.not_identified) >= 4
    prof = calibrated_link(fit, "brief-line", "brief.csv")
    assert prof.name == "brief-line" and fitted[0] not in prof.estimated
    assert "pddplan calibrate" in prof.source


def test_max_rows_need_their_sample_count() -> None:
    text = (
        "payload_bytes,latency_s,statistic,samples\n"
        "4649000,0.185,mean,\n4649000,0.5126,max,\n4649000,0.5126,max,99\n"
    )
    d = parse_link_measurements(text, "m.csv")
    assert len(d) == 2 and len(d.skipped) == 1 and "m.csv:3" in d.skipped[0]
    assert d.quantile[1] == pytest.approx(0.99)  # the largest of 99: p = 99 / 100


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("payload_bytes,latency_s\n0,0.1\n", "payload_bytes: must be a number > 0"),
        ("payload_bytes,latency_s\n1000,-0.1\n", "latency_s: must be a number > 0"),
        ("payload_bytes,latency_s\n1000,abc\n", "expected a number"),
        ("payload_bytes\n1000\n", "missing column(s) latency_s"),
        ("payload_bytes,latency_s,colour\n1,1,red\n", "unknown column 'colour'"),
        ("payload_bytes,latency_s,statistic\n1,1,p95\n", "unknown statistic 'p95'"),
        ("payload_bytes,latency_s,concurrent_transfers\n1,1,0.5\n", "whole number >= 1"),
        ("payload_bytes,latency_s\n", "no usable measurements"),
        ("", "empty file"),
    ],
)
def test_bad_input_names_file_line_and_column(text: str, needle: str) -> None:
    with pytest.raises(ProfileError) as exc:
        parse_link_measurements(text, "bad.csv")
    assert needle in str(exc.value)
    assert str(exc.value).startswith("bad.csv")
    assert "\n" not in str(exc.value)


def test_unknown_fixed_parameter() -> None:
    data = parse_link_measurements(_csv([(1e6, 0.2, "mean")]), "x")
    with pytest.raises(UsageError, match="not a link parameter") as exc:
        fit_link(_base(), data, fixed=["bandwidth"])
    # the library names its option; only the CLI says --fix
    assert isinstance(exc.value, OptionError) and exc.value.option == "fix"
    assert str(exc.value).startswith("fix: 'bandwidth'")
