"""A bad value for an option that takes one exits 2 with one line on stderr that names the flag
(and, where the option has them, its allowed values or range), and no traceback.

Each case runs ``pddplan.cli.main`` in-process; the values are rejected before any plan is
solved, so the module stays fast. ``test_every_value_option_is_covered`` fails when a command
gains an option that takes a value and no case here.
"""

from __future__ import annotations

import pytest

from pddplan.cli import command, main

# (command words, flag, bad value, words the message must hold besides the flag)
CASES: list[tuple[tuple[str, ...], str, str, tuple[str, ...]]] = []


def _add(cmd: tuple[str, ...], *cases: tuple[str, str, tuple[str, ...]]) -> None:
    CASES.extend((cmd, flag, value, needles) for flag, value, needles in cases)


OUTPUT = (
    ("--output", "/no/such/dir/out.csv", ("cannot write",)),
    ("--format", "xml", ("table, csv, md, json",)),
    ("--table", "nope", ("tables:",)),
)
SCENARIO = (
    ("--set", "no.such.key=1", ()),
    ("--own", "gpu-a=x", ("CHIP=N",)),
    ("--max-chips", "gpu-a=0", ("CHIP=N",)),
)
_add(
    ("solve",),
    *OUTPUT,
    *SCENARIO,
    ("--rate", "-1", ("in [1e-06, 1e+06]",)),
    ("--budget", "-5", ("in [0, 1e+09]",)),
    ("--max-rate", "0", ("in [1e-06, 1e+06]",)),
)
_add(
    ("pareto",),
    *OUTPUT,
    *SCENARIO,
    ("--points", "1", (">= 2",)),
    ("--min-rate", "-1", ("in [1e-06, 1e+06]",)),
    ("--max-rate", "0", ("in [1e-06, 1e+06]",)),
    ("--plot", "chart.txt", (".png",)),
)
_add(
    ("horizon", "examples/agent-diurnal.yaml"),
    *OUTPUT,
    *SCENARIO,
    ("--plot", "chart.txt", (".png",)),
)
_add(("pareto", "--max-rate", "1"), ("--min-rate", "2", ("below the grid's top",)))
_add(
    ("sweep", "--set", "rate_rps=1"),
    ("--set", "rate_rps=1:0:1", ("hi >= lo",)),
    ("--jobs", "0", ("1",)),
    ("--executor", "nope", ("local", "dask")),
    ("--own", "gpu-a=x", ("CHIP=N",)),
    ("--max-chips", "gpu-a=0", ("CHIP=N",)),
    ("--plot", "chart.txt", (".png",)),
    ("--scheduler", "", ()),
    *OUTPUT,
)
_add(
    ("breakeven",),
    *OUTPUT,
    *SCENARIO,
    ("--against", "nope", ("same-dc", "no-relay")),
    ("--param", "no.such.key", ()),
    ("--lo", "nan", ("finite",)),
    ("--hi", "inf", ("finite",)),
)
_add(
    ("bathtub",),
    *OUTPUT,
    *SCENARIO,
    ("--step", "0.5", ("0.1",)),
    ("--tolerance", "2", ("1",)),
    ("--capacity-curve", "no-such-file.csv", ("no such capacity curve",)),
    ("--plot", "chart.txt", (".png",)),
)
_add(
    ("cache", "examples/cache-tiers.yaml"),
    *OUTPUT,
    *SCENARIO,
    ("--rate", "-1", ("in [1e-06, 1e+06]",)),
)
_add(
    ("robust",),
    *OUTPUT,
    *SCENARIO,
    ("--samples", "1", (">= 2",)),
    ("--confidence", "2", ("in (0, 1)",)),
    ("--seed", "x", ("integer",)),
    ("--rate", "-1", ("in [1e-06, 1e+06]",)),
    ("--executor", "nope", ("local", "dask")),
    ("--jobs", "0", ("1",)),
    ("--plot", "chart.txt", (".png",)),
    ("--scheduler", "", ()),
)
_add(
    ("simulate",),
    *OUTPUT,
    *SCENARIO,
    ("--plan", "no-such-plan.json", ()),
    ("--requests", "0", ("1",)),
    ("--seed", "x", ("integer",)),
    ("--rate", "-1", ()),
    ("--policy", "nope", ("allowed", "p-rld")),
    ("--handover", "nope", ("one-shot",)),
    ("--sample", "nope", ("classes", "workload")),
    ("--trace", "no-such-trace.jsonl", ()),
    ("--warmup", "2", ("in [0, 1)",)),
    # typer's own bound spoke first, in other words, and read nan as below 0
    ("--warmup", "nan", ("a finite number in [0, 1), not nan",)),
    ("--block-tokens", "0", (">= 1",)),
)
_add(
    ("report",),
    ("--format", "xml", ("table, csv, md, json",)),
    ("--table", "nope", ("tables:",)),
    *SCENARIO,
    ("--rate", "-1", ("in [1e-06, 1e+06]",)),
    ("--output", "/no/such/dir/plan.html", ("cannot write",)),
)
_add(
    ("hitrate", "mooncake_excerpt.jsonl"),
    *OUTPUT,
    ("--cache-tokens", "lots", ("token count",)),
    ("--workload-cache-tokens", "lots", ("token count",)),
    ("--block-tokens", "0", (">= 1",)),
    ("--bins", "0,2", ("[0, 1]",)),
    ("--warmup", "-1", (">= 0",)),
    ("--anomalous-input-tokens", "0", (">= 1",)),
    ("--anomalous-output-tokens", "0", (">= 1",)),
    ("--max-points", "1", (">= 2",)),
    ("--trace-format", "xml", ("auto, jsonl or csv",)),
    ("--jobs", "-1", ("in [0, 1024]",)),
    # a profile's folder is made (profiles-mine/workloads/prod.yaml); one under a file is not
    ("--workload-out", "/dev/null/x/w.yaml", ("cannot write",)),
    ("--curve-out", "/no/such/dir/c.csv", ()),
)
_add(
    ("calibrate", "h100-published.csv", "--chip", "h100-sxm", "--model", "llama-3.3-70b"),
    *OUTPUT,
    ("--chunk-size", "0", ("1",)),
    ("--fix", "nope", ()),
    ("--write", "/no/such/dir/chip.txt", ()),
)
_add(("calibrate", "h100-published.csv", "--model", "llama-3.3-70b"), ("--chip", "nope", ()))
_add(("calibrate", "h100-published.csv", "--chip", "h100-sxm"), ("--model", "nope", ()))
_add(("calibrate", "pdd-brief-handover.csv"), ("--link", "no-such-link", ()))
_add(
    ("calibrate", "pdd-brief-handover.csv", "--link", "wan-100g-cross-city"),
    ("--fit", "nope", ("not a link parameter", "rtt_ms")),
    # the engine's prefill chunk of a chip's calibration; a link's took it and ignored it
    ("--chunk-size", "4096", ("--link takes none",)),
)
_add(
    ("transfer", "wan-100g-cross-city"),
    *OUTPUT,
    ("--bytes", "12QB", ("KB", "MiB")),
    ("--concurrent", "0", ("1",)),
)
_add(
    ("breakeven", "examples/topologies/three-sites-n1.yaml", "--param", "traffic.s.rate_rps"),
    ("--against-cost", "-5", ("a finite number in (0, 1e+09], not -5.0",)),
    ("--against-cost", "nan", ("a finite number in (0, 1e+09], not nan",)),
)
_add(
    ("topology", "pdd-paper"),
    *OUTPUT,
    ("--budget", "-5", ("a finite number in [0, 1e+09], not -5.0",)),
    ("--budget", "inf", ("a finite number in [0, 1e+09], not inf",)),
    ("--budget", "1e10", ("a finite number in [0, 1e+09]",)),  # was planned
    ("--simulate", "0", ("a whole number >= 1, not 0",)),
    ("--seed", "x", ("integer",)),
    ("--seed", "-1", ("a whole number >= 0, not -1",)),  # a traceback with --simulate
    ("--jobs", "2000", ("a whole number in [1, 1024], not 2000",)),  # was accepted
    ("--set", "rate_rps=1", ("PATHs change a topology file",)),  # topology had no --set
    ("--executor", "nope", ("local", "dask")),
    ("--jobs", "0", ("1",)),
    ("--scheduler", "", ()),
    ("--plot", "chart.txt", (".png",)),
)
STEP = ("step", "--model", "llama-3.3-70b", "--chip", "h100-sxm", "--tp", "2", "--batch", "1")
_add(
    (*STEP, "--input-tokens", "8", "--context-tokens", "8"),
    *OUTPUT,
    ("--tp", "x", ("integer",)),
    ("--batch", "0", (">= 1",)),
    ("--ep", "x", ("integer",)),
    ("--dp", "x", ("integer",)),
    ("--model", "no-such-model", ()),
    ("--chip", "no-such-chip", ()),
    ("--set", "model.nope=1", ("not a key of the model profile",)),
)
_add((*STEP, "--context-tokens", "8"), ("--input-tokens", "0", (">= 1",)))
_add((*STEP, "--input-tokens", "8"), ("--context-tokens", "0", (">= 1",)))
_add(("profiles", "list"), *OUTPUT, ("--kind", "nope", ("chips", "scenarios")))
_add(
    ("profiles", "show", "pdd-paper"),
    *OUTPUT,
    ("--set", "no.such.key=1", ()),
)
_add(("profiles", "validate"), *OUTPUT)
_add(("chips", "rank"), *OUTPUT, ("--model", "no-such-model", ()), ("--reference", "nope", ()))
_add(("chips", "rank"), ("--workload", "no-such-workload", ()))
_add(("chips", "rank"), ("--set", "sla.tpot_ms=-1", ("sla.tpot_ms",)))  # it had no --set
_add(
    ("schema",),
    ("--kind", "nope", ("scenario", "chip")),
    ("--output", "/no/such/dir/s", ("cannot write",)),
)

# the flags whose bad value is a name or a file the message names (not yet the flag: the
# library's NotFoundError and file errors carry no option name)
NAMES_THE_VALUE = {"--plan", "--trace", "--workload-out", "--curve-out", "--link", "--chip"}
NAMES_THE_VALUE |= {"--model", "--reference", "--workload", "--capacity-curve"}

# the flags whose bad value is only found on disk or in a profile (exit 1 or 2 both
# acceptable, still one line naming it)
EXIT_1_OK = {"--plan", "--capacity-curve", "--trace", "--fix", "--write", "--workload-out"}
EXIT_1_OK |= {"--curve-out", "--scheduler", "--executor"}


def _id(case: tuple[tuple[str, ...], str, str, tuple[str, ...]]) -> str:
    cmd, flag, value, _ = case
    return f"{' '.join(w for w in cmd if not w.startswith('-'))[:30]} {flag}={value}"


@pytest.mark.parametrize("case", CASES, ids=[_id(c) for c in CASES])
def test_bad_value_is_one_line_naming_the_flag(
    case: tuple[tuple[str, ...], str, str, tuple[str, ...]], capsys: pytest.CaptureFixture[str]
) -> None:
    cmd, flag, value, needles = case
    if flag == "--scheduler":
        pytest.skip("a scheduler address is only checked by Dask, which is optional")
    with pytest.raises(SystemExit) as exc:
        main([*cmd, flag, value])
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert exc.value.code == 2 or (flag in EXIT_1_OK and exc.value.code in (1, 2)), err
    assert len(lines) == 1, err
    assert "Traceback" not in err
    assert lines[0].startswith("pddplan: error: "), err
    named = value if flag in NAMES_THE_VALUE else flag
    assert named in lines[0], f"{named} not named: {lines[0]}"
    for needle in needles:
        assert needle in lines[0], f"{needle!r} not in: {lines[0]}"


def _value_options() -> dict[str, set[str]]:
    """Each command's options that take a value (not flags, not --help)."""
    out: dict[str, set[str]] = {}

    def walk(cmd: object, path: tuple[str, ...]) -> None:
        subs = getattr(cmd, "commands", None)
        if subs:
            for name, sub in subs.items():
                walk(sub, (*path, name))
            return
        opts = set()
        for p in cmd.params:  # type: ignore[attr-defined]
            if "Option" in type(p).__name__ and not p.is_flag and not p.hidden:
                opts.add(max(p.opts, key=len))
        out[" ".join(path)] = opts

    walk(command(), ())
    return out


def test_every_value_option_is_covered() -> None:
    covered: dict[str, set[str]] = {}
    for cmd, flag, _value, _needles in CASES:
        words = [w for w in cmd if not w.startswith("-")]
        name = " ".join(words[:2] if words[0] in ("profiles", "chips") else words[:1])
        covered.setdefault(name, set()).add(flag)
    missing = {
        name: sorted(opts - covered.get(name, set()) - {"--help"})
        for name, opts in _value_options().items()
    }
    assert not {k: v for k, v in missing.items() if v}, {k: v for k, v in missing.items() if v}


def test_shared_options_everywhere() -> None:
    """Every command that renders a result takes the four output options; every command that
    takes a scenario takes the three scenario options."""
    opts = _value_options()
    for name, have in opts.items():
        if name == "schema":
            continue
        assert {"--format", "--output", "--table"} <= have, name
    for name in ("solve", "sweep", "breakeven", "bathtub", "cache", "robust", "simulate", "report"):
        assert {"--set", "--own", "--max-chips"} <= opts[name], name


TOPO = "examples/topologies/three-sites-n1.yaml"


@pytest.mark.parametrize(
    "cmd",
    [
        ("sweep", TOPO, "--set", "traffic.s.rate_rps=0.5"),
        ("robust", TOPO, "-n", "4"),
        ("breakeven", TOPO, "--param", "traffic.s.rate_rps"),
        ("report", TOPO),
    ],
    ids=lambda c: c[0],
)
@pytest.mark.parametrize("flag", ["--own", "--max-chips"])
def test_inventory_on_a_topology_is_one_message_everywhere(
    cmd: tuple[str, ...], flag: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # four wordings before ("--own and --max-chips apply", "--own and max_chips apply", ...);
    # sweep's --max-chips read "unknown key 'limits'"
    with pytest.raises(SystemExit) as exc:
        main([*cmd, flag, "gpu-a=1"])
    err = capsys.readouterr().err.strip()
    assert exc.value.code == 2
    assert err == (
        f"pddplan: error: {flag} applies to a two-site scenario; a topology file gives each "
        "site's chips: sites.NAME.chips.CHIP.owned and .rent_limit"
    )


@pytest.mark.parametrize(
    "args",
    [
        ("solve", "--set", "rate_rps=5", "--set", "rate_rps=6"),
        ("solve", "--max-chips", "gpu-a=1,gpu-a=100"),
        ("solve", "--own", "gpu-a=1", "--own", "gpu-a=3"),
        ("hitrate", "tests/data/mooncake_excerpt.jsonl", "--cache-tokens", ""),
        ("hitrate", "tests/data/mooncake_excerpt.jsonl", "--cache-tokens", "64k,,1M"),
    ],
    ids=lambda a: " ".join(a[1:])[:40],
)
def test_a_value_given_twice_or_left_out_is_refused(
    args: tuple[str, ...], capsys: pytest.CaptureFixture[str]
) -> None:
    # the last of two values won without a word, and an empty capacity was skipped (an empty
    # --cache-tokens replayed the unbounded cache alone)
    with pytest.raises(SystemExit) as exc:
        main(list(args))
    err = capsys.readouterr().err.strip()
    assert exc.value.code == 2 and len(err.splitlines()) == 1, err
    assert "twice" in err or "an empty capacity" in err, err


@pytest.mark.parametrize(("flag", "value"), [("--table", "sweep"), ("--format", "csv")])
def test_a_report_page_takes_no_table_or_format(
    flag: str, value: str, tmp_path: object, capsys: pytest.CaptureFixture[str]
) -> None:
    # both were accepted and ignored: the whole page was written, exit 0
    page = f"{tmp_path}/plan.html"
    with pytest.raises(SystemExit) as exc:
        main(["report", "-o", page, flag, value])
    err = capsys.readouterr().err.strip()
    assert exc.value.code == 2, err
    assert err == (
        f"pddplan: error: {flag} does not apply to plan.html: an .html or .md file is the whole "
        "page; a table or a format goes to stdout or another file"
    )


@pytest.mark.parametrize(
    "args",
    [
        ("hitrate", "mooncake_excerpt.jsonl", "--block-tokens", "0.5k"),
        ("hitrate", "mooncake_excerpt.jsonl", "--anomalous-output-tokens", "1k"),
        ("simulate", "--trace", "mooncake_excerpt.jsonl", "-n", "50", "--block-tokens", "0.5k"),
    ],
    ids=lambda a: a[-2],
)
def test_every_token_count_takes_k_and_m(
    args: tuple[str, ...], capsys: pytest.CaptureFixture[str]
) -> None:
    # step's --input-tokens took 64k; --block-tokens, --anomalous-output-tokens and calibrate's
    # --chunk-size refused it ("Input should be a valid integer")
    with pytest.raises(SystemExit) as exc:
        main([*args, "-f", "csv"])
    out = capsys.readouterr()
    assert exc.value.code == 0, out.err
