"""``pddplan step``: prefill and decode step of one instance under a parallel layout."""

from __future__ import annotations

from typing import Annotated

import typer

from pddplan.cli import common


def register(app: typer.Typer) -> None:
    app.command("step")(step_cmd)


@common.output_options(command="step")
def step_cmd(
    model: Annotated[
        str,
        typer.Option(
            "--model",
            "-m",
            help="Model profile name.",
            autocompletion=common.complete_names("model"),
        ),
    ],
    chip: Annotated[
        str,
        typer.Option(
            "--chip", "-c", help="Chip profile name.", autocompletion=common.complete_names("chip")
        ),
    ],
    tp: Annotated[
        int, typer.Option("--tp", help="Tensor-parallel width of attention (per DP group).")
    ],
    batch: Annotated[int, typer.Option("--batch", "-b", help="Sequences in the step.")],
    input_tokens: Annotated[
        int,
        typer.Option(
            "--input-tokens",
            help="Uncached tokens per sequence to prefill (2000, 64k, 1.5M).",
            parser=common.token_count,
        ),
    ],
    context_tokens: Annotated[
        int,
        typer.Option(
            "--context-tokens",
            help="Context per sequence in the decode step [tokens] (4989, 128k).",
            parser=common.token_count,
        ),
    ],
    ep: Annotated[
        int | None, typer.Option("--ep", help="Expert-parallel ranks (MoE models only).")
    ] = None,
    dp: Annotated[
        int | None, typer.Option("--dp", help="Data-parallel attention groups (chips = tp x dp).")
    ] = None,
    overlap: Annotated[
        bool, typer.Option("--overlap", help="Two-batch overlap of communication and compute.")
    ] = False,
    overrides: Annotated[
        list[str] | None,
        typer.Option(
            "--set",
            help="Change a key of the model or chip profile: model.KEY=VALUE or chip.KEY=VALUE "
            "(repeatable), e.g. --set model.dtypes.weights=bf16.",
            metavar="PATH=VALUE",
        ),
    ] = None,
    *,
    out: common.Output,
) -> None:
    """Prefill time of B sequences of L uncached tokens and decode step time of B sequences at
    context C on one instance, tokens/s per chip for each, and what bounds each.

    Example: pddplan step --model deepseek-v3 --chip h800-sxm --tp 1 --dp 32 --ep 32 --batch 64 --input-tokens 2000 --context-tokens 4989
    """
    from pddplan import api
    from pddplan.api.values import parse_overrides

    res = api.step(
        model=model,
        chip=chip,
        tp=tp,
        batch=batch,
        input_tokens=input_tokens,
        context_tokens=context_tokens,
        ep=ep,
        dp=dp,
        overlap=overlap,
        overrides=parse_overrides(overrides, "step"),
        profiles=common.State.profile_dirs,
    )
    out.emit(res.report())
