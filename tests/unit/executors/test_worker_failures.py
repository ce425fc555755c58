"""A failure or an interrupt in parallel work reaches the user as it would in one process.

Each test failed before its fix: an OptionError or OverrideError raised in a worker could not
be unpickled (the pool reported itself broken, with a traceback); a block left by an error
waited for every queued chunk; a robust sample the scenario does not allow named a ``--set``
the user never gave; a sweep point whose TTFT targets are out of order stopped the whole sweep
as an "internal error"; and Ctrl-C inside a command exited 130 without a word.
"""

from __future__ import annotations

import pickle
import time
from pathlib import Path

import pytest

import pddplan
from pddplan.errors import (
    InfeasibleError,
    InvariantError,
    OptionError,
    OverrideError,
    PddplanError,
    ProfileError,
    UsageError,
)
from pddplan.executors import LocalExecutor

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize(
    "err",
    [
        OverrideError("not allowed", key="sla.ttft_p50_s", value=9.0),
        OptionError("rate_rps", "must be a rate"),
        ProfileError("bad", file="f.yaml", key="k", line=3),
        InfeasibleError("none fits", binding="P", relaxation="more chips"),
        InvariantError("order"),
        UsageError("no"),
    ],
    ids=lambda e: type(e).__name__,
)
def test_every_error_crosses_a_process_whole(err: PddplanError) -> None:
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is type(err)
    assert str(back) == str(err) and back.__dict__ == err.__dict__
    assert back.exit_code == err.exit_code


def _fails_on_zero(x: int) -> int:
    if x == 0:
        raise OverrideError("not allowed", key="k", value=x)
    time.sleep(0.2)
    return x


def test_a_workers_error_is_raised_as_itself_and_stops_the_pool() -> None:
    ex = LocalExecutor(2)
    with pytest.raises(OverrideError, match="overrides: k: not allowed"), ex:
        ex.map(_fails_on_zero, list(range(40)))
    pools = [p for p in (ex._pool, *ex._lanes) if p is not None]
    assert pools == []  # shut down, its processes stopped (not left to run 39 chunks)


def test_a_sample_the_scenario_does_not_allow_names_the_file(tmp_path: Path) -> None:
    text = (ROOT / "profiles" / "scenarios" / "default.yaml").read_text(encoding="utf-8")
    f = tmp_path / "xsla.yaml"
    f.write_text(
        text
        + "uncertainty:\n  inputs:\n"
        + "    sla.ttft_p50_s: {uniform: {low: 5.0, high: 9.9}}\n"
        + "    sla.ttft_p90_s: {uniform: {low: 5.1, high: 10.0}}\n",
        encoding="utf-8",
    )
    for jobs in (1, 2):
        with pytest.raises(ProfileError) as info:
            pddplan.robust(f, samples=20, jobs=jobs)
        err = info.value
        assert err.file == str(f) and err.key == "uncertainty.inputs"
        assert "sla.ttft_p50_s=" in err.detail and "sla.ttft_p90_s=" in err.detail
        assert "p50 <= p90 <= p99" in err.detail and "chips." not in err.detail


def test_a_sweep_point_with_targets_out_of_order_is_a_row_of_its_own() -> None:
    res = pddplan.sweep(axes={"sla.ttft_p50_s": [5, 9], "sla.ttft_p90_s": [6, 10]}, baselines=False)
    doc = res.to_json()
    feasible = [p["feasible"] for p in doc["points"]]
    assert feasible == [True, True, False, True]
    assert "p50 <= p90 <= p99" in doc["points"][2]["binding"]
    # every format renders it (the output's invariant check read the axes as percentiles)
    from pddplan.results.invariants import check_report

    for fmt in ("table", "csv", "md", "json"):
        check_report(res.report(), fmt)


def test_an_interrupt_inside_a_command_is_said(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from pddplan import api
    from pddplan.cli import main

    def interrupted(*_a: object, **_k: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(api, "transfer", interrupted)
    with pytest.raises(SystemExit) as exc:
        main(["transfer", "wan-10g-same-city", "--bytes", "1GB"])
    assert exc.value.code == 130
    assert capsys.readouterr().err == "pddplan: interrupted\n"
