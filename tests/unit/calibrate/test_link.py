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


def _synthetic(truth, sizes, stat="mean"):
    """Rows of the given sizes whose latencies are the model's at ``truth``."""
    probe = parse_link_measurements(_csv([(x, 1.0, stat) for x in sizes]), "probe.csv")
    t = predict_s(truth, probe)
    rows = [(x, float(v), stat) for x, v in zip(sizes, t, strict=True)]
    return parse_link_measurements(_csv(rows), "synthetic.csv"), t


def test_several_sizes_identify_streams_x_window_apart_from_rtt() -> None:
    # 8 streams (one per prefill GPU) of a 12 MiB window over 27 ms: the per-transfer ceiling
    # 8 x 12 MiB / 27 ms = 3.73 GB/s, below the 100G line's 11.75 GB/s goodput and below the
    # loss ceiling at 1e-8 (8 x 804 MB/s); small sizes end in slow start (the round trips),
    # large ones are bound by the window
    base = (
        Registry.default()
        .load("link", "wan-100g-cross-city")
        .model_copy(update={"loss_rate": 1e-8})
    )
    assert base.streams_per_transfer == 8
    truth = base.model_copy(
        update={"rtt_ms": 27.0, "per_transfer_latency_ms": 6.0, "max_window_bytes": 12 * 2**20}
    )
    sizes = [1e4, 1e5, 3e5, 1e6, 4.649e6, 1e7, 1e8, 1e9, 3e9, 1.2e10]
    data, t = _synthetic(truth, sizes)
    fit = fit_link(base, data)
    got = {p.name: p for p in fit.parameters}
    for name in ("rtt_ms", "per_transfer_latency_ms", "max_window_bytes"):
        assert got[name].was_fitted, (name, got[name].status)
    assert got["rtt_ms"].fitted == pytest.approx(27.0, rel=1e-3)
    assert got["per_transfer_latency_ms"].fitted == pytest.approx(6.0, rel=1e-2)
    assert fit.transfer_window_bytes == pytest.approx(8 * 12 * 2**20, rel=1e-3)
    assert fit.rate_cap_bytes_per_s == pytest.approx(8 * 12 * 2**20 / 0.027, rel=2e-3)
    assert np.allclose(fit.fitted_s, t, rtol=1e-4)
    assert "loss_rate" in fit.not_identified  # the window binds: the loss ceiling is hidden
    # the fit started far off: the profile's ceiling (8 x 4 MiB / 20 ms) is 2.2x lower
    assert fit.profile_s[-1] > 1.5 * t[-1]


def test_one_size_cannot_identify_the_window() -> None:
    data = parse_link_measurements(
        _csv([(4.649e6, 0.185, "mean"), (4.649e6, 0.31, "p99")]), "brief.csv"
    )
    base = Registry.default().load("link", "wan-100g-cross-city")
    fit = fit_link(base, data)
    status = {p.name: p.status for p in fit.parameters}
    assert "one payload size" in status["max_window_bytes"]
    assert "one payload size" in status["loss_rate"]
    with pytest.raises(ProfileError) as exc:
        fit_link(base, data, fit=["max_window_bytes"])
    msg = str(exc.value)
    assert msg.startswith("brief.csv: max_window_bytes: cannot be identified")
    assert "one payload size (4,649,000 B)" in msg and "\n" not in msg


def test_fit_only_the_latency_keeps_the_route_rtt() -> None:
    # the brief's microbenchmark, one mean row: with RTT from the route, it identifies the
    # per-transfer latency the 185 ms needs on top of the round trips of slow start
    data = parse_link_measurements(_csv([(4.649e6, 0.185, "mean")]), "brief.csv")
    base = Registry.default().load("link", "wan-100g-cross-city")
    fit = fit_link(base, data, fit=["per_transfer_latency_ms"])
    got = {p.name: p for p in fit.parameters}
    assert got["rtt_ms"].fitted == base.rtt_ms and got["rtt_ms"].status == "held fixed"
    assert got["per_transfer_latency_ms"].was_fitted
    assert fit.fitted_s[0] == pytest.approx(0.185, rel=1e-6)
    with pytest.raises(UsageError, match="both fitted and held fixed"):
        fit_link(base, data, fixed=["rtt_ms"], fit=["rtt_ms"])
    with pytest.raises(UsageError, match="fit: 'window' is not a link parameter"):
        fit_link(base, data, fit=["window"])


def test_cli_one_size_window_is_one_line_and_an_exit_code(tmp_path) -> None:
    # only pddplan.cli.main maps errors to exit codes: a real subprocess
    import os
    import subprocess
    import sys
    from pathlib import Path

    from time_limits import child_cpu_limit

    csv_file = tmp_path / "one-size.csv"
    csv_file.write_text(_csv([(4.649e6, 0.185, "mean"), (4.649e6, 0.2, "sample")]))
    argv = [
        "calibrate",
        str(csv_file),
        "--link",
        "wan-100g-cross-city",
        "--fit",
        "max_window_bytes",
    ]
    r = subprocess.run(
        [sys.executable, "-m", "pddplan", *argv],
        cwd=Path(__file__).resolve().parents[3],
        env={k: v for k, v in os.environ.items() if k != "PDDPLAN_PROFILES"},
        capture_output=True,
        text=True,
        preexec_fn=child_cpu_limit(120),  # CPU seconds, not wall-clock
    )
    assert r.returncode == 1 and r.stdout == ""
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "max_window_bytes: cannot be identified" in lines[0]
    assert "one payload size" in lines[0]


def test_the_shipped_synthetic_rows_are_the_model_s_means() -> None:
    # examples/measurements/README.md: each row of synthetic-multisize-link.csv is
    # predict_s on wan-100g-cross-city with rtt_ms 24, per_transfer_latency_ms 5 and
    # max_window_bytes 3 MiB (8 streams), written to 6 significant digits; regenerate the file on
    # purpose when the model moves
    from pathlib import Path

    from pddplan.calibrate.link import with_values

    path = (
        Path(__file__).resolve().parents[3] / "examples/measurements/synthetic-multisize-link.csv"
    )
    data = parse_link_measurements(path.read_text(), str(path))
    truth = with_values(
        Registry.default().load("link", "wan-100g-cross-city"),
        {"rtt_ms": 24.0, "per_transfer_latency_ms": 5.0, "max_window_bytes": 3 * 2**20},
    )
    got = [float(f"{t:.6g}") for t in predict_s(truth, data)]
    assert got == data.latency_s.tolist()


def test_a_parameter_fitted_to_its_bound_is_marked_and_warned(tmp_path) -> None:
    # one 4.6 MB transfer "measured" at 1 ns: the fit drives the RTT to its lower bound; the
    # chip calibration marked such a parameter "fitted (at bound)", the link calibration said
    # "fitted" and wrote it without a word
    import pddplan

    f = tmp_path / "one.csv"
    f.write_text(
        "payload_bytes,latency_s,concurrent_transfers,statistic,samples,source\n"
        "4649000,1e-9,1,mean,,a test\n",
        encoding="utf-8",
    )
    res = pddplan.calibrate_link(str(f), link="wan-100g-cross-city")
    rtt = res.fit.parameter("rtt_ms")
    assert rtt.status == "fitted (at bound)" and rtt.was_fitted
    assert any("rtt_ms was fitted at an end of its range" in w for w in res.report().warnings)
