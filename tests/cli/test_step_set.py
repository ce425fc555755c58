"""``pddplan step --set``: keys of the model or chip profile, checked as the file is; the routing
skew's bad values (out of range, shares that do not sum to one) get one line and an exit code."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from pddplan.cli import app

runner = CliRunner()
BASE = [
    "step",
    "--model",
    "qwen3-235b-a22b",
    "--chip",
    "h100-sxm",
    "--tp",
    "8",
    "--batch",
    "1",
    "--input-tokens",
    "4096",
    "--context-tokens",
    "4096",
    "-f",
    "json",
]


def _run(*sets: str):
    return runner.invoke(app, BASE + [a for s in sets for a in ("--set", s)])


def test_set_weights_bf16_changes_the_step() -> None:
    fp8 = _run()
    bf16 = _run("model.dtypes.weights=bf16")
    assert fp8.exit_code == 0 and bf16.exit_code == 0, bf16.output
    # BF16 weights are read at twice the bytes: the batch-1 decode step is slower
    assert json.loads(bf16.stdout)["decode_step_s"] > json.loads(fp8.stdout)["decode_step_s"]


def test_set_chip_key() -> None:
    base = json.loads(_run().stdout)
    slow = _run("chip.derates.memory_bandwidth_efficiency=0.4")
    assert slow.exit_code == 0, slow.output
    assert json.loads(slow.stdout)["decode_step_s"] > base["decode_step_s"]


@pytest.mark.parametrize(
    ("sets", "needle"),
    [
        (["model.dtypes.weight=bf16"], "did you mean 'model.dtypes.weights'"),
        (["link.bandwidth_gbit_per_s=10"], "allowed: model.KEY, chip.KEY"),
        (["model.architecture.ffn.routing_skew.zipf_exponent=5"], "allowed range [0, 3]"),
        (["model.dtypes.weights=fp9"], "model.dtypes.weights"),
    ],
)
def test_bad_set_one_line_and_exit_code(sets: list[str], needle: str) -> None:
    from pddplan.errors import UsageError

    res = _run(*sets)
    assert isinstance(res.exception, UsageError)  # main() prints it as one line, exit 2
    assert res.exception.exit_code == 2
    assert needle in str(res.exception) and "\n" not in str(res.exception)


def test_routing_shares_must_sum_to_one(tmp_path) -> None:
    from pddplan.io.loader import bundled_profiles_dir

    src = (bundled_profiles_dir() / "models" / "deepseek-v3.yaml").read_text()
    assert "zipf_exponent: 0.409" in src
    (tmp_path / "models").mkdir()
    shares = "[" + ", ".join(["0.003"] * 256) + "]"  # sums to 0.768
    (tmp_path / "models" / "deepseek-v3.yaml").write_text(
        src.replace("zipf_exponent: 0.409", f"expert_shares: {shares}")
    )
    res = runner.invoke(app, ["--profiles", str(tmp_path), "profiles", "validate", "--wide"])
    assert res.exit_code != 0
    assert "expert_shares must sum to 1, not 0.768" in res.output + str(res.exception)
