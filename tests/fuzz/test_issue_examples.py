"""Bad inputs found by held-back fuzzing (two rounds), each one clean error line naming the file,
key or option: exit 1 or 2, within the harness's CPU-time limit."""

from __future__ import annotations

import copy
import gzip

import pytest
from fuzz_harness import BASE_SCENARIO, BASE_WORKLOAD, Case, dump, run_case


def _scen(**changes: object) -> bytes:
    doc = copy.deepcopy(BASE_SCENARIO)
    for path, value in changes.items():
        *parents, leaf = path.split("__")
        cur = doc
        for p in parents:
            cur = cur.setdefault(p, {})
        if value is None:
            cur.pop(leaf, None)
        else:
            cur[leaf] = value
    return dump(doc)


INLINE = {k: v for k, v in BASE_WORKLOAD.items() if k != "kind"}
JSONL = b'{"timestamp": 0, "input_length": [1, 2], "output_length": 5, "hash_ids": [1]}\n'
CASES = [
    (
        "rtt .inf",
        _scen(overrides={"links": {"wan-100g-cross-city": {"rtt_ms": float("inf")}}}),
        "rtt_ms",
        "finite",
    ),
    (
        "memory bandwidth 1e-300",
        _scen(overrides={"chips": {"gpu-a": {"datasheet": {"memory_bandwidth_tb_per_s": 1e-300}}}}),
        "memory_bandwidth_tb_per_s",
        "allowed range",
    ),
    (
        "prefill cap 1e-9",
        _scen(serving={"prefill_utilization_cap": 1e-9}),
        "prefill_utilization_cap",
        "allowed range [0.01, 1]",
    ),
    (
        "compute efficiency 1e-12",
        _scen(overrides={"chips": {"gpu-a": {"derates": {"compute_efficiency": 1e-12}}}}),
        "compute_efficiency",
        "allowed range",
    ),
    (
        "price .inf",
        _scen(overrides={"chips": {"gpu-b": {"price": {"rental_usd_per_hour": float("inf")}}}}),
        "rental_usd_per_hour",
        "finite",
    ),
    ("missing link", _scen(link=None), "(top level)", "required key 'link' is missing"),
    ("kind list", _scen(kind=["scenario"]), "kind", "Input should be 'scenario'"),
    (
        "inline workload bad value",
        _scen(workload={**INLINE, "input_tokens": {"fixed": -3}}),
        "workload.input_tokens.fixed",
        "greater than 0",
    ),
    (
        "lognormal min above max",
        _scen(
            workload={
                **INLINE,
                "input_tokens": {"lognormal": {"mean": 100, "cv": 1, "min": 500, "max": 10}},
            }
        ),
        "workload.input_tokens.lognormal",
        "must not exceed max",
    ),
]


@pytest.mark.parametrize("label,text,key,fragment", CASES, ids=[c[0] for c in CASES])
def test_scenario_examples(label: str, text: bytes, key: str, fragment: str) -> None:
    o = run_case(Case("scenario", ["solve", "s.yaml", "-f", "json"], {"s.yaml": text}))
    assert o.kind == "error" and o.exit_code == 1, o
    line = [ln for ln in o.stderr.splitlines() if ln.startswith("pddplan: error:")][0]
    assert "s.yaml:" in line and key in line and fragment in line, line


@pytest.mark.parametrize(
    "argv,files,fragment",
    [
        (["sweep", "--set", "rate_rps=0:inf:1"], {}, "finite"),
        (["simulate", "--seed", "-1"], {}, "--seed"),
        (["hitrate", "tests/data/mooncake_excerpt.jsonl", "--bins", "0,nan,1"], {}, "--bins"),
        (["hitrate", "t.csv.gz"], {"t.csv.gz": b"input_length,output_length\n1,2\n"}, "gzip"),
        (["hitrate", "t.jsonl"], {"t.jsonl": JSONL}, "t.jsonl:1: input_length"),
        (["hitrate", "t.jsonl.gz"], {"t.jsonl.gz": gzip.compress(JSONL)}, "input_length"),
        (["solve", "-o", "/dev/full"], {}, "No space left"),
        (["solve", "-f", "json", "-o", "missing/dir/x.json"], {}, "cannot write"),
        (["sweep", "--set", "rate_rps=1:2:1e-9"], {}, "PDDPLAN_MAX_GRID_POINTS"),
        (["simulate", "-n", "100000000"], {}, "PDDPLAN_MAX_SIM_REQUESTS"),
        # the second round's examples: numbers, nesting, devices and caps
        (["solve", "--max-chips", "gpu-a=\u00b2"], {}, "--max-chips"),
        (["solve", "--max-chips", "gpu-a=" + "9" * 5000], {}, "too large"),
        (
            ["hitrate", "tests/data/mooncake_excerpt.jsonl", "--cache-tokens", "9" * 23 + "T"],
            {},
            "--cache-tokens",
        ),
        (["robust", "--seed", "-1"], {}, "--seed"),
        (["robust", "--samples", "9" * 30], {}, "PDDPLAN_MAX_ROBUST_SAMPLES"),
        (
            ["hitrate", "t.jsonl"],
            {"t.jsonl": b'{"a":' * 100_000 + b"1" + b"}" * 100_000},
            "t.jsonl",
        ),
        (["simulate", "--plan", "p.json"], {"p.json": b"[" * 100_000 + b"]" * 100_000}, "p.json"),
        (["profiles", "validate", "/dev/zero"], {}, "/dev/zero"),
        (
            ["calibrate", "/dev/urandom", "--chip", "h100-sxm", "--model", "llama-3.3-70b"],
            {},
            "/dev/urandom",
        ),
        (["simulate", "--plan", "/dev/zero"], {}, "/dev/zero"),
        (["simulate", "--trace", "/dev/zero"], {}, "/dev/zero"),
        (["hitrate", "/dev/zero"], {}, "/dev/zero"),
        (["bathtub", "--capacity-curve", "/dev/zero"], {}, "/dev/zero"),
        (["sweep", "--set", "chips.gpu-b.price_usd_per_hour=1:100000:1"], {}, "PDDPLAN_MAX_GRID"),
        (["solve", "--set", "rate_rps=true"], {}, "rate_rps"),
        (["nosuchcmd"], {}, "No such command"),
        (
            ["hitrate", "tests/data/mooncake_excerpt.jsonl", "--cache-tokens", "inf"],
            {},
            "unbounded",
        ),
    ],
)
def test_cli_examples(argv: list[str], files: dict[str, bytes], fragment: str) -> None:
    o = run_case(Case("cli", argv, files))
    assert o.kind in ("error", "wrong-place") and o.exit_code in (1, 2), o
    # warnings (and their wrapped continuation lines, indented) are not the error line
    lines = [
        ln
        for ln in o.stderr.splitlines()
        if not ln.startswith("pddplan: warning:") and not ln.startswith("  ")
    ]
    assert len(lines) == 1 and fragment in lines[0], o.stderr
