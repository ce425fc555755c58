"""The ``--table`` names each command's result can have: the one list, read by the results
(which build those sections), by ``--table``'s help and by the check made before the work
(:func:`pddplan.api.values.check_table`). A test keeps each list equal to what its result
builds, in each of its forms (a two-site scenario's and a topology file's, a ``cache:``
scenario's, with ``--simulate``). Commands whose tables are named by their input (``hitrate``'s cache sizes, ``profiles``'
kinds) are not listed: their names are checked when the result is rendered."""

from __future__ import annotations

TABLES: dict[str, tuple[str, ...]] = {
    "solve": (
        "plan",
        "summary",
        "cache",
        "procurement",
        "pipelines",
        "baselines",
        "verdict",
        "classes",
    ),
    "bathtub": (
        "summary",
        "valleys",
        "valleys-of-the-re-provisioned-view",
        "singular-points",
        "singular-points-by-chunk-size-and-input-length",
        "chunk-sizes",
        "advice",
        "curve",
    ),
    "pareto": ("frontier", "baselines", "points"),
    "horizon": ("owned", "strategies", "fleet", "growth"),
    "robust": (
        "summary",
        "distribution",
        "sensitivity",
        "robust-plan",
        "inputs",
        "kinds",
        "not-sampled",
        # a topology file's
        "held",
        "samples",
    ),
    "simulate": (
        "run",
        "fleet",
        "simulated",
        "ttft-by-pipeline",
        "closed-form-vs-simulation",
        "pool-loads",
        "load-ratios",
    ),
    "sweep": ("points",),
    "breakeven": ("break-even", "plans"),  # plans: a topology file's
    "chips rank": ("chips",),
    "report": (
        "plan",
        "summary",
        "procurement",
        "baselines",
        "classes",
        "bathtub",
        "sweep",
        "assumptions",
        "warnings",
        # a topology file's
        "flows",
        "sites",
        "lines",
        "failures",
    ),
    "step": ("step",),
    "transfer": ("transfers",),
    "topology": ("flows", "sites", "lines", "failures", "simulated"),
    "calibrate": ("derates", "errors", "rows", "parameters"),
}
