"""Every API function's option checks: a bad value raises OptionError naming the option and
saying what is allowed; the functions' defaults are the option models' (one place)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import pddplan
from pddplan.api import options
from pddplan.errors import OptionError

ROOT = Path(__file__).resolve().parents[2]
NO_TRACE = "no-such-trace.jsonl"
DATA_TRACE = str(
    ROOT / "tests" / "data" / "mooncake_excerpt.jsonl"
)  # options are checked before the trace is opened
NO_CSV = "no-such-measurements.csv"

# (function, positional args, bad keyword options, the option named, what the message allows)
CASES: list[tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any], str, str]] = [
    (pddplan.solve, (), {"rate_rps": 0}, "rate_rps", "a finite number in [1e-06, 1e+06], not 0"),
    (pddplan.solve, (), {"rate_rps": 2e6}, "rate_rps", "in [1e-06, 1e+06], not 2000000.0"),
    (pddplan.solve, (), {"rate_rps": float("nan")}, "rate_rps", "a finite number"),
    (pddplan.solve, (), {"rate_rps": True}, "rate_rps", "a finite number"),
    (pddplan.solve, (), {"budget_usd_per_hour": -1}, "budget_usd_per_hour", "in [0, 1e+09]"),
    (pddplan.solve, (), {"max_rate_rps": -1.0}, "max_rate_rps", "in [1e-06, 1e+06], not -1.0"),
    (pddplan.solve, (), {"max_bcr": "yes"}, "max_bcr", "True or False"),
    (pddplan.solve, (), {"max_chips": {"gpu-a": 0}}, "max_chips", "a positive whole number"),
    (pddplan.solve, (), {"max_chips": {"h100": 8}}, "max_chips", "did you mean 'h100-sxm'"),
    (pddplan.solve, (), {"max_chips": {"h20": 8}}, "max_chips", "the scenario does not use"),
    (pddplan.solve, (), {"own": {"gpu-a": -1}}, "own", "N a whole number, not gpu-a=-1"),
    (pddplan.solve, (), {"own": {"h100": 8}}, "own", "did you mean 'h100-sxm'"),
    (pddplan.bathtub, (), {"step": 0.5}, "step", "a finite number in [0.001, 0.1], not 0.5"),
    (pddplan.bathtub, (), {"tolerance": 1.5}, "tolerance", "a finite number in [0, 1]"),
    (pddplan.bathtub, (), {"reprovision": 1}, "reprovision", "True or False, not 1"),
    (pddplan.sweep, (), {"jobs": 0}, "jobs", "a whole number in [1, 1024], not 0"),
    (pddplan.sweep, (), {"jobs": 1.5}, "jobs", "a whole number in [1, 1024]"),
    (pddplan.sweep, (), {"axes": {}}, "axes", "needs at least one PATH"),
    (pddplan.robust, (), {"samples": 1}, "samples", "a whole number >= 2, not 1"),
    (pddplan.robust, (), {"confidence": 1.0}, "confidence", "a finite number in (0, 1)"),
    (pddplan.robust, (), {"confidence": 0}, "confidence", "in (0, 1), not 0"),
    (pddplan.robust, (), {"jobs": 0}, "jobs", "a whole number in [1, 1024]"),
    (pddplan.robust, (), {"rate_rps": -1}, "rate_rps", "in [1e-06, 1e+06], not -1"),
    (pddplan.robust, (), {"seed": "x"}, "seed", "a whole number >= 0, not 'x'"),
    # robust checks max_chips as solve does (it checked only the chips the scenario uses)
    (pddplan.robust, (), {"max_chips": {"h100": 8}}, "max_chips", "did you mean 'h100-sxm'"),
    (pddplan.robust, (), {"max_chips": {"gpu-a": 0}}, "max_chips", "a positive whole number"),
    (pddplan.robust, (), {"max_chips": {"h20": 8}}, "max_chips", "the scenario does not use"),
    (
        pddplan.breakeven,
        (),
        {"against": "x"},
        "against",
        "same-dc, no-relay or no-relay-rld, not 'x'",
    ),
    (pddplan.breakeven, (), {"tolerance": 0}, "tolerance", "in [1e-09, 1], not 0"),
    (pddplan.breakeven, (), {"lo": -1e13, "hi": 1}, "lo", "in [-1e+12, 1e+12]"),
    (pddplan.breakeven, (), {"lo": 2.0, "hi": 1.0}, "hi", "must be above lo"),
    (pddplan.simulate, (), {"requests": 0}, "requests", "a whole number >= 1, not 0"),
    (pddplan.simulate, (), {"seed": -1}, "seed", "a whole number >= 0, not -1"),
    (pddplan.simulate, (), {"rate_rps": 0.0}, "rate_rps", "in [1e-06, 1e+06], not 0.0"),
    (pddplan.simulate, (), {"sample": "x"}, "sample", "classes or workload, not 'x'"),
    (pddplan.simulate, (), {"warmup_fraction": 1.0}, "warmup_fraction", "in [0, 1), not 1.0"),
    (pddplan.simulate, (), {"policy": "x"}, "policy", "must be one of"),
    (pddplan.simulate, (), {"handover": "x"}, "handover", "must be one of"),
    (pddplan.hitrate, (NO_TRACE,), {"block_tokens": 0}, "block_tokens", "a whole number >= 1"),
    (pddplan.hitrate, (NO_TRACE,), {"warmup_s": -1.0}, "warmup_s", "a finite number >= 0"),
    (pddplan.hitrate, (NO_TRACE,), {"warmup_s": float("inf")}, "warmup_s", "a finite number"),
    (
        pddplan.hitrate,
        (NO_TRACE,),
        {"anomalous_input_tokens": 0},
        "anomalous_input_tokens",
        "a whole number >= 1, not 0",
    ),
    (
        pddplan.hitrate,
        (NO_TRACE,),
        {"anomalous_output_tokens": 0},
        "anomalous_output_tokens",
        "a whole number >= 1, not 0",
    ),
    (pddplan.hitrate, (NO_TRACE,), {"max_points": 1}, "max_points", "a whole number >= 2"),
    (pddplan.hitrate, (NO_TRACE,), {"jobs": -1}, "jobs", "a whole number in [0, 1024], not -1"),
    (pddplan.hitrate, (NO_TRACE,), {"jobs": 2000}, "jobs", "in [0, 1024], not 2000"),
    (pddplan.hitrate, (DATA_TRACE,), {"workload_out": "w.txt"}, "workload_out", "end in .yaml"),
    # topology had no options model: a negative seed raised numpy's ValueError, a string a
    # TypeError, and a 1e10 budget or 2,000 processes were planned with
    (pddplan.topology, ("default",), {"seed": -1, "simulate": 10}, "seed", ">= 0, not -1"),
    (pddplan.topology, ("default",), {"simulate": 2.5}, "simulate", "a whole number >= 1"),
    (pddplan.topology, ("default",), {"jobs": "2"}, "jobs", "in [1, 1024], not '2'"),
    (pddplan.topology, ("default",), {"jobs": 2000}, "jobs", "in [1, 1024], not 2000"),
    (
        pddplan.topology,
        ("default",),
        {"budget_usd_per_hour": 1e10},
        "budget_usd_per_hour",
        "in [0, 1e+09]",
    ),
    (
        pddplan.breakeven_topology,
        ("examples/topologies/three-sites-n1.yaml",),
        {"param": "traffic.s.rate_rps", "against_cost_usd_per_hour": "5"},
        "against_cost_usd_per_hour",
        "a finite number in (0, 1e+09], not '5'",
    ),
    (
        pddplan.calibrate,
        (NO_CSV,),
        {"chip": "h100-sxm", "model": "llama-3.1-70b", "chunk_size_tokens": 0},
        "chunk_size_tokens",
        "a whole number in [16, 10000000], not 0",
    ),
    (
        pddplan.calibrate,
        (NO_CSV,),
        {"chip": "h100-sxm", "model": "llama-3.1-70b", "fix": ["speed"]},
        "fix",
        "is not a derate (allowed: ",
    ),
    (
        pddplan.calibrate,
        (NO_CSV,),
        {"chip": "h100-sxm", "model": "llama-3.1-70b", "write": "out.yml"},
        "write",
        "must end in .yaml",
    ),
    (pddplan.calibrate_link, (NO_CSV,), {"link": "x", "write": "a.txt"}, "write", ".yaml"),
    (pddplan.transfer, ("x",), {"concurrent": 0}, "concurrent", "in [1, 1000000], not 0"),
    (pddplan.transfer, ("x",), {"concurrent": 10**7}, "concurrent", "in [1, 1000000]"),
    (pddplan.transfer, ("x",), {"concurrent": True}, "concurrent", "a whole number"),
    (pddplan.transfer, ("x",), {"payload_bytes": 0.5}, "payload_bytes", "in [1, 1e+15]"),
    (pddplan.transfer, ("x",), {"payload_bytes": [1e6, 1e16]}, "payload_bytes", "not 1e+16"),
    (pddplan.pareto, (), {"points": 1}, "points", "a whole number >= 2, not 1"),
    (pddplan.pareto, (), {"points": 2.5}, "points", "a whole number >= 2"),
    (pddplan.pareto, (), {"min_rate_rps": 0}, "min_rate_rps", "in [1e-06, 1e+06], not 0"),
    (pddplan.pareto, (), {"max_rate_rps": -1.0}, "max_rate_rps", "in [1e-06, 1e+06]"),
    (pddplan.pareto, (), {"baselines": "yes"}, "baselines", "True or False"),
    (pddplan.pareto, (), {"min_rate_rps": 2.0, "max_rate_rps": 1.0}, "min_rate_rps", "below"),
    (pddplan.pareto, (), {"max_chips": {"h100": 8}}, "max_chips", "did you mean 'h100-sxm'"),
    (pddplan.plan_report, (), {"rate_rps": 0}, "rate_rps", "in [1e-06, 1e+06], not 0"),
    # --max-chips on a chip the scenario does not use: refused by solve, robust, report and
    # pareto, accepted by bathtub, simulate and breakeven (their API had no max_chips)
    (pddplan.bathtub, (), {"max_chips": {"h20": 8}}, "max_chips", "the scenario does not use"),
    (pddplan.simulate, (), {"max_chips": {"h20": 8}}, "max_chips", "the scenario does not use"),
    (pddplan.breakeven, (), {"max_chips": {"h20": 8}}, "max_chips", "the scenario does not use"),
    (pddplan.bathtub, (), {"own": {"h100": 8}}, "own", "did you mean 'h100-sxm'"),
    # arguments of the command line's shape raised AttributeError or ValueError
    (pddplan.solve, (), {"max_chips": ["gpu-a=8"]}, "max_chips", "a mapping of chip to count"),
    (pddplan.solve, (), {"overrides": ["rate_rps=5"]}, "overrides", "a mapping"),
    (pddplan.sweep, (), {"axes": ["rate_rps=1,2"]}, "axes", "(PATH, values) pairs"),
    (pddplan.plan_report, (), {"own": {"h100": 1}}, "own", "did you mean 'h100-sxm'"),
]


@pytest.mark.parametrize(
    ("fn", "args", "kwargs", "option", "allowed"),
    CASES,
    ids=[f"{c[0].__name__}-{'-'.join(c[2])}-{i}" for i, c in enumerate(CASES)],
)
def test_a_bad_option_is_named_with_what_is_allowed(
    fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], option: str, allowed: str
) -> None:
    with pytest.raises(OptionError) as info:
        fn(*args, **kwargs)
    err = info.value
    assert err.option == option
    assert allowed in str(err)
    assert str(err).startswith(option) and "\n" not in str(err)


def test_the_message_names_the_range_and_the_value() -> None:
    with pytest.raises(OptionError) as info:
        pddplan.simulate(warmup_fraction=-0.5)
    assert str(info.value) == "warmup_fraction must be a finite number in [0, 1), not -0.5"
    assert info.value.naming("--warmup") == "--warmup must be a finite number in [0, 1), not -0.5"


# (API function, its options model): every field is a keyword of the function, defaulting to
# the model's default
MODELS = [
    (pddplan.solve, options.SolveOptions),
    (pddplan.bathtub, options.BathtubOptions),
    (pddplan.sweep, options.SweepOptions),
    (pddplan.robust, options.RobustOptions),
    (pddplan.breakeven, options.BreakevenOptions),
    (pddplan.plan_report, options.ReportOptions),
    (pddplan.pareto, options.ParetoOptions),
    (pddplan.rank_chips, options.RankChipsOptions),
    (pddplan.simulate, options.SimulateOptions),
    (pddplan.hitrate, options.HitrateOptions),
    (pddplan.calibrate, options.CalibrateOptions),
    (pddplan.transfer, options.TransferOptions),
    (pddplan.topology, options.TopologyOptions),
]


@pytest.mark.parametrize(("fn", "model"), MODELS, ids=[m.__name__ for _f, m in MODELS])
def test_defaults_come_from_the_options_model(
    fn: Callable[..., Any], model: type[options.Options]
) -> None:
    params = inspect.signature(fn).parameters
    defaults = model()
    for name in model.model_fields:
        assert params[name].default == getattr(defaults, name), name


def test_rate_rps_is_one_field_for_every_command() -> None:
    fields = [
        m.model_fields["rate_rps"]
        for m in (options.SolveOptions, options.RobustOptions, options.SimulateOptions)
    ]
    assert all(f.annotation == fields[0].annotation for f in fields)
    assert options.allowed(options.SolveOptions.model_json_schema()["properties"]["rate_rps"]) == (
        "a finite number in [1e-06, 1e+06]"
    )


def test_a_maximum_rate_is_a_rate() -> None:
    # --max-rate 0 was allowed and read as no cap (a max-BCR solve planned at 8 req/s, bound by
    # the line); 1e-9 planned at a rate --rate rejects. It is a rate like any other.

    for model in (options.SolveOptions, options.RobustOptions):
        field = model.model_fields.get("max_rate_rps")
        if field is not None:
            assert field.annotation == options.SolveOptions.model_fields["rate_rps"].annotation
    for bad in (0.0, 1e-9):
        with pytest.raises(OptionError, match="max_rate"):
            pddplan.solve(max_bcr=True, max_rate_rps=bad)


def test_the_other_commands_models_are_reached_through_the_options_module() -> None:
    """Every command's model but solve's lives in :mod:`pddplan.api.command_options` (a solve
    does not make them) and is reached through :mod:`pddplan.api.options` by its name, as the
    same class; a name that is no model is an AttributeError there."""
    from pddplan.api import command_options

    made = {
        name
        for name, v in vars(command_options).items()
        if isinstance(v, type) and issubclass(v, options.Options) and v is not options.Options
    }
    assert made == options.COMMAND_OPTIONS
    for name in made:
        assert getattr(options, name) is getattr(command_options, name)
    with pytest.raises(AttributeError, match="NoSuchOptions"):
        options.NoSuchOptions  # noqa: B018


def test_a_solve_does_not_make_the_other_commands_models() -> None:
    """``pddplan solve`` runs without importing the other commands' option models."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from pddplan.cli import main\n"
        "try:\n"
        "    main(['solve', '--no-verdict-check'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "print('LOADED:', 'pddplan.api.command_options' in sys.modules, file=sys.stderr)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "LOADED: False" in out.stderr, out.stderr


def test_one_profiles_directory_is_a_path_not_letters(tmp_path: Path) -> None:
    # profiles="/tmp/x" searched "/", "t", "m", "p", ... (a string is a sequence of letters)
    (tmp_path / "chips").mkdir()
    text = (ROOT / "profiles" / "chips" / "gpu-b.yaml").read_text(encoding="utf-8")
    (tmp_path / "chips" / "gpu-b.yaml").write_text(
        text.replace("rental_usd_per_hour: 2.5", "rental_usd_per_hour: 0.5"), encoding="utf-8"
    )
    one = pddplan.solve(profiles=str(tmp_path), verdict_check=False, baselines=False)
    listed = pddplan.solve(profiles=[tmp_path], verdict_check=False, baselines=False)
    default = pddplan.solve(verdict_check=False, baselines=False)
    assert one.plan.cost_usd_per_hour == listed.plan.cost_usd_per_hour
    assert one.plan.cost_usd_per_hour < default.plan.cost_usd_per_hour
