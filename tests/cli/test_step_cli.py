"""``pddplan step``: the help's example runs, JSON keys, bad layouts and every chip x model."""

from __future__ import annotations

import json
import shlex

import pytest
from typer.testing import CliRunner

from pddplan.cli import app
from pddplan.deployment import Layout, layouts_for, model_numbers
from pddplan.errors import UsageError
from pddplan.io.loader import Registry
from pddplan.step import step

runner = CliRunner()


def test_help_example_runs() -> None:
    from pddplan.cli.step_cmd import step_cmd

    assert "Example: pddplan step" in runner.invoke(app, ["step", "--help"]).output
    line = next(x for x in (step_cmd.__doc__ or "").splitlines() if "Example: pddplan" in x)
    args = shlex.split(line.split("Example: pddplan ", 1)[1]) + ["-f", "json"]
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    for key in (
        "prefill_s",
        "decode_step_s",
        "prefill_tokens_per_s_per_chip",
        "decode_tokens_per_s_per_chip",
    ):
        assert doc[key] > 0


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--model", "llama-3.3-70b", "--tp", "2", "--ep", "2"], "needs a mixture-of-experts"),
        (["--model", "deepseek-v3", "--tp", "3"], "does not divide the model's 128 attention"),
        (["--model", "deepseek-v3", "--tp", "1", "--dp", "6", "--ep", "4"], "does not divide"),
        (["--model", "qwen3-235b-a22b", "--tp", "1", "--dp", "3", "--ep", "3"], "128 routed"),
    ],
)
def test_bad_layouts_are_one_line_errors(args: list[str], needle: str) -> None:
    base = ["step", "--chip", "h100-sxm", "--batch", "1", "--input-tokens", "8"]
    res = runner.invoke(app, [*base, "--context-tokens", "8", *args])
    assert isinstance(res.exception, UsageError)  # main() prints it as one line, exit 2
    assert UsageError.exit_code == 2
    assert needle in str(res.exception) and "\n" not in str(res.exception)


def test_every_chip_and_model_answers_or_says_why() -> None:
    reg = Registry.default()
    for model_name in sorted(reg.index("model")):
        spec = reg.load("model", model_name)
        m = model_numbers(spec)
        for chip_name in sorted(reg.index("chip")):
            chip = reg.load("chip", chip_name)
            for lay in layouts_for(chip, m, 8) or [Layout(8)]:
                if lay.problems(m):
                    continue
                r = step(chip, spec, lay, 8, 1000, 2000)
                assert r.prefill_s > 0 and r.decode_step_s > 0
                assert r.fits or r.why_not


def test_the_step_api_checks_its_numbers_as_every_command_does() -> None:
    # api.step had no options model: nan prefilled in nan seconds and "fit", a float or a
    # bool passed as a batch, a string raised a TypeError
    import math

    import pytest

    import pddplan
    from pddplan.errors import OptionError

    base = dict(
        model="llama-3.3-70b", chip="h100-sxm", tp=4, batch=1, input_tokens=1000, context_tokens=1
    )
    for bad, words in (
        ({"input_tokens": math.nan}, "input_tokens must be a whole number >= 1, not nan"),
        ({"batch": 2.5}, "batch must be a whole number >= 1, not 2.5"),
        ({"batch": True}, "batch must be a whole number >= 1, not True"),
        ({"input_tokens": "64k"}, "input_tokens must be a whole number >= 1, not '64k'"),
        ({"ep": 10**6}, "ep must be a whole number in [1, 65536], not 1000000"),
    ):
        with pytest.raises(OptionError) as err:
            pddplan.step(**{**base, **bad})
        assert str(err.value) == words
    with pytest.raises(OptionError, match="payload_bytes must be .* not '4649KB'"):
        pddplan.transfer("wan-100g-cross-city", payload_bytes="4649KB")


def test_a_batch_past_the_searchs_cap_fits_where_its_kv_does() -> None:
    # the search caps a decode batch at 2^20 sequences; step's fit verdict read that cap as
    # the memory's and said 2,000,000 one-token sequences do not fit (1048576 do)
    import pddplan

    res = pddplan.step(
        model="llama-3.3-70b",
        chip="mi355x",
        tp=8,
        batch=2_000_000,
        input_tokens=10,
        context_tokens=1,
    )
    t = res.times
    assert t.max_batch_in_memory > 2_000_000 and t.fits, t.why_not


def test_a_decode_steps_time_per_output_token_is_the_solvers() -> None:
    # DeepSeek-V3 emits 1.85 tokens a step (MTP): step's decode time_s is per step (56.3 ms),
    # the solver's Instance.decode_step_s per output token (30.4 ms, what TPOT reads); the
    # table, CSV and markdown gave the first alone
    import pddplan
    from pddplan.deployment import Instance, model_numbers
    from pddplan.io.loader import Registry

    res = pddplan.step(
        model="deepseek-v3",
        chip="h800-sxm",
        tp=16,
        batch=388,
        input_tokens=1000,
        context_tokens=2200,
    )
    (decode,) = [r for r in res.report().sections[0].rows if r["phase"] == "decode"]
    reg = Registry.default([])
    inst = Instance(
        reg.load("chip", "h800-sxm"), model_numbers(reg.load("model", "deepseek-v3")), 16
    )
    assert decode["tokens_per_step"] == pytest.approx(1.85)
    assert decode["time_per_output_token_s"] == pytest.approx(
        inst.decode_step_s(388, 2200), rel=1e-12
    )
    assert decode["time_s"] == pytest.approx(decode["time_per_output_token_s"] * 1.85, rel=1e-12)
