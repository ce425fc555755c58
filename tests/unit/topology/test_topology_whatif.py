"""``sweep`` and ``report`` given a topology file: each point planned by the topology planner,
overrides on the file's own keys; commands that plan one two-site scenario refuse it."""

from __future__ import annotations

import copy
import math
from pathlib import Path
from typing import Any

import pytest
import yaml

from pddplan import api
from pddplan.api.scenario import registry
from pddplan.errors import OverrideError, PddplanError, UsageError
from pddplan.io.overrides import topology_patch
from pddplan.topology import plan_topology, read_topology


def _write(doc: dict[str, Any], path: Path) -> Path:
    path.write_text(yaml.safe_dump(doc))
    return path


def test_patch_by_name_or_index(small_doc: dict[str, Any]) -> None:
    by_name, key = topology_patch(small_doc, "traffic.s.rate_rps", 0.9)
    by_index, key_i = topology_patch(small_doc, "traffic.0.rate_rps", 0.9)
    assert by_name == by_index and key == key_i == "traffic.0.rate_rps"
    assert small_doc["traffic"][0]["rate_rps"] == 0.6  # not modified
    line, key = topology_patch(small_doc, "lines.a-c.link_numbers.bandwidth_gbit_per_s", 40)
    assert line["lines"][1]["link_numbers"] == {"bandwidth_gbit_per_s": 40}
    assert key == "lines.1.link_numbers.bandwidth_gbit_per_s"
    with pytest.raises(OverrideError, match="traffic has no entry 'x'"):
        topology_patch(small_doc, "traffic.x.rate_rps", 1)
    with pytest.raises(OverrideError, match="did you mean 'a-c'"):
        topology_patch(small_doc, "lines.a-d.max_count", 1)
    with pytest.raises(OverrideError, match="give a key of it"):
        topology_patch(small_doc, "sites.a", 1)


def test_bad_value_names_the_override(small_file: Path) -> None:
    with pytest.raises(OverrideError, match=r"overrides: traffic\.s\.rate_rps: .*greater than"):
        api.sweep(small_file, {"traffic.s.rate_rps": [0.3, -1.0]})
    with pytest.raises(OverrideError, match=r"lines\.0\.link_numbers\.bandwidth_gbit_per_s: "):
        api.sweep(small_file, {"lines.0.link_numbers.bandwidth_gbit_per_s": [-5]})


def test_sweep_points_are_the_topology_plans(
    small_doc: dict[str, Any], small_file: Path, tmp_path: Path
) -> None:
    rates, bws = [0.3, 0.6], [25, 100]
    res = api.sweep(
        small_file,
        [("traffic.s.rate_rps", rates), ("lines.a-b.link_numbers.bandwidth_gbit_per_s", bws)],
    )
    assert len(res.points) == len(rates) * len(bws)
    for row in res.points:
        # the same topology written as a file with the point's values, planned directly
        doc = copy.deepcopy(small_doc)
        doc["traffic"][0]["rate_rps"] = row["traffic.s.rate_rps"]
        doc["lines"][0]["link_numbers"] = {
            "bandwidth_gbit_per_s": row["lines.a-b.link_numbers.bandwidth_gbit_per_s"]
        }
        f = _write(doc, tmp_path / "point.yaml")
        tp = plan_topology(read_topology(str(f), registry(None)))
        assert row["feasible"]
        assert math.isclose(row["cost_usd_per_hour"], tp.cost_usd_per_hour, rel_tol=1e-12)
        assert row["pipelines"] == len(tp.chosen)
        assert row["failures"] == len(tp.failures)
    rep = res.report()
    assert "Cheapest at" in " ".join(rep.answer)


def test_sweep_on_an_executor_gives_the_same_rows(small_file: Path) -> None:
    axes = {"traffic.s.rate_rps": [0.3, 0.6]}
    local = api.sweep(small_file, axes)
    dist = api.sweep(small_file, axes, executor="local", jobs=2)
    assert local.points == dist.points


def test_report_of_a_topology(small_file: Path, tmp_path: Path) -> None:
    from pddplan.report.html import write_page

    res = api.plan_report(small_file, overrides={"traffic.s.rate_rps": 0.3})
    direct = api.topology(small_file, overrides={"traffic.s.rate_rps": 0.3})
    assert res.report().payload == direct.report().payload
    md, page = tmp_path / "r.md", tmp_path / "r.html"
    write_page(res, md)
    write_page(res, page)
    text = md.read_text()
    for heading in ("## flows", "## sites", "## lines", "## line failures (N-1)"):
        assert heading in text
    assert "<h2>flows</h2>" in page.read_text()
    with pytest.raises(PddplanError, match="rate_rps applies to a two-site scenario"):
        api.plan_report(small_file, rate_rps=1.0)


@pytest.mark.parametrize("call", ["solve", "breakeven", "robust", "bathtub"])
def test_two_site_commands_refuse_a_topology(call: str, small_file: Path) -> None:
    with pytest.raises(UsageError, match="is a topology file"):
        getattr(api, call)(small_file)
