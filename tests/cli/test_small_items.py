"""Small user-facing rules of the command line, one test (or a few) each: the did-you-mean,
exit codes of missing input files, token counts with k/M suffixes, lists in messages, a closed
pipe, the break-even default, usage errors, per-command table names in --help, and shell
completion of profile names."""

from __future__ import annotations

from pathlib import Path

import pytest

from pddplan.cli import main
from pddplan.errors import did_you_mean, suggestions


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """Exit code, stdout and stderr of ``pddplan ARGS`` run in-process."""
    with pytest.raises(SystemExit) as exc:
        main(args)
    got = capsys.readouterr()
    code = exc.value.code
    return (code if isinstance(code, int) else 0), got.out, got.err


# ------------------------------------------------------------------ 1. did you mean

LINKS = ["rdma-400g", "wan-40g-cross-city", "wan-40g-same-city", "wan-100g-cross-city"]


def test_prefix_matches_rank_before_edit_distance() -> None:
    assert set(suggestions("wan-40g", LINKS)[:2]) == {"wan-40g-same-city", "wan-40g-cross-city"}
    assert suggestions("wan-40g", LINKS, n=1)[0].startswith("wan-40g-")
    assert set(suggestions("CROSS", LINKS)) == {"wan-40g-cross-city", "wan-100g-cross-city"}
    assert suggestions("rdma-40Og", LINKS) == ["rdma-400g"]  # edit distance, last
    assert suggestions("zzz", LINKS) == []


def test_did_you_mean_text() -> None:
    assert did_you_mean("h2O", ["h20", "h100-sxm"]) == "; did you mean 'h20'?"
    assert did_you_mean("wan-40g", LINKS) in (
        "; did you mean 'wan-40g-same-city' or 'wan-40g-cross-city'?",
        "; did you mean 'wan-40g-cross-city' or 'wan-40g-same-city'?",
    )
    assert did_you_mean("zzz", LINKS) == ""
    assert did_you_mean("dtype", ["dtypes"], within="model.") == "; did you mean 'model.dtypes'?"


def test_a_link_name_prefix_suggests_its_links(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(["transfer", "wan-40g"], capsys)
    assert code == 2 and out == ""
    assert "did you mean 'wan-40g-" in err
    assert "rdma" not in err


# ------------------------------------------------------------------ 2. missing input files


@pytest.mark.parametrize(
    "args",
    [
        ["simulate", "--plan", "{missing}.json"],
        ["simulate", "--trace", "{missing}.jsonl"],
        ["hitrate", "{missing}.jsonl"],
        ["calibrate", "{missing}.csv", "--link", "wan-100g-cross-city"],
        ["bathtub", "--capacity-curve", "{missing}.csv"],
        ["solve", "{missing}.yaml"],
    ],
)
def test_a_missing_input_file_exits_2(
    args: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = f"{tmp_path}/no-such-file"
    code, out, err = run([a.format(missing=missing) for a in args], capsys)
    assert code == 2, err
    assert out == "" and err.startswith("pddplan: error: ") and "no-such-file" in err
    assert len(err.strip().splitlines()) == 1


def test_a_directory_given_as_a_plan_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(["simulate", "--plan", str(tmp_path)], capsys)
    assert code == 2, err


def test_a_malformed_data_file_still_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plan = tmp_path / "plan.json"
    plan.write_text("{not json", encoding="utf-8")
    code, _, err = run(["simulate", "--plan", str(plan)], capsys)
    assert code == 1, err


# ------------------------------------------------------------------ 3. token counts

STEP = ["step", "--model", "llama-3.3-70b", "--chip", "h100-sxm", "--tp", "2", "--batch", "1"]


def test_step_takes_token_counts_with_suffixes(capsys: pytest.CaptureFixture[str]) -> None:
    def step_csv(tokens: str) -> str:
        args = [*STEP, "--input-tokens", tokens, "--context-tokens", "8", "-f", "csv"]
        code, out, err = run(args, capsys)
        assert code == 0, err
        return out.splitlines()[1]

    assert step_csv("64k") == step_csv("64000")
    assert step_csv("2Ki") == step_csv("2048") != step_csv("2000")


def test_a_bad_token_count_names_the_flag(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run([*STEP, "--input-tokens", "64q", "--context-tokens", "8"], capsys)
    assert code == 2
    assert "--input-tokens" in err and "'64q' is not a token count" in err


def test_one_token_count_parser() -> None:
    from pddplan.api.values import parse_token_count
    from pddplan.errors import OptionError
    from pddplan.trace.replay import parse_capacity

    assert parse_token_count("64k") == 64_000 == parse_capacity("64k")
    assert parse_token_count("1.5M") == 1_500_000
    assert parse_token_count("64Ki") == 65_536 == parse_capacity("64Ki")
    with pytest.raises(OptionError, match="input_tokens"):
        parse_token_count("1.5", "input_tokens")


# ------------------------------------------------------------------ 4. lists in messages


def test_plain_lists() -> None:
    from pddplan.labels import plain, plain_value

    assert plain(["h100-sxm", "h2O"]) == "h100-sxm, h2O"
    assert plain([["h100-sxm", "h20"], ["h20"]]) == "[h100-sxm, h20], [h20]"
    assert plain_value(["h100-sxm", "h2O"]) == "[h100-sxm, h2O]"
    assert plain_value("h2O") == "'h2O'"


def test_an_error_never_echoes_a_python_list(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(["solve", "--set", "roles.MD.chips=[h100-sxm,h2O]"], capsys)
    assert code == 2
    assert "roles.MD.chips=[h100-sxm, h2O]" in err and "did you mean 'h20'?" in err
    assert "['" not in err


def test_a_curve_without_its_columns_names_them_plainly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    curve = tmp_path / "curve.csv"
    curve.write_text("capacity,hit\n1,0.5\n", encoding="utf-8")
    code, _, err = run(["bathtub", "--capacity-curve", str(curve)], capsys)
    assert code == 1
    assert "(have: capacity, hit)" in err


# ------------------------------------------------------------------ 5. a closed pipe


@pytest.mark.parametrize(
    "args", [["solve", "pdd-paper"], ["profiles", "list", "--kind", "chips", "-f", "csv"]]
)
def test_a_closed_pipe_exits_0(args: list[str]) -> None:
    import subprocess
    import sys

    # the reader is gone before the first write (`| head -0`): every write fails
    proc = subprocess.Popen(
        [sys.executable, "-m", "pddplan", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    proc.stdout.close()
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err
    assert "Traceback" not in err and "BrokenPipeError" not in err


# ------------------------------------------------------------------ 6. breakeven's default


def test_breakeven_defaults_to_a_parameter_of_the_scenario(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # long-context names no gpu-b: the default is its MD chip's price
    code, out, err = run(["breakeven", "long-context", "-f", "csv"], capsys)
    assert code == 0, err
    assert out.splitlines()[1].startswith("chips.h200-sxm.price_usd_per_hour,")


def test_breakeven_help_names_the_default(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["breakeven", "--help"], capsys)
    assert code == 0
    assert "main-decode (MD) chip" in " ".join(out.split())


# ------------------------------------------------------------------ 7. usage errors


@pytest.mark.parametrize(
    "args", [["transfer"], ["solve", "--bogus"], ["solve", "--rate", "abc"], ["nosuch"]]
)
def test_a_usage_error_is_one_line(args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(args, capsys)
    assert code == 2 and out == ""
    assert err.startswith("pddplan: error: ") and len(err.strip().splitlines()) == 1
    assert "Usage:" not in err and "Try " not in err


# ------------------------------------------------------------------ 9. shell completion


def complete(
    words: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> list[str]:
    """What bash completion offers for the last of ``words`` (typer's protocol: the words and
    the index of the one being completed in the environment)."""
    parts = words.split(" ")
    monkeypatch.setenv("_PDDPLAN_COMPLETE", "complete_bash")
    monkeypatch.setenv("COMP_WORDS", words)
    monkeypatch.setenv("COMP_CWORD", str(len(parts) - 1))
    code, out, err = run([], capsys)
    assert code == 0, err
    return out.split()


@pytest.mark.parametrize(
    ("words", "expected"),
    [
        (
            "pddplan transfer wan-40g",
            ["wan-40g-cross-city", "wan-40g-cross-country", "wan-40g-same-city"],
        ),
        ("pddplan step --chip h10", ["h100-sxm"]),
        ("pddplan step --model llama-3.3", ["llama-3.3-70b"]),
        ("pddplan calibrate x.csv --link rdma", ["rdma-200g", "rdma-400g"]),
        ("pddplan chips rank --workload agent", ["agent-64k", "agent-64k-beta"]),
        ("pddplan solve pdd-paper", ["pdd-paper", "pdd-paper-b30"]),
        ("pddplan solve ./", []),  # a path: the shell completes files
    ],
)
def test_shell_completion_of_profile_names(
    words: str,
    expected: list[str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert complete(words, monkeypatch, capsys) == expected


def test_completion_reads_names_through_the_api(tmp_path: Path) -> None:
    from pddplan.api.profiles import profile_names
    from pddplan.cli.common import complete_names

    (tmp_path / "chips").mkdir()
    src = Path(__file__).resolve().parents[2] / "profiles" / "chips" / "h20.yaml"
    (tmp_path / "chips" / "my-chip.yaml").write_text(src.read_text(encoding="utf-8"))
    assert "my-chip" in profile_names("chip", profiles=[tmp_path])
    assert "pdd-paper" in profile_names("scenario")

    class Ctx:  # what completion reads of click's context: the root's --profiles
        params = {"profiles": [tmp_path]}

        def find_root(self) -> Ctx:
            return self

    assert complete_names("chip")(Ctx(), "my-") == ["my-chip"]  # type: ignore[arg-type]


def test_profiles_show_of_a_profile_refuses_set() -> None:
    # --set changes a scenario: on a chip profile it was ignored (exit 0, the price unchanged)
    import pytest

    import pddplan
    from pddplan.errors import OptionError

    with pytest.raises(OptionError, match="changes a scenario: gpu-b is a chip profile"):
        pddplan.show_profile("gpu-b", overrides={"chips.gpu-b.price_usd_per_hour": 1.0})
    assert pddplan.show_profile("gpu-b") is not None
