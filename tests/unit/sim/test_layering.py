"""The simulator's imports: nothing above the computation layers, and the event handlers apart
from the event loop (design.md: "sim/ event loop apart from event handlers")."""

from __future__ import annotations

import ast
from pathlib import Path

import pddplan.sim

SIM_DIR = Path(pddplan.sim.__file__).parent
#: Packages that sit above the simulator (results and renderers wrap it; api and cli call it).
ABOVE = ("pddplan.results", "pddplan.report", "pddplan.api", "pddplan.cli")


def _imports(path: Path) -> set[str]:
    """Every module a file imports, at any level (functions and TYPE_CHECKING blocks too)."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
            out.update(f"{node.module}.{a.name}" for a in node.names)
    return out


def _above(module: str) -> bool:
    return any(module == top or module.startswith(top + ".") for top in ABOVE)


def test_sim_imports_nothing_above_it() -> None:
    files = sorted(SIM_DIR.glob("*.py"))
    assert len(files) > 5  # the package was found
    bad = {p.name: sorted(m for m in _imports(p) if _above(m)) for p in files}
    assert {k: v for k, v in bad.items() if v} == {}


def test_handlers_and_state_do_not_import_the_engine() -> None:
    for name in ("handlers.py", "state.py"):
        mods = _imports(SIM_DIR / name)
        assert not any(m.startswith("pddplan.sim.engine") for m in mods), name


def test_the_import_reader_sees_function_level_imports(tmp_path: Path) -> None:
    f = tmp_path / "m.py"
    f.write_text("def g():\n    from pddplan.results.simulate import x\n", encoding="utf-8")
    assert any(_above(m) for m in _imports(f))
