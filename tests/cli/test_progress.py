"""Long commands tell their progress on stderr (a terminal only), and telling it changes no
answer (issue 22: `robust`, ~6 min on a busy machine, said nothing until it ended)."""

from __future__ import annotations

import json
import sys

import pytest

import pddplan
from pddplan.cli import main


def test_robust_tells_its_progress_and_the_answer_does_not_depend_on_it() -> None:
    told: list[tuple[int, int]] = []
    quiet = pddplan.robust(samples=12, seed=3)
    loud = pddplan.robust(samples=12, seed=3, progress=lambda d, t: told.append((d, t)))
    assert told, "no progress was told"
    dones = [d for d, _ in told]
    assert dones == sorted(dones), "progress went backwards"
    assert told[0][0] == 0 and told[-1][0] == told[-1][1] == 24  # two passes of 12 samples
    assert json.dumps(quiet.to_json(), sort_keys=True) == json.dumps(loud.to_json(), sort_keys=True)


def test_robust_draws_a_bar_on_a_terminal_and_keeps_stdout_clean(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    with pytest.raises(SystemExit) as exc:
        main(["robust", "--samples", "20", "--seed", "1", "-f", "json"])
    assert exc.value.code in (0, None)
    cap = capsys.readouterr()
    assert "sampling" in cap.err
    json.loads(cap.out)  # the bar never reaches stdout


def test_no_bar_when_stderr_is_not_a_terminal(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["robust", "--samples", "20", "--seed", "1", "-f", "json"])
    assert "sampling" not in capsys.readouterr().err


def test_bathtub_tells_its_progress_and_the_answer_does_not_depend_on_it() -> None:
    told: list[tuple[int, int]] = []
    quiet = pddplan.bathtub(step=0.05)
    loud = pddplan.bathtub(step=0.05, progress=lambda d, t: told.append((d, t)))
    assert told, "no progress was told"
    dones = [d for d, _ in told]
    assert dones == sorted(dones), "progress went backwards"
    assert told[0][0] == 0 and told[-1][0] == told[-1][1] == len(loud.analysis.points)
    assert json.dumps(quiet.to_json(), sort_keys=True) == json.dumps(loud.to_json(), sort_keys=True)


def test_breakeven_tells_its_progress_and_the_answer_does_not_depend_on_it() -> None:
    told: list[tuple[int, int]] = []
    quiet = pddplan.breakeven(lo=1.0, hi=8.0)
    loud = pddplan.breakeven(lo=1.0, hi=8.0, progress=lambda d, t: told.append((d, t)))
    dones = [d for d, _ in told]
    assert told and dones == sorted(dones), told
    assert told[0] == (0, told[0][1]) and told[-1][0] == told[-1][1]
    # every solve told once: the two ends, then each bisection step
    assert sorted(set(dones)) == list(range(2 + loud.iterations + 1))
    assert json.dumps(quiet.to_json(), sort_keys=True) == json.dumps(loud.to_json(), sort_keys=True)
