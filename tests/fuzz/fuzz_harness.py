"""pddplan's own fuzz harness: generated bad or odd inputs on every input surface.

Each case is a command line (run in-process through :func:`pddplan.cli.main`) or a public API
call (``overrides=``), with the files it reads. Cases are drawn by Hypothesis strategies, one per
surface:

- ``scenario``: a scenario YAML, mutated in its structure (keys removed, added, retyped) and
  values (every leaf, including the profiles' keys through ``overrides:``);
- ``profile``: a chip, link, model or workload profile in a ``--profiles`` directory that shadows
  the bundled one, mutated the same way;
- ``yaml``: hostile YAML text (alias bombs, deep nesting, tags, non-UTF-8 bytes, truncation);
- ``cli``: command-line options of every command with odd values;
- ``trace``: JSONL, CSV and gzip traces with mutated records;
- ``calib``: chip and link calibration CSVs;
- ``plan``: ``solve --format json`` documents given to ``simulate --plan``;
- ``api``: ``pddplan.solve(overrides={...})``;
- ``link``: ``calibrate --link`` with ``--fit`` / ``--fix`` lists;
- ``robust``: ``robust`` with odd options (few samples);
- ``uncertain``: ``robust`` on a scenario with a mutated ``uncertainty.inputs`` block;
- ``layouts``: ``--set`` of ``roles.ROLE.layouts`` and ``baseline.layouts``;
- ``inventory``: ``--own CHIP=N`` beside ``--max-chips``;
- ``step``: ``step --set`` of the model or chip profile;
- ``report``: the procurement report (``report -o``) with odd options and outputs.

Each run is classified (:func:`classify`):

``ok``
    exit 0 and the output passes the oracles;
``error``
    exit 1, 2 or 3 with one ``pddplan: error:`` line on stderr (or click's usage message);
``wrong-place``
    a clean error that names neither the file nor the key that was mutated;
``traceback``
    any other exception;
``slow``
    over the time limit (30 s of CPU time by default, times ``PDDPLAN_TEST_TIME_SCALE``);
``silent``
    exit 0 on nonsense: a non-finite number was accepted, an output holds inf or NaN, a cost
    is infinite, or a plan with zero BCR claims to meet the SLA.
"""

from __future__ import annotations

import contextlib
import copy
import csv
import gzip
import io
import json
import math
import os
import re
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from hypothesis import strategies as st
from time_limits import CpuTimeout, cpu_limit_s, cpu_s, cpu_time_limit

ROOT = Path(__file__).resolve().parents[2]
PROFILES = ROOT / "profiles"
#: [s] CPU time per case, before PDDPLAN_TEST_TIME_SCALE: a guard against hangs and blow-ups,
#: above the slowest honest case (``solve --max-bcr`` on the default scenario walks ~94 fleets
#: in 11-13 s of CPU on a 2-core CI machine; making it fast is its own issue).
TIME_LIMIT_S = 30.0
CLASSES = ("ok", "error", "wrong-place", "traceback", "slow", "silent")


# ----------------------------------------------------------------------------- cases


@dataclass
class Case:
    surface: str
    argv: list[str] = field(default_factory=list)
    files: dict[str, bytes] = field(default_factory=dict)
    #: the input holds nonsense: exit 0 is a silent success
    nonsense: bool = False
    #: a clean error must name one of these (file name, key); empty: anything goes
    where: tuple[str, ...] = ()
    #: instead of argv: an API call ("solve", overrides)
    api: dict[str, Any] | None = None
    note: str = ""

    def describe(self) -> str:
        if self.api is not None:
            return f"[{self.surface}] pddplan.solve('default', overrides={self.api!r})"
        text = " ".join(self.argv)
        for name, data in self.files.items():
            shown = data[:300].decode("utf-8", "backslashreplace")
            text += f"\n    {name} ({len(data)} bytes): {shown!r}"
        return f"[{self.surface}] {text}" + (f"  ({self.note})" if self.note else "")


@dataclass
class Outcome:
    kind: str
    exit_code: int | None
    elapsed_s: float  # [s] CPU time the case took (not wall-clock time)
    stderr: str
    detail: str = ""


# ----------------------------------------------------------------------------- values

FINITE_ODD: list[Any] = [
    0,
    -1,
    1,
    0.5,
    -0.0,
    1e-300,
    1e-12,
    1e-9,
    1e-5,
    3,
    1000,
    1e6,
    2**31,
    "abc",
    "",
    "1e9",
    True,
    None,
    [],
    [1, 2],
    {},
    {"x": 1},
]
NONSENSE: list[Any] = [float("nan"), float("inf"), float("-inf"), 1e300, -1e300, 10**40, 1e30]


def is_nonsense(v: Any) -> bool:
    if isinstance(v, bool):
        return False
    if isinstance(v, float):
        return not math.isfinite(v) or abs(v) >= 1e30
    if isinstance(v, int):
        return abs(v) >= 10**30
    return False


values = st.one_of(
    st.sampled_from(FINITE_ODD).map(copy.deepcopy),
    st.sampled_from(NONSENSE),
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.text(max_size=8),
)


def leaves(doc: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every key path of a document (mappings and lists)."""
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield (*path, k)
            yield from leaves(v, (*path, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield (*path, i)
            yield from leaves(v, (*path, i))


def _get(doc: Any, path: tuple[Any, ...]) -> Any:
    for p in path:
        doc = doc[p]
    return doc


def dump(doc: Any) -> bytes:
    return yaml.safe_dump(doc, sort_keys=False, allow_unicode=True).encode("utf-8")


@st.composite
def mutated(draw: st.DrawFn, doc: dict[str, Any]) -> tuple[dict[str, Any], bool, list[str]]:
    """``doc`` with 1-3 structural or value mutations: (new doc, nonsense?, keys touched)."""
    doc = copy.deepcopy(doc)
    nonsense = False
    keys: list[str] = []
    for _ in range(draw(st.integers(1, 3))):
        paths = list(leaves(doc))
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent = _get(doc, path[:-1])
        op = draw(st.sampled_from(["set", "set", "set", "delete", "add", "wrap", "scale"]))
        keys.append(str(path[-1]))
        if op == "set":
            v = draw(values)
            nonsense |= is_nonsense(v)
            parent[path[-1]] = v
        elif op == "delete":
            if isinstance(parent, dict):
                del parent[path[-1]]
                if len(path) > 1:
                    keys[-1] = str(path[-2])
            else:
                parent.pop(path[-1])
        elif op == "add":
            if isinstance(parent, dict):
                name = draw(st.sampled_from(["extra", "rate", "min", "max", "bins", "chips"]))
                parent[name] = draw(values)
                keys[-1] = name
        elif op == "wrap":
            parent[path[-1]] = draw(st.sampled_from([[parent[path[-1]]], {"x": parent[path[-1]]}]))
        else:
            old = parent[path[-1]]
            if isinstance(old, int | float) and not isinstance(old, bool):
                factor = draw(st.sampled_from([-1, 0, 1e-6, 1e6, 1e-300, 1e300]))
                new = old * factor
                parent[path[-1]] = new
                nonsense |= is_nonsense(new)
    # a later mutation may have replaced a nonsense value: judge the final document
    nonsense = any(is_nonsense(_get(doc, p)) for p in leaves(doc))
    return doc, nonsense, keys


# --------------------------------------------------------------------------- surfaces


def _load(path: Path) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


BASE_SCENARIO = _load(PROFILES / "scenarios" / "default.yaml")
BASE_WORKLOAD = _load(PROFILES / "workloads" / "agent-64k.yaml")
PROFILE_FILES = {
    "chips/gpu-a.yaml": _load(PROFILES / "chips" / "gpu-a.yaml"),
    "chips/gpu-b.yaml": _load(PROFILES / "chips" / "gpu-b.yaml"),
    "links/wan-100g-cross-city.yaml": _load(PROFILES / "links" / "wan-100g-cross-city.yaml"),
    "models/qwen3-235b-a22b.yaml": _load(PROFILES / "models" / "qwen3-235b-a22b.yaml"),
    "workloads/agent-64k.yaml": BASE_WORKLOAD,
    "workloads/chat.yaml": _load(PROFILES / "workloads" / "chat.yaml"),
    "caches/host-dram.yaml": _load(PROFILES / "caches" / "host-dram.yaml"),
}
SCENARIO_BASES: list[dict[str, Any]] = [
    BASE_SCENARIO,
    {
        **BASE_SCENARIO,
        "workload": {k: v for k, v in BASE_WORKLOAD.items() if k != "kind"},
    },
    {
        **BASE_SCENARIO,
        "workload": {
            "name": "lognormal",
            "source": "fuzz base",
            "input_tokens": {"lognormal": {"mean": 4000, "cv": 1.0, "min": 16, "max": 32000}},
            "output_tokens": {"lognormal": {"mean": 300, "cv": 0.8, "min": 1, "max": 4000}},
            "hit_rate": {"beta": {"a": 4, "b": 1}},
        },
    },
    {
        **BASE_SCENARIO,
        "overrides": {
            "chips": {"gpu-b": {"price": {"rental_usd_per_hour": 2.4}}},
            "links": {"wan-100g-cross-city": {"rtt_ms": 20, "bandwidth_gbit_per_s": 100}},
            "models": {"qwen3-235b-a22b": {"dtypes": {"kv_cache": "fp8"}}},
            "workloads": {"agent-64k": {"hit_rate": {"shift": 0.0}}},
        },
    },
    {
        **BASE_SCENARIO,
        "serving": {
            "chunk_size_tokens": 8192,
            "prefill_utilization_cap": 0.85,
            "decode_memory_utilization": 0.9,
            "link_utilization_cap": 0.8,
            "hit_rate_points_per_bin": 3,
            "length_points": 3,
        },
        "limits": {"max_chips": {"gpu-a": 64}, "max_rate_rps": 10},
    },
]
SCENARIO_COMMANDS = [
    ["solve", "{f}", "-f", "json"],
    ["solve", "{f}", "-f", "json", "--max-bcr"],
    ["solve", "{f}", "-f", "csv", "--budget", "200"],
    ["profiles", "validate", "{f}"],
    ["bathtub", "{f}", "--no-reprovision", "--step", "0.05", "-f", "json"],
    ["simulate", "{f}", "-n", "300", "-f", "json"],
    ["chips", "rank", "{f}", "-f", "json"],
]


@st.composite
def scenario_cases(draw: st.DrawFn) -> Case:
    base = draw(st.sampled_from(SCENARIO_BASES))
    doc, nonsense, keys = draw(mutated(base))
    cmd = draw(st.sampled_from(SCENARIO_COMMANDS))
    return Case(
        "scenario",
        [a.format(f="scen.yaml") for a in cmd],
        {"scen.yaml": dump(doc)},
        nonsense=nonsense,
        where=("scen.yaml", *keys),
    )


@st.composite
def profile_cases(draw: st.DrawFn) -> Case:
    rel = draw(st.sampled_from(sorted(PROFILE_FILES)))
    doc, nonsense, keys = draw(mutated(PROFILE_FILES[rel]))
    cmd = draw(
        st.sampled_from(
            [
                ["solve", "-f", "json"],
                ["profiles", "validate"],
                ["simulate", "-n", "300", "-f", "json"],
                ["solve", "-f", "json", "--max-bcr"],
            ]
        )
    )
    # chat.yaml and the cache profiles are not used by the default scenario: only validation
    # must see their nonsense
    used = rel not in ("workloads/chat.yaml", "caches/host-dram.yaml") or cmd[0] == "profiles"
    return Case(
        "profile",
        ["--profiles", "{tmp}/prof", *cmd],
        {f"prof/{rel}": dump(doc)},
        nonsense=nonsense and used,
        where=(Path(rel).name, *keys),
    )


def _nest(depth: int, flow: bool) -> str:
    return (
        "x: " + "[" * depth + "]" * depth
        if flow
        else "x:\n" + "".join("  " * i + "- \n" for i in range(depth))
    )


def alias_bomb(levels: int = 9) -> str:
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, levels):
        refs = ",".join([f"*a{i - 1}"] * 9)
        lines.append(f"a{i}: &a{i} [{refs}]")
    return "\n".join(lines) + "\n"


HOSTILE_YAML: list[tuple[str, bytes]] = [
    ("alias bomb", alias_bomb().encode()),
    ("self alias", b"x: &r [*r]\n"),
    ("self alias map", b"x: &r {a: *r}\n"),
    ("deep flow", _nest(5000, True).encode()),
    ("deep block", _nest(3000, False).encode()),
    ("deep map", ("x: " + "{a: " * 3000 + "1" + "}" * 3000).encode()),
    ("latin-1", "kind: scenario\nname: caf\xe9\n".encode("latin-1")),
    ("utf-16", "kind: scenario\n".encode("utf-16")),
    ("nul bytes", b"kind: scenario\x00\x00\n"),
    ("python tag list", b"x: !!python/object/apply:os.system ['true']\n"),
    ("python tag map", b"x: !!python/object/new:dict {a: 1}\n"),
    ("python tag scalar", b"kind: !!python/name:os.system scenario\n"),
    ("custom tag", b"kind: !scenario scenario\n"),
    ("binary tag", b"name: !!binary aGVsbG8=\n"),
    ("set tag", b"name: !!set {a, b}\n"),
    ("timestamp", b"name: 2001-12-14t21:59:43.10-05:00\n"),
    ("kind list", b"kind: [scenario]\nname: x\n"),
    ("kind map", b"kind: {a: 1}\n"),
    ("kind number", b"kind: 3\n"),
    ("two documents", b"kind: scenario\n---\nkind: chip\n"),
    ("top list", b"- 1\n- 2\n"),
    ("top scalar", b"hello\n"),
    ("empty", b""),
    ("bom", b"\xef\xbb\xbfkind: scenario\n"),
    ("merge key", b"a: &a {x: 1}\nb: {<<: *a}\n"),
    ("complex key", b"? [a, b]\n: 1\n"),
    ("null key", b"~: 1\n"),
    ("huge int", b"rate_rps: " + b"9" * 5000 + b"\n"),
    ("long line", b"name: " + b"a" * 200_000 + b"\n"),
]


@st.composite
def yaml_cases(draw: st.DrawFn) -> Case:
    label, text = draw(st.sampled_from(HOSTILE_YAML))
    where = ("scen.yaml",)
    if draw(st.booleans()):
        # hostile text inside an otherwise valid scenario
        base = dump(BASE_SCENARIO)
        text = text.replace(b"x:", b"description:", 1) if text.startswith(b"x:") else text
        if not text.startswith((b"kind", b"name", b"\xef", b"\xff", b"rate")) and text:
            text = base.replace(b"kind: scenario\n", b"") + text
        elif text:
            text = base + b"extra_" + text
    if draw(st.booleans()) and len(text) > 20:
        cut = draw(st.integers(1, len(text) - 1))
        text = text[:cut]
        label += " (truncated)"
    cmd = draw(
        st.sampled_from(
            [
                ["profiles", "validate", "scen.yaml"],
                ["solve", "scen.yaml", "-f", "json"],
                ["sweep", "scen.yaml", "--set", "rate_rps=1,2", "-f", "json"],
            ]
        )
    )
    return Case("yaml", cmd, {"scen.yaml": text}, where=where, note=label)


ODD_ARGS = [
    "0",
    "-1",
    "nan",
    "inf",
    "-inf",
    "1e308",
    "1e-300",
    "abc",
    "",
    "0,nan,1",
    "1,0",
    "0.5",
    "99999999999999999999",
    "gpu-a=-1",
    "gpu-a=nan",
    "x",
    "1k",
    "-0",
]
CLI_COMMANDS: list[tuple[list[str], list[str]]] = [
    (["solve", "-f", "json"], ["--rate", "--budget", "--max-chips", "--max-rate"]),
    (["bathtub", "--no-reprovision", "-f", "json"], ["--step", "--tolerance"]),
    (["simulate", "-f", "json"], ["--requests", "--seed", "--rate", "--warmup"]),
    (
        ["hitrate", "tests/data/mooncake_excerpt.jsonl", "-f", "json"],
        ["--cache-tokens", "--block-tokens", "--bins", "--warmup", "--max-points", "--jobs"],
    ),
    (["transfer", "wan-100g-cross-city", "-f", "json"], ["--bytes", "--concurrent"]),
    (
        ["step", "-m", "qwen3-32b", "-c", "h100-sxm", "-f", "json"],
        ["--tp", "--batch", "--input-tokens", "--context-tokens", "--ep", "--dp"],
    ),
    (["breakeven", "-f", "json"], ["--lo", "--hi"]),
]
SET_PATHS = [
    "rate_rps",
    "link.bandwidth_gbit_per_s",
    "link.rtt_ms",
    "chips.gpu-b.price_usd_per_hour",
    "serving.prefill_utilization_cap",
    "sla.ttft_p99_s",
    "workload.hit_rate.shift",
]
SET_VALUES = [
    "0:inf:1",
    "0:1:0",
    "1:0:1",
    "1:2:1e-9",
    "nan",
    "inf",
    "1e300",
    "0",
    "-5",
    "1,2,nan",
    "abc",
    "1e-300",
    "1:1e9:1",
]


@st.composite
def cli_cases(draw: st.DrawFn) -> Case:
    if draw(st.integers(0, 3)) == 0:
        path = draw(st.sampled_from(SET_PATHS))
        val = draw(st.sampled_from(SET_VALUES))
        cmd = draw(st.sampled_from(["sweep", "simulate-set"]))
        if cmd == "sweep":
            argv = ["sweep", "--set", f"{path}={val}", "--no-baselines", "-f", "json"]
        else:
            argv = ["simulate", "-n", "300", "--set", f"{path}={val}", "-f", "json"]
        nonsense = any(w in val for w in ("nan", "inf", "1e300"))
        return Case("cli", argv, nonsense=nonsense, where=(path, "--set"))
    base, flags = draw(st.sampled_from(CLI_COMMANDS))
    argv = list(base)
    chosen = draw(st.lists(st.sampled_from(flags), min_size=1, max_size=3, unique=True))
    nonsense = False
    for flag in chosen:
        val = draw(st.sampled_from(ODD_ARGS))
        nonsense |= val.lower() in ("nan", "inf", "-inf", "1e308") or "nan" in val
        argv += [flag, val]
    if argv[0] == "simulate" and "--requests" not in chosen:
        argv += ["--requests", "300"]
    if argv[0] == "step":  # its required options, where the case gives none of its own
        required = (("--tp", "2"), ("--batch", "8"), ("--input-tokens", "2000"))
        for flag, default in (*required, ("--context-tokens", "4000")):
            if flag not in chosen:
                argv += [flag, default]
    if draw(st.integers(0, 5)) == 0:
        argv += ["-o", draw(st.sampled_from(["/dev/full", "outdir", "missing/dir/out.json"]))]
        chosen.append("out")
    if argv[0] == "breakeven":
        chosen.append("--param")  # --lo and --hi are values of the swept parameter
    return Case("cli", argv, nonsense=nonsense, where=tuple(chosen))


def _jsonl(records: list[Any]) -> bytes:
    return b"".join(json.dumps(r, allow_nan=True).encode() + b"\n" for r in records)


def _trace_holds_nonsense(fmt: str, data: bytes) -> bool:
    """Whether a trace's complete lines hold a non-finite or absurd value.

    A last line without its newline is a cut line: its last CSV cell may be cut short (``1e300``
    to ``1e3``) and a cut JSON record does not parse, so only what survives whole is judged.
    """
    lines = data.split(b"\n")
    last = lines.pop()
    if fmt == "csv":
        cells = [c for ln in lines[1:] for c in ln.decode("utf-8", "replace").split(",")]
        cells += last.decode("utf-8", "replace").split(",")[:-1] if lines else []
        return any(c.strip() in ("nan", "inf", "1e300") for c in cells)
    found = False
    for ln in [*lines, last]:
        try:
            rec = json.loads(ln)
        except ValueError:
            continue
        if isinstance(rec, dict):
            found |= any(is_nonsense(v) for v in rec.values())
    return found


@st.composite
def trace_cases(draw: st.DrawFn) -> Case:
    fmt = draw(st.sampled_from(["jsonl", "csv"]))
    n = draw(st.integers(1, 30))
    field_value = st.one_of(values, st.just([1, 2]), st.just({"a": 1}))
    if fmt == "jsonl":
        recs: list[Any] = [
            {
                "timestamp": i * 100,
                "input_length": 2000 + 13 * i,
                "output_length": 100 + i,
                "hash_ids": list(range(i, i + 4)),
            }
            for i in range(n)
        ]
        for _ in range(draw(st.integers(0, 3))):
            i = draw(st.integers(0, n - 1))
            key = draw(st.sampled_from(["timestamp", "input_length", "output_length", "hash_ids"]))
            if draw(st.booleans()):
                recs[i][key] = draw(field_value)
            else:
                recs[i].pop(key, None)
        data = _jsonl(recs)
    else:
        header = draw(
            st.sampled_from(
                [
                    "timestamp_ms,input_length,output_length,hit_rate",
                    "timestamp_ms,input_length,output_length,cached_tokens",
                    "input_length,output_length",
                    "a,b,c,d",
                ]
            )
        )
        hit = (
            (lambda i: str((1000 + i) * i // n))
            if header.endswith("cached_tokens")
            else (lambda i: str(round(i / n, 3)))
        )
        rows = [[str(i * 100), str(1000 + i), str(50 + i), hit(i)] for i in range(n)]
        for _ in range(draw(st.integers(0, 3))):
            i = draw(st.integers(0, n - 1))
            j = draw(st.integers(0, 3))
            rows[i][j] = draw(st.sampled_from(["", "nan", "inf", "-1", "1e300", "x", "[1,2]", "2"]))
        data = (header + "\n" + "\n".join(",".join(r) for r in rows) + "\n").encode()
    wrap = draw(st.sampled_from(["plain", "plain", "gz", "fake-gz", "garbage", "truncate"]))
    name = f"trace.{fmt}"
    plain = data
    if wrap == "gz":
        data, name = gzip.compress(data), name + ".gz"
    elif wrap == "fake-gz":
        name = name + ".gz"
    elif wrap == "garbage":
        data = draw(st.binary(max_size=200))
    elif wrap == "truncate" and len(data) > 2:
        data = data[: draw(st.integers(1, len(data) - 1))]
    # judged on what the file holds in the end: a later mutation or the cut may remove a value
    nonsense = wrap != "garbage" and _trace_holds_nonsense(fmt, data if wrap != "gz" else plain)
    if draw(st.integers(0, 3)) == 0:
        argv = ["simulate", "--trace", name, "-n", "300", "-f", "json"]
    else:
        argv = ["hitrate", name, "-f", "json"]
        if draw(st.booleans()):
            argv += ["--cache-tokens", draw(st.sampled_from(["1k,unbounded", "0", "64k", "nan"]))]
        if draw(st.integers(0, 3)) == 0:
            argv += ["--skip-bad-lines"]
            nonsense = False  # skipping and counting bad lines is what was asked for
    where = (name, "--cache-tokens") if "--cache-tokens" in argv else (name,)
    return Case("trace", argv, {name: data}, nonsense=nonsense, where=where)


CHIP_CSV = (ROOT / "examples" / "measurements" / "h100-published.csv").read_text(encoding="utf-8")
LINK_CSV = (ROOT / "examples" / "measurements" / "pdd-brief-handover.csv").read_text(
    encoding="utf-8"
)


@st.composite
def calib_cases(draw: st.DrawFn) -> Case:
    link = draw(st.booleans())
    text = LINK_CSV if link else CHIP_CSV
    lines = text.splitlines()
    header, body = lines[0], [ln.rsplit(",", 0)[0] for ln in lines[1:]]
    nonsense = False
    rows = [next(iter([ln])) for ln in body]
    cells = [r.split(",", len(header.split(",")) - 1) for r in rows]
    for _ in range(draw(st.integers(0, 3))):
        i = draw(st.integers(0, len(cells) - 1))
        j = draw(st.integers(0, len(cells[i]) - 2))
        v = draw(st.sampled_from(["", "nan", "inf", "-1", "0", "1e300", "x", "1e-300", "ttft"]))
        cells[i][j] = v
    if draw(st.integers(0, 4)) == 0:
        cells = cells[: draw(st.integers(0, 1))]
    nonsense = any(v in ("nan", "inf", "1e300") for row in cells for v in row[:-1])
    if draw(st.integers(0, 5)) == 0:
        header = draw(st.sampled_from(["", "a,b", header.replace("latency", "lat")]))
    data = (header + "\n" + "\n".join(",".join(c) for c in cells) + "\n").encode()
    if draw(st.integers(0, 8)) == 0:
        data = draw(st.binary(max_size=100))
    if link:
        argv = ["calibrate", "m.csv", "--link", "wan-100g-cross-city", "-f", "json"]
    else:
        argv = [
            "calibrate",
            "m.csv",
            "--chip",
            "h100-sxm",
            "--model",
            "llama-3.3-70b",
            "-f",
            "json",
        ]
    return Case("calib", argv, {"m.csv": data}, nonsense=nonsense, where=("m.csv",))


_PLAN_DOC: dict[str, Any] | None = None


def plan_doc() -> dict[str, Any]:
    """The JSON plan of ``pddplan solve`` on the default scenario (computed once)."""
    global _PLAN_DOC
    if _PLAN_DOC is None:
        import pddplan

        _PLAN_DOC = json.loads(json.dumps(pddplan.solve("default").to_json()))
    return copy.deepcopy(_PLAN_DOC)


@st.composite
def plan_cases(draw: st.DrawFn) -> Case:
    doc = plan_doc()
    plan = doc["plan"]
    doc2, nonsense, keys = draw(mutated({"plan": plan}))
    # simulate reads only the fleet, the routing threshold, the hand-over and the rate: a
    # nonsense value elsewhere (a cost, a procurement row's figures) is not read, so exit 0 on it
    # is no silent success; judged by the value's path, not its key's name (procurement rows
    # have "chip" keys too)
    read = {"rate_rps", "routing_threshold_hit_rate", "handover", "roles", "chips"}
    role_read = {"chip", "chips_per_instance", "layout", "instances", "batch_per_instance"}

    def is_read(path: tuple[Any, ...]) -> bool:
        if len(path) < 2 or path[1] not in read:
            return False
        return path[1] != "roles" or len(path) < 4 or path[3] in role_read

    nonsense = nonsense and any(
        is_read(path) and is_nonsense(_get(doc2, path)) for path in leaves(doc2)
    )
    doc["plan"] = doc2.get("plan", None)
    if draw(st.integers(0, 6)) == 0:
        data = draw(st.sampled_from([b"", b"[]", b"{", b"null", b'{"plan": 1}', b"\xff\xfe"]))
    else:
        data = json.dumps(doc, allow_nan=True).encode()
    argv = ["simulate", "--plan", "plan.json", "-n", "300", "-f", "json"]
    note = f"mutated {', '.join(map(str, keys))}" if keys else ""
    return Case(
        "plan", argv, {"plan.json": data}, nonsense=nonsense, where=("plan.json", *keys), note=note
    )


OVERRIDE_PATHS = [
    "rate_rps",
    "link.bandwidth_gbit_per_s",
    "link.rtt_ms",
    "link.efficiency",
    "link.jitter_cv",
    "rdma.bandwidth_gbit_per_s",
    "chips.gpu-a.datasheet.memory_bandwidth_tb_per_s",
    "chips.gpu-a.derates.compute_efficiency",
    "chips.gpu-b.price_usd_per_hour",
    "chips.gpu-a.price.rental_usd_per_hour",
    "serving.prefill_utilization_cap",
    "serving.chunk_size_tokens",
    "serving.link_utilization_cap",
    "sla.ttft_p99_s",
    "sla.tpot_ms",
    "workload.hit_rate.shift",
    "workload.input_tokens",
    "model.architecture.layers",
    "model.dtypes.kv_cache",
    "limits.max_chips.gpu-a",
    "link",
    "nonexistent.key",
]


@st.composite
def api_cases(draw: st.DrawFn) -> Case:
    paths = draw(st.lists(st.sampled_from(OVERRIDE_PATHS), min_size=1, max_size=2, unique=True))
    ov: dict[str, Any] = {}
    nonsense = False
    for p in paths:
        v = draw(st.one_of(values, st.just({"fixed": 10**12}), st.just({"lognormal": {}})))
        nonsense |= is_nonsense(v)
        ov[p] = v
    return Case("api", api=ov, nonsense=nonsense, where=tuple(paths))


# --------------------------------------------- surfaces added since the first version

LINK_PARAMS = ["rtt_ms", "per_transfer_latency_ms", "max_window_bytes", "loss_rate", "jitter_cv"]
ROBUST_FLAGS = ["--samples", "--confidence", "--seed", "--rate", "--jobs", "--own", "--max-chips"]


@st.composite
def link_fit_cases(draw: st.DrawFn) -> Case:
    """``calibrate --link`` with ``--fit`` / ``--fix`` lists: names, misspellings, overlaps."""
    names = st.sampled_from([*LINK_PARAMS, "rtt", "", "rtt_ms,rtt_ms", "efficiency,x", "all"])
    argv = ["calibrate", "m.csv", "--link", "wan-100g-cross-city", "-f", "json"]
    chosen: list[str] = []
    for flag in draw(st.lists(st.sampled_from(["--fit", "--fix"]), min_size=1, max_size=2)):
        argv += [flag, draw(names)]
        chosen.append(flag)
    data = draw(st.sampled_from([LINK_CSV, LINK_CSV.splitlines()[0] + "\n"])).encode()
    return Case("link", argv, {"m.csv": data}, where=(*chosen, "m.csv"))


@st.composite
def robust_cases(draw: st.DrawFn) -> Case:
    """``robust`` with odd options (few samples: each is a solve)."""
    argv = ["robust", "pdd-paper", "--samples", "4", "-f", "json"]
    chosen = draw(st.lists(st.sampled_from(ROBUST_FLAGS), min_size=1, max_size=2, unique=True))
    nonsense = False
    for flag in chosen:
        val = draw(st.sampled_from(ODD_ARGS))
        if flag == "--samples" and val.lstrip("-").isdigit() and int(val) > 8:
            val = "8"
        nonsense |= val.lower() in ("nan", "inf", "-inf", "1e308") or "nan" in val
        argv += [flag, val]
    return Case("robust", argv, nonsense=nonsense, where=tuple(chosen))


UNCERTAIN = ["chips.gpu-b.price_usd_per_hour", "workload.anomalous.share", "link.rtt_ms", "nope"]
DISTS = [
    "{uniform: {low: 2.4, high: 2.6}}",
    "{uniform: {low: 3, high: 1}}",
    "{uniform: {low: .nan, high: 1}}",
    "{normal: {mean: 1, sd: -1}}",
    "{lognormal: {mean: 0, cv: 0.1}}",
    "{triangular: {low: 0, mode: 5, high: 1}}",
    "7",
    "{}",
]


@st.composite
def uncertainty_cases(draw: st.DrawFn) -> Case:
    """``robust`` on a scenario whose ``uncertainty.inputs`` are mutated."""
    text = (ROOT / "examples" / "pdd-paper.yaml").read_text()
    head = text.split("\nuncertainty:")[0]
    block = "\nuncertainty:\n  source: fuzz\n  inputs:\n"
    for _ in range(draw(st.integers(1, 2))):
        block += f"    {draw(st.sampled_from(UNCERTAIN))}: {draw(st.sampled_from(DISTS))}\n"
    argv = ["robust", "s.yaml", "--samples", "4", "-f", "json"]
    return Case("uncertain", argv, {"s.yaml": (head + block).encode()}, where=("s.yaml",))


LAYOUT_VALUES = ["tp", "[tp]", "tp,ep", "[ep-tbo]", "dep", "[]", "", "1", "tp,tp", "[tp,ep,ep-tbo]"]


@st.composite
def layout_cases(draw: st.DrawFn) -> Case:
    """``--set`` of the layout lists, in ``solve`` and ``sweep``."""
    path = draw(st.sampled_from(["roles.P.layouts", "roles.RLD.layouts", "baseline.layouts"]))
    val = draw(st.sampled_from(LAYOUT_VALUES))
    argv = ["solve", "pdd-paper", "--set", f"{path}={val}", "--no-verdict-check", "-f", "json"]
    return Case("layouts", argv, where=(path, "--set"))


#: The start of the one line pddplan prints for an error that is its own bug
#: (:class:`pddplan.errors.InvariantError`).
INTERNAL_ERROR = "pddplan: error: internal error"

#: Owned chips, and what prices them: at sunk cost an owned chip costs only its opex (0 by
#: default), so a fleet of owned chips, and PDD's with a free line, can cost nothing.
FREE_OWN = [
    ["--own", "gpu-a=64"],
    ["--own", "gpu-a=64", "--own", "gpu-b=64"],
    ["--own", "gpu-b=16"],
]
SUNK = "inventory.owned_cost=sunk"
FREE_PRICING = [
    ["--set", SUNK],
    ["--set", SUNK, "--set", "link.price_usd_per_month=0"],
    ["--set", SUNK, "--set", "inventory.opex_usd_per_chip_hour=0.5"],
    ["--set", "inventory.owned_cost=amortized", "--set", "link.price_usd_per_month=0"],
]
#: The commands that rank, plot or report a fleet's BCR (the scenario goes after the name).
FREE_COMMANDS = [
    ["solve", "-f", "json"],
    ["solve", "--max-bcr", "-f", "json"],
    ["solve", "--rate", "0.05", "-f", "json"],
    ["bathtub", "-f", "json"],
    ["pareto", "-f", "json"],
    ["sweep", "--set", "rate_rps=1,2", "-f", "json"],
    ["robust", "--samples", "4", "-f", "json"],
    ["breakeven", "-f", "json"],
]


@st.composite
def free_fleet_cases(draw: st.DrawFn) -> Case:
    """Fleets that may cost nothing (owned chips at sunk cost, a free line) in every command
    that ranks, plots or reports BCR: each must answer (a free fleet's BCR ``null``) or say in
    one line that the BCR is unbounded; never a traceback or an internal error."""
    cmd = draw(st.sampled_from(FREE_COMMANDS))
    own = draw(st.sampled_from(FREE_OWN))
    argv = [cmd[0], "pdd-paper", *cmd[1:], *own, *draw(st.sampled_from(FREE_PRICING))]
    return Case("free", argv)


@st.composite
def inventory_cases(draw: st.DrawFn) -> Case:
    """``--own CHIP=N`` (owned chips) beside ``--max-chips``, in ``solve``."""
    own = st.sampled_from(
        [
            "gpu-a=4",
            "gpu-a=0",
            "gpu-b=-1",
            "gpu-zz=3",
            "gpu-a=²",
            "gpu-a=1e3",
            "gpu-a=" + "9" * 40,
            "gpu-a",
            "=3",
            "gpu-a=8,gpu-b=16",
        ]
    )
    argv = ["solve", "pdd-paper", "--no-verdict-check", "-f", "json", "--own", draw(own)]
    chosen = ["--own"]
    if draw(st.booleans()):
        argv += ["--max-chips", draw(own)]
        chosen.append("--max-chips")
    # an owned chip without a capital cost is the inventory's error, named as such
    return Case("inventory", argv, where=(*chosen, "inventory"))


STEP_SETS = ["model.dtypes.weights", "chip.derates.compute_efficiency", "chip.nope", "model.x"]


@st.composite
def step_set_cases(draw: st.DrawFn) -> Case:
    """``step --set`` of the model or chip profile."""
    path = draw(st.sampled_from(STEP_SETS))
    val = draw(st.sampled_from(["bf16", "fp8", "0", "-1", "nan", "2", "0.5", "true", "x"]))
    argv = ["step", "-m", "qwen3-32b", "-c", "h100-sxm", "--tp", "2", "--batch", "8"]
    argv += ["--input-tokens", "1", "--context-tokens", "4096", "-f", "json"]
    argv += ["--set", f"{path}={val}"]
    return Case("step", argv, nonsense=val == "nan", where=(path, "--set"))


@st.composite
def report_cases(draw: st.DrawFn) -> Case:
    """``report`` (the procurement page) with odd options and outputs."""
    out = draw(st.sampled_from(["r.html", "r.md", "r.txt", "/dev/full", "missing/dir/r.html"]))
    argv = ["report", "pdd-paper", "-o", out]
    chosen = ["-o"]
    if draw(st.booleans()):
        flag = draw(st.sampled_from(["--rate", "--own", "--max-chips"]))
        argv += [flag, draw(st.sampled_from(ODD_ARGS))]
        chosen.append(flag)
    return Case("report", argv, where=tuple(chosen))


def _horizon_base() -> dict[str, Any]:
    """The bundled horizon example cut to four 6-hour slots and two months of growth (a case
    of the full example takes about 12 s of CPU)."""
    doc = _load(ROOT / "examples" / "agent-diurnal.yaml")
    load = dict(doc["load"])
    load.pop("weekday_rate_rps", None)
    load.update(slot_minutes=360, day_rate_rps=[0.3, 0.6, 1.2, 0.9])
    load["growth"] = {"monthly_rate": 0.04, "months": 2}
    return {**doc, "load": load}


def _cache_base() -> dict[str, Any]:
    """The bundled cache-tier example cut to three capacities and 2,000 session requests (the
    full example takes about 3 s of CPU)."""
    doc = _load(ROOT / "examples" / "cache-tiers.yaml")
    cache = dict(doc["cache"])
    cache["tiers"] = [
        {"profile": "host-dram", "capacity_gb_per_node": [0, 256]},
        {"profile": "local-nvme", "capacity_gb_per_node": [4096]},
    ]
    cache["hit_rate"] = {**cache["hit_rate"], "sessions": {"requests": 2000, "seed": 0}}
    return {**doc, "cache": cache}


TOPOLOGY_BASE = _load(ROOT / "examples" / "topologies" / "national.yaml")
#: a three-site topology with a resilience: block (partial line and site failures)
TOPOLOGY_N1_BASE = _load(ROOT / "examples" / "topologies" / "three-sites-n1.yaml")
CACHE_BASE = _cache_base()
HORIZON_BASE = _horizon_base()


@st.composite
def topology_cases(draw: st.DrawFn) -> Case:
    """``topology`` (or ``sweep`` over a traffic rate) on a mutated topology: the national
    one (sites, lines, traffic) or the three-site one with its resilience: block."""
    doc, nonsense, keys = draw(mutated(draw(st.sampled_from([TOPOLOGY_BASE, TOPOLOGY_N1_BASE]))))
    fmt = draw(st.sampled_from(["json", "csv"]))
    if draw(st.integers(0, 4)) == 0:
        traffic = doc.get("traffic")  # a mutation may empty the list, or replace it
        first = traffic[0] if isinstance(traffic, list) and traffic else {}
        entry = first.get("name", "0") if isinstance(first, dict) else "0"
        axis = f"traffic.{entry}.rate_rps=0.3,0.6"
        argv = ["sweep", "topo.yaml", "--set", axis, "-f", fmt]
    else:
        argv = ["topology", "topo.yaml", "-f", fmt]
        if draw(st.integers(0, 3)) == 0:
            argv.append("--resilient")
    return Case(
        "topology", argv, {"topo.yaml": dump(doc)}, nonsense=nonsense, where=("topo.yaml", *keys)
    )


@st.composite
def horizon_cases(draw: st.DrawFn) -> Case:
    """``horizon`` on a mutated load profile (slots, growth, elastic pools, owned chips)."""
    doc, nonsense, keys = draw(mutated({"load": HORIZON_BASE["load"]}))
    full = {**HORIZON_BASE, **doc}
    argv = ["horizon", "h.yaml", "-f", draw(st.sampled_from(["json", "csv"]))]
    return Case("horizon", argv, {"h.yaml": dump(full)}, nonsense=nonsense, where=("h.yaml", *keys))


@st.composite
def cache_cases(draw: st.DrawFn) -> Case:
    """``cache`` (and ``solve`` and ``bathtub``) on a mutated ``cache:`` section (tiers, their
    capacities, the hit-rate source)."""
    doc, nonsense, keys = draw(mutated({"cache": CACHE_BASE["cache"]}))
    full = {**CACHE_BASE, **doc}
    cmd = draw(
        st.sampled_from(
            [
                ["cache", "c.yaml", "-f", "json"],
                ["cache", "c.yaml", "-f", "csv", "--max-bcr"],
                ["solve", "c.yaml", "-f", "json"],
                ["profiles", "validate", "c.yaml"],
            ]
        )
    )
    return Case("cache", cmd, {"c.yaml": dump(full)}, nonsense=nonsense, where=("c.yaml", *keys))


SURFACES: dict[str, Callable[[], st.SearchStrategy[Case]]] = {
    "scenario": scenario_cases,
    "profile": profile_cases,
    "yaml": yaml_cases,
    "cli": cli_cases,
    "trace": trace_cases,
    "calib": calib_cases,
    "plan": plan_cases,
    "api": api_cases,
    "link": link_fit_cases,
    "robust": robust_cases,
    "uncertain": uncertainty_cases,
    "layouts": layout_cases,
    "inventory": inventory_cases,
    "free": free_fleet_cases,
    "step": step_set_cases,
    "report": report_cases,
    "topology": topology_cases,
    "horizon": horizon_cases,
    "cache": cache_cases,
}


def cases(surfaces: tuple[str, ...] = tuple(SURFACES)) -> st.SearchStrategy[Case]:
    return st.one_of([SURFACES[s]() for s in surfaces])


# ----------------------------------------------------------------------------- running


def _nonfinite(obj: Any) -> str | None:
    """Where a parsed JSON document holds an infinite or NaN number, or an 'inf' string."""
    stack: list[tuple[str, Any]] = [("", obj)]
    while stack:
        where, o = stack.pop()
        # a ratio against a baseline that serves nothing is documented as "inf"
        documented = where.startswith(".baselines") and where.endswith("_ratio") and o == "inf"
        if isinstance(o, float) and not math.isfinite(o):
            return where
        if isinstance(o, str) and o in ("inf", "-inf", "nan", "NaN", "Infinity") and not documented:
            return where
        if isinstance(o, dict):
            stack += [(f"{where}.{k}", v) for k, v in o.items()]
        elif isinstance(o, list):
            stack += [(f"{where}[{i}]", v) for i, v in enumerate(o)]
    return None


def _absurd_plan(obj: Any, free_ok: bool = False) -> str | None:
    """A plan that meets the SLA with zero BCR or an infinite or non-positive cost (a cost of
    exactly 0 is sane where ``free_ok``: owned chips at sunk cost, see :data:`FREE_PRICING`)."""
    stack = [obj]
    while stack:
        o = stack.pop()
        if isinstance(o, dict):
            if o.get("meets_sla") is True:
                bcr = o.get("bcr", o.get("bcr_rps_per_usd_per_hour"))
                if isinstance(bcr, int | float) and bcr <= 0:
                    return "meets_sla with BCR 0"
            cost = o.get("cost_usd_per_hour")
            unleased = o.get("lines_leased") == 0  # a topology's line nobody leases costs 0
            if (
                isinstance(cost, int | float)
                and not isinstance(cost, bool)
                and cost <= 0
                and not unleased
                and not (free_ok and cost == 0)
            ):
                return f"cost_usd_per_hour {cost}"
            stack += list(o.values())
        elif isinstance(o, list):
            stack += o
    return None


def check_output(stdout: str, free_ok: bool = False) -> str | None:
    """The output oracles: None when the output of a successful run is sane (``free_ok``: see
    :func:`_absurd_plan`)."""
    text = stdout.strip()
    if not text:
        return None
    if text.startswith("{"):
        try:
            doc = json.loads(text)
        except ValueError:
            return "JSON output does not parse"
        bad = _nonfinite(doc)
        if bad is not None:
            return f"non-finite number at {bad or '(top)'}"
        return _absurd_plan(doc, free_ok)
    for section in re.split(r"\n\s*\n", text):
        rows = [r for r in csv.reader(io.StringIO(section)) if r and not r[0].startswith("#")]
        if not rows:
            continue
        header = rows[0]
        for r in rows[1:]:
            for col, v in zip(header, r, strict=False):
                # a ratio against a baseline that serves nothing is documented as inf
                if v in ("inf", "-inf", "nan") and not col.endswith("_ratio"):
                    return f"non-finite number in CSV column {col}"
    return None


def run_case(case: Case, time_limit_s: float | None = None) -> Outcome:
    """Run one case in a fresh temporary directory (the working directory during the run).

    ``time_limit_s`` is in CPU seconds (default :data:`TIME_LIMIT_S` scaled by
    ``PDDPLAN_TEST_TIME_SCALE``, see tests/time_limits.py); a case past it is ``slow``.
    """
    if time_limit_s is None:
        time_limit_s = cpu_limit_s(TIME_LIMIT_S)
    from pddplan.cli import common, main
    from pddplan.errors import PddplanError

    cwd = os.getcwd()
    with tempfile.TemporaryDirectory(prefix="pddfuzz") as tmp:
        for rel, data in case.files.items():
            p = Path(tmp) / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(data)
        (Path(tmp) / "outdir").mkdir()
        os.symlink(ROOT / "tests", Path(tmp) / "tests")
        out, err = io.StringIO(), io.StringIO()
        code: int | None = None
        exc_text = ""
        t0 = cpu_s()
        os.chdir(tmp)
        common.State.profile_dirs = []
        try:
            with (
                cpu_time_limit(time_limit_s),
                contextlib.redirect_stdout(out),
                contextlib.redirect_stderr(err),
            ):
                if case.api is not None:
                    import pddplan

                    try:
                        res = pddplan.solve("default", overrides=case.api)
                        out.write(json.dumps(res.to_json(), allow_nan=True))
                        code = 0
                    except PddplanError as e:
                        err.write(f"pddplan: error: {e}\n")
                        code = e.exit_code
                else:
                    try:
                        # absolute paths: profile loads are cached by path within a process
                        main([a.replace("{tmp}", str(Path(tmp).resolve())) for a in case.argv])
                        code = 0
                    except SystemExit as e:
                        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        except CpuTimeout:
            return Outcome("slow", None, cpu_s() - t0, err.getvalue())
        except BaseException as e:  # noqa: BLE001 - every other escape is a traceback
            exc_text = f"{type(e).__name__}: {str(e)[:200]}"
            import traceback

            tb = traceback.extract_tb(e.__traceback__)
            if tb:
                last = tb[-1]
                exc_text += f" at {Path(last.filename).name}:{last.lineno}"
        finally:
            os.chdir(cwd)
        elapsed = cpu_s() - t0
    stderr = err.getvalue()
    if exc_text:
        return Outcome("traceback", None, elapsed, stderr, exc_text)
    return classify(case, code, out.getvalue(), stderr, elapsed, time_limit_s)


def classify(
    case: Case, code: int | None, stdout: str, stderr: str, elapsed: float, limit: float
) -> Outcome:
    if elapsed > limit:
        return Outcome("slow", code, elapsed, stderr)
    if "Traceback (most recent call last)" in stderr:
        return Outcome("traceback", code, elapsed, stderr, stderr.strip().splitlines()[-1])
    if INTERNAL_ERROR in stderr:  # pddplan's own word for a bug: as bad as a traceback
        return Outcome("traceback", code, elapsed, stderr, stderr.strip().splitlines()[0])
    if code == 0:
        if case.nonsense:
            return Outcome("silent", 0, elapsed, stderr, "exit 0 on a non-finite or absurd value")
        bad = check_output(stdout, free_ok=SUNK in case.argv)
        if bad:
            return Outcome("silent", 0, elapsed, stderr, bad)
        return Outcome("ok", 0, elapsed, stderr)
    if code in (1, 2, 3):
        lines = [
            ln
            for ln in stderr.splitlines()
            if ln and not ln.startswith("pddplan: warning:") and not ln.startswith("  ")
        ]
        errs = [ln for ln in lines if ln.startswith("pddplan: error:")]
        click_usage = code == 2 and any(ln.startswith("Error:") or "Error" in ln for ln in lines)
        if len(errs) == 1 and len(lines) == 1:
            msg = errs[0]
            if case.where and code != 3 and not any(w in msg for w in case.where):
                return Outcome("wrong-place", code, elapsed, stderr, msg)
            return Outcome("error", code, elapsed, stderr)
        if click_usage and not errs:
            return Outcome("error", code, elapsed, stderr)
        return Outcome("wrong-place", code, elapsed, stderr, "not one error line: " + stderr[:300])
    return Outcome("traceback", code, elapsed, stderr, f"exit code {code}")
