"""``topology --plot``: the picture is written; sites sit at their longitude and latitude, or on
a circle when a site gives none."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from pddplan import api
from pddplan.report.topology_plot import site_positions


def test_positions_follow_lon_lat(small_file: Path) -> None:
    pos = site_positions(api.topology(small_file))
    k = math.cos(math.radians(30.0))  # the sites' mean latitude
    assert pos["a"] == pytest.approx((110.0 * k, 30.0))
    assert pos["b"][0] - pos["a"][0] == pytest.approx(2.0 * k)  # east is right
    assert pos["b"][1] > pos["c"][1]  # north is up


def test_positions_on_a_circle_without_coordinates(
    tmp_path: Path, small_doc: dict[str, Any]
) -> None:
    doc = small_doc
    del doc["sites"][1]["lat_deg"]
    f = tmp_path / "t.yaml"
    f.write_text(yaml.safe_dump(doc))
    pos = site_positions(api.topology(f))
    assert all(math.hypot(x, y) == pytest.approx(1.0) for x, y in pos.values())
    assert len({(round(x, 9), round(y, 9)) for x, y in pos.values()}) == 3


def test_cli_plot_writes_a_png(tmp_path: Path, small_file: Path) -> None:
    pytest.importorskip("matplotlib")
    f = small_file
    png = tmp_path / "topo.png"
    cmd = [sys.executable, "-m", "pddplan", "topology", str(f), "--resilient", "--plot", str(png)]
    res = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stderr
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    bad = subprocess.run([*cmd[:-1], str(tmp_path / "topo.txt")], capture_output=True, text=True)
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1
    assert ".png" in bad.stderr
