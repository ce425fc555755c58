"""What a command's process imports at its start: only the module of the command it runs (the
whole app for ``--help``), not ``importlib.metadata`` (``email``, ``zipfile``) for pydantic's
plugins while the environment leaves them off (pddplan.cli.no_pydantic_plugins), and not PyYAML
where every document comes from the parse cache. Checked in fresh processes, by the modules
loaded, never by a time."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pddplan.cli import COMMAND_MODULES
from tests.fresh import fresh_runs

PROBE = """\
import json, sys
from pddplan.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
loaded = sorted(m for m in sys.modules if m.startswith(("pddplan.cli.", "email", "importlib.metadata")))
print(json.dumps(loaded), file=sys.stderr)
"""


def _loaded(argv: list[str], **env: str) -> set[str]:
    environ = {k: v for k, v in os.environ.items() if k != "PYDANTIC_DISABLE_PLUGINS"}
    r = subprocess.run(
        [sys.executable, "-c", PROBE, *argv],
        capture_output=True,
        text=True,
        env={**environ, **env},
    )
    import json

    return set(json.loads(r.stderr.strip().splitlines()[-1]))


def test_a_command_loads_only_its_module_and_no_distribution_metadata() -> None:
    """``solve`` (its options checked, which builds pydantic's first schema) loads the CLI's
    ``solve_cmd`` alone, and neither ``importlib.metadata`` nor ``email``."""
    loaded = _loaded(["solve", "--rate", "-5"])
    assert loaded == {"pddplan.cli.common", "pddplan.cli.solve_cmd"}, loaded


def test_help_declares_every_command() -> None:
    loaded = _loaded(["--help"])
    assert {f"pddplan.cli.{m}" for m in COMMAND_MODULES} <= loaded, loaded


@pytest.mark.parametrize("value", ["", "some-plugin"])
def test_pydantic_loads_its_plugins_when_the_environment_asks(value: str) -> None:
    """With ``PYDANTIC_DISABLE_PLUGINS`` set to leave some plugin on, pydantic's own loader
    scans the distributions, as it does without pddplan."""
    assert "importlib.metadata" in _loaded(
        ["solve", "--rate", "-5"], PYDANTIC_DISABLE_PLUGINS=value
    )


def test_the_stand_in_loader_answers_no_plugins_and_else_is_the_real_one() -> None:
    code = (
        "import sys\n"
        "from pddplan.cli import PYDANTIC_PLUGIN_LOADER, _NoPydanticPlugins\n"
        "stub = _NoPydanticPlugins(PYDANTIC_PLUGIN_LOADER)\n"
        "sys.modules[PYDANTIC_PLUGIN_LOADER] = stub\n"
        "from pydantic.plugin._loader import get_plugins\n"
        "print(list(get_plugins()), 'importlib.metadata' in sys.modules)\n"
        "print(stub.PYDANTIC_ENTRY_POINT_GROUP, sys.modules[PYDANTIC_PLUGIN_LOADER] is not stub)\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert r.stdout.split() == ["[]", "False", "pydantic", "True"], r.stdout


def test_a_scenario_read_from_the_parse_cache_does_not_import_yaml(tmp_path: Path) -> None:
    """Once the parse cache holds a scenario's documents, loading it again (a new process) does
    not import PyYAML: the strict loader is made on the first parse only."""
    code = (
        "import sys\n"
        "from pddplan.api import load_scenario\n"
        "load_scenario('default')\n"
        "print('yaml' in sys.modules)\n"
    )
    runs = [r.stdout.split() for r in fresh_runs(code, tmp_path / "cache", 2)]
    assert runs == [["True"], ["False"]], runs


def test_a_default_solve_loads_none_of_what_its_table_does_not_use() -> None:
    """``pddplan solve`` (the default scenario, a table) loads neither the Pareto frontier nor
    the simulator's plan, nor the CSV and JSON writers, nor rich's table of emoji codes."""
    code = (
        "import sys\n"
        "from pddplan.cli import main\n"
        "try:\n"
        "    main(['solve'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "mods = ('pddplan.solver.pareto', 'pddplan.sim.plan', 'csv', 'json', 'rich._emoji_codes')\n"
        "print('LOADED:' + ','.join(m for m in mods if m in sys.modules), file=sys.stderr)\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert r.stderr.strip().splitlines()[-1] == "LOADED:", r.stderr[-500:]
