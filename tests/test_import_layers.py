"""The import rule of ../shared/design.md, read from the package's import graph.

Every ``import`` and ``from ... import`` in pddplan counts: at module level, inside functions
(lazy imports) and under ``if TYPE_CHECKING:``. The test fails on

- an import that goes up the layers (a lower layer importing a higher one);
- a cycle between modules, or between the top-level packages;
- a module at pddplan's top level that is not one of the edge modules.

Layers, lowest first (a package may import its own layer and those below)::

    errors units labels limits defaults  <  models  <  spec  <  io executors  <  deployment  <  timing
      <  solver  <  bathtub whatif calibrate robust trace sim step transfer tiers
      <  results  <  report  <  api  <  pddplan (the lazy public API)  <  cli  <  __main__
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "pddplan"

LAYERS: list[tuple[str, ...]] = [
    ("errors", "units", "labels", "limits", "defaults"),
    ("models",),
    ("spec",),
    ("io", "executors"),
    ("deployment",),
    ("timing",),
    ("solver",),
    (
        "bathtub",
        "whatif",
        "calibrate",
        "robust",
        "trace",
        "sim",
        "step",
        "transfer",
        "topology",
        "horizon",
        "tiers",
    ),
    ("results",),
    ("report",),
    ("api",),
    ("",),  # pddplan/__init__.py: the public API, loaded lazily from api
    ("cli",),
    ("__main__",),
]
LAYER = {name: i for i, names in enumerate(LAYERS) for name in names}
#: Modules allowed at pddplan's top level: the edge, the one timeline, the entry points.
TOP_LEVEL_MODULES = {
    "__init__",
    "__main__",
    "errors",
    "units",
    "labels",
    "limits",
    "defaults",
    "timing",
}


def _modules() -> dict[str, Path]:
    out = {}
    for f in PACKAGE.rglob("*.py"):
        parts = f.relative_to(PACKAGE.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = f
    return out


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """Every pddplan module ``name`` imports (the deepest module each import names)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            targets = [
                f"{mod}.{a.name}" if f"{mod}.{a.name}" in modules else mod for a in node.names
            ]
        else:
            continue
        for t in targets:
            while t and t not in modules:
                t = t.rpartition(".")[0]
            if t.startswith("pddplan") and t != name:
                found.add(t)
    return found


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def _unit(module: str) -> str:
    """The layer unit of a module: its top-level package (or module) under pddplan."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_every_unit_has_a_layer() -> None:
    units = {_unit(m) for m in _graph()}
    assert units <= set(LAYER), f"packages without a layer: {sorted(units - set(LAYER))}"


def test_top_level_holds_only_the_edge() -> None:
    stray = sorted(p.stem for p in PACKAGE.glob("*.py") if p.stem not in TOP_LEVEL_MODULES)
    assert not stray, f"modules at pddplan's top level that belong in a package: {stray}"


def test_no_import_goes_up_the_layers() -> None:
    upward = []
    for mod, targets in sorted(_graph().items()):
        a = LAYER[_unit(mod)]
        for t in sorted(targets):
            b = LAYER[_unit(t)]
            if b > a:
                upward.append(f"{mod} -> {t} ({LAYERS[a]} imports {LAYERS[b]})")
    assert not upward, "imports that go up the layers:\n" + "\n".join(upward)


def test_no_module_cycle() -> None:
    cycles = _cycles(_graph())
    assert not cycles, "import cycles between modules:\n" + "\n".join(map(str, cycles))


def test_no_package_cycle() -> None:
    units: dict[str, set[str]] = defaultdict(set)
    for mod, targets in _graph().items():
        for t in targets:
            if _unit(t) != _unit(mod):
                units[_unit(mod)].add(_unit(t))
    cycles = _cycles(dict(units))
    assert not cycles, "import cycles between packages:\n" + "\n".join(map(str, cycles))


def test_the_rule_sees_lazy_and_type_checking_imports(tmp_path: Path) -> None:
    """The reader counts imports inside functions and under TYPE_CHECKING (the test can fail)."""
    src = tmp_path / "m.py"
    src.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from pddplan.api import solve\n"
        "def f():\n    from pddplan.cli import main\n    import pddplan.report\n"
    )
    modules = {
        "pddplan.models.m": src,
        "pddplan.api": src,
        "pddplan.cli": src,
        "pddplan.report": src,
    }
    assert _imports("pddplan.models.m", src, modules) == {
        "pddplan.api",
        "pddplan.cli",
        "pddplan.report",
    }
    assert _cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b"]]


#: What the CLI may import: it parses, calls the API and renders (design.md: cli -> api).
CLI_MAY_IMPORT = {"", "api", "results", "report", "errors", "limits", "units", "defaults", "cli"}
#: Modules outside those that the CLI may import all the same: its process's set-up, which
#: plans nothing (the dataclass methods compiled once, :mod:`pddplan.io.code_cache`).
CLI_MAY_IMPORT_MODULES = {"pddplan.io.code_cache"}


def test_the_cli_goes_through_the_api() -> None:
    around = sorted(
        f"{mod} -> {t}"
        for mod, targets in _graph().items()
        if _unit(mod) == "cli"
        for t in targets
        if _unit(t) not in CLI_MAY_IMPORT and t not in CLI_MAY_IMPORT_MODULES
    )
    assert not around, "the CLI goes around the API:\n" + "\n".join(around)


def test_help_loads_neither_the_api_nor_numpy_nor_scipy() -> None:
    """``pddplan --help`` and a command's ``--help`` stay light: the API (its option models, the
    solver, numpy) loads on first use, not while the commands are declared."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from pddplan.cli import main\n"
        "for argv in (['--help'], ['bathtub', '--help']):\n"
        "    try:\n"
        "        main(argv)\n"
        "    except SystemExit:\n"
        "        pass\n"
        "heavy = [m for m in ('pddplan.api', 'numpy', 'scipy') if m in sys.modules]\n"
        "print('HEAVY:' + ','.join(heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "HEAVY:", out.stdout[-300:]


def _cli_runs(first: list[str], heavy: tuple[str, ...], then: list[str]) -> str:
    """Python code that runs the CLI with ``first``, prints ``HEAVY:`` and those of the modules
    ``heavy`` that are loaded then, and runs it with ``then``; each run prints ``EXIT:`` and
    its exit code."""
    return (
        "import sys\n"
        "from pddplan.cli import main\n"
        "def run(argv):\n"
        "    try:\n"
        "        main(argv)\n"
        "    except SystemExit as exc:\n"
        "        print('EXIT:', exc.code)\n"
        f"run({first!r})\n"
        f"heavy = [m for m in {heavy!r} if m in sys.modules]\n"
        "print('HEAVY:' + ','.join(heavy))\n"
        f"run({then!r})\n"
    )


def test_a_yaml_error_loads_neither_the_schemas_nor_the_solver(tmp_path: Path) -> None:
    """A scenario file that is not YAML is reported (file, line, exit code 1) before a command
    loads pydantic, the specs or numpy: the CLI parses it first (``read_scenario_early``)."""
    import subprocess
    import sys

    bad = tmp_path / "typo.yaml"
    bad.write_text("kind: scenario\nrate_rps: [\n")
    # typer converts sweep's --set values (and a number option of solve's) with pydantic
    # before the command runs: the run after the listing loads it, but reports the same error
    code = _cli_runs(
        ["solve", str(bad)],
        ("pydantic", "pddplan.spec", "numpy"),
        ["sweep", str(bad), "--set", "rate_rps=1,2"],
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    lines = out.stdout.strip().splitlines()
    assert lines == ["EXIT: 1", "HEAVY:", "EXIT: 1"], out.stdout[-300:]
    assert out.stderr.count(f"{bad}:3: invalid YAML") == 2, out.stderr


def test_a_value_the_schema_rejects_loads_neither_the_api_nor_the_solver(tmp_path: Path) -> None:
    """A scenario file with a value out of its range (or keys that disagree, the TTFT targets'
    order) is reported (file, line, key, what is allowed; exit code 1) once the schemas have
    validated it (``read_scenario_early``), before the command imports the API's options, the
    solver or numpy, and before a bad option of the command; the message is the one loading
    the file through the API raises."""
    import subprocess
    import sys

    from pddplan.api import load_scenario
    from pddplan.errors import ProfileError

    ok = "kind: scenario\nname: x\nmodel: qwen3-235b-a22b\nrate_rps: 2\n"
    files = {
        "range": ok.replace("rate_rps: 2", "rate_rps: -1"),
        "order": ok + "sla: {ttft_p50_s: 50, ttft_p90_s: 10, ttft_p99_s: 20, tpot_ms: 50}\n",
    }
    for name, text in files.items():
        bad = tmp_path / f"{name}.yaml"
        bad.write_text(text)
        with pytest.raises(ProfileError) as api_error:
            load_scenario(bad)
        code = _cli_runs(
            ["solve", str(bad)],
            ("pddplan.api.options", "pddplan.solver", "numpy"),
            ["solve", str(bad), "--rate", "-5"],
        )
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        )
        assert out.stdout.strip().splitlines() == ["EXIT: 1", "HEAVY:", "EXIT: 1"], out.stdout
        assert out.stderr.count(f"pddplan: error: {api_error.value}") == 2, out.stderr
        assert "--rate" not in out.stderr


def test_an_unknown_top_level_key_loads_neither_the_schemas_nor_the_solver(
    tmp_path: Path,
) -> None:
    """A scenario file's unknown top-level key is reported (file, line, exit code 1) before a
    command loads pydantic, the specs or numpy, once a run has kept the schema's keys in the
    parse cache (:mod:`pddplan.io.key_check`); the first run, which reads them from the schemas,
    reports the same line."""
    from tests.fresh import fresh_runs

    bad = tmp_path / "unknown.yaml"
    bad.write_text("kind: scenario\nname: x\nmodel: qwen3-235b-a22b\nbogus_key: 1\n")
    code = (
        "import sys\n"
        "from pddplan.cli import main\n"
        "try:\n"
        f"    main(['solve', {str(bad)!r}])\n"
        "except SystemExit as exc:\n"
        "    print('EXIT:', exc.code)\n"
        "heavy = [m for m in ('pydantic', 'pddplan.spec', 'numpy') if m in sys.modules]\n"
        "print('HEAVY:' + ','.join(heavy))\n"
    )
    runs = fresh_runs(code, tmp_path / "cache", 2)
    first, warm = (r.stdout.strip().splitlines() for r in runs)
    assert first[0] == "EXIT: 1" and first[1].startswith("HEAVY:pydantic"), first
    assert warm == ["EXIT: 1", "HEAVY:"], warm
    line = f"{bad}:4: bogus_key: unknown key 'bogus_key'"
    assert all(r.stderr.count(line) == 1 for r in runs), [r.stderr for r in runs]
    assert runs[0].stderr == runs[1].stderr
