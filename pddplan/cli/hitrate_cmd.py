"""``pddplan hitrate``: a request trace to its hit-rate distribution, capacity curve and workload."""

from __future__ import annotations

import inspect
import shlex
from dataclasses import replace
from pathlib import Path
from typing import Annotated

import typer

from pddplan import defaults
from pddplan.cli import common

#: The default bins as ``--bins`` writes them.
DEFAULT_BINS = ",".join(f"{e:g}" for e in defaults.HIT_RATE_BINS)


def _command_line(trace: Path, opts: list[tuple[str, object, object]]) -> str:
    """The command as a user would retype it (options that differ from their default)."""
    parts = ["pddplan", "hitrate", str(trace)]
    for flag, value, default in opts:
        if value == default or value is None:
            continue
        if value is True:
            parts.append(flag)
        else:
            parts += [flag, f"{value:g}" if isinstance(value, float) else str(value)]
    return " ".join(shlex.quote(p) for p in parts)


@common.output_options
def hitrate_cmd(
    trace: Annotated[
        Path,
        typer.Argument(
            help="Request trace: Mooncake-style JSONL (timestamp, input_length, output_length, "
            "hash_ids) or CSV (input_length, output_length, cached_tokens or hit_rate, optional "
            "timestamp_ms); .gz is read too. mooncake_excerpt.jsonl names a bundled sample.",
            dir_okay=False,
            show_default=False,
        ),
    ],
    cache_tokens: Annotated[
        str | None,
        typer.Option(
            "--cache-tokens",
            help="Replay LRU prefix caches of these capacities [tokens], comma-separated; "
            "k, M, G, T: powers of 1000; Ki, Mi, Gi, Ti: of 1024; 'unbounded' is one of them. The workload YAML uses the "
            "first one listed unless --workload-cache-tokens says. Default: unbounded.",
            metavar="N[,N...]",
        ),
    ] = None,
    workload_cache_tokens: Annotated[
        str | None,
        typer.Option(
            "--workload-cache-tokens",
            help="The capacity [tokens] whose hit rates the workload YAML takes (written as its "
            "cache_tokens): 64k, 1M, unbounded, as for --cache-tokens, and replayed too if that "
            "does not list it. Default: the first --cache-tokens.",
            metavar="N",
        ),
    ] = None,
    block_tokens: common.BlockTokensOpt = defaults.TRACE_BLOCK_TOKENS,
    bins: Annotated[
        str | None,
        typer.Option(
            "--bins",
            help="Hit-rate bin edges, from 0 to 1. Default: the brief's seven bins "
            f"{DEFAULT_BINS}.",
            metavar="E0,E1,...",
        ),
    ] = None,
    warmup_s: Annotated[
        float,
        typer.Option(
            "--warmup",
            help="Seconds from the first arrival that warm the cache but are left out of every "
            "statistic.",
            metavar="SECONDS",
        ),
    ] = 0.0,
    anomalous_input_tokens: Annotated[
        int,
        typer.Option(
            "--anomalous-input-tokens",
            help="A request is anomalous (long input, short output) with input >= this ...",
            parser=common.token_count,
        ),
    ] = defaults.ANOMALOUS_INPUT_TOKENS,
    anomalous_output_tokens: Annotated[
        int,
        typer.Option(
            "--anomalous-output-tokens",
            help="... and output < this [tokens].",
            parser=common.token_count,
        ),
    ] = defaults.ANOMALOUS_OUTPUT_TOKENS,
    workload_out: Annotated[
        Path | None,
        typer.Option(
            "--workload-out",
            help="Write a workload profile (YAML) that solve and bathtub load as is; its name "
            "is the file's stem.",
            dir_okay=False,
            metavar="FILE.yaml",
        ),
    ] = None,
    curve_out: Annotated[
        Path | None,
        typer.Option(
            "--curve-out",
            help="Write the capacity curve (one row per capacity) as CSV.",
            dir_okay=False,
            metavar="FILE.csv",
        ),
    ] = None,
    max_points: Annotated[
        int,
        typer.Option("--max-points", help="Points per length distribution in the workload YAML."),
    ] = defaults.WORKLOAD_MAX_POINTS,
    skip_bad_lines: Annotated[
        bool,
        typer.Option(
            "--skip-bad-lines", help="Skip and count malformed lines instead of stopping."
        ),
    ] = False,
    trace_format: Annotated[
        str,
        typer.Option(
            "--trace-format", help="auto (from the suffix), jsonl or csv.", metavar="FORMAT"
        ),
    ] = "auto",
    jobs: Annotated[
        int,
        typer.Option(
            "--jobs",
            help="Parser processes for big JSONL traces (0: usable CPUs, at most 4).",
        ),
    ] = 0,
    *,
    out: common.Output,
) -> None:
    """Read a request trace: hit-rate distribution, lengths, arrival rate, anomalous share.

    Requests are replayed in timestamp order through a prefix cache (unbounded, or LRU at each
    --cache-tokens capacity); a request's hit is the leading run of its blocks already cached,
    capped at its input length. Prints one hit-rate distribution per capacity and the capacity
    curve (mean hit rate and share above 95% against capacity). --workload-out writes a workload
    profile; so does -o FILE.yaml (the report then goes to stdout).

    Example: pddplan hitrate mooncake_excerpt.jsonl --cache-tokens 64k,unbounded
    """
    from pddplan import api
    from pddplan.api.profiles import data_file
    from pddplan.errors import UsageError

    trace = data_file(trace)
    if out.output is not None and out.output.suffix.lower() in (".yaml", ".yml"):
        if workload_out is not None:
            raise UsageError("-o FILE.yaml writes the workload profile: drop --workload-out")
        workload_out, out = out.output, replace(out, output=None)
    given = dict(locals())
    made_by = None
    if workload_out is not None:
        own = inspect.signature(hitrate_cmd).parameters
        opts = [(flag, given[name], own[name].default) for flag, name in MADE_BY_OPTIONS]
        made_by = _command_line(trace, [*opts, ("--workload-out", str(workload_out), None)])
    common.unmap_large_frees()  # the replay's freed arrays go back to the system
    with common.spinner("reading the trace"):
        res = api.hitrate(
            trace,
            cache_tokens=cache_tokens,
            workload_cache_tokens=workload_cache_tokens,
            block_tokens=block_tokens,
            bins=bins,
            warmup_s=warmup_s,
            anomalous_input_tokens=anomalous_input_tokens,
            anomalous_output_tokens=anomalous_output_tokens,
            workload_out=workload_out,
            curve_out=curve_out,
            max_points=max_points,
            skip_bad_lines=skip_bad_lines,
            trace_format=trace_format,
            jobs=jobs,
            made_by=made_by,
            warn=common.warn,
        )
    if res.workload_file is not None:
        common.info(f"pddplan: wrote workload profile {res.workload_file}")
        note = res.workload_cache_note()
        if note:
            common.info(f"pddplan: note: {note}")
    if res.curve_file is not None:
        common.info(f"pddplan: wrote capacity curve {res.curve_file}")
    out.emit(res.report())


#: The options the workload profile's ``made by`` line repeats (flag, parameter), where they
#: differ from the command's defaults.
MADE_BY_OPTIONS = (
    ("--cache-tokens", "cache_tokens"),
    ("--workload-cache-tokens", "workload_cache_tokens"),
    ("--block-tokens", "block_tokens"),
    ("--bins", "bins"),
    ("--warmup", "warmup_s"),
    ("--anomalous-input-tokens", "anomalous_input_tokens"),
    ("--anomalous-output-tokens", "anomalous_output_tokens"),
    ("--max-points", "max_points"),
    ("--skip-bad-lines", "skip_bad_lines"),
    ("--trace-format", "trace_format"),
)


def register(app: typer.Typer) -> None:
    app.command("hitrate")(hitrate_cmd)
