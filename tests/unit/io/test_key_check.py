"""The early key check (:mod:`pddplan.io.key_check`) names exactly the error that validating the
scenario would: the same message, file, key and line, for every document, with the schema's keys
kept in the parse cache, read afresh from the schemas, or kept damaged."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pddplan.cli import main
from pddplan.errors import ProfileError
from pddplan.io import key_check, parse_cache
from pddplan.io.key_check import scenario_keys
from pddplan.io.loader import validate
from pddplan.io.yamldoc import parse_yaml
from pddplan.spec import Scenario

GOOD = "kind: scenario\nname: x\nmodel: qwen3-235b-a22b\nworkload: agent-64k\n"

DOCS = {
    "unknown key last": GOOD + "bogus_key: 1\n",
    "unknown key first": "bogus: 1\n" + GOOD,
    "two unknown keys: the first in the file": GOOD + "zeta: 1\nalpha: 2\n",
    "a misspelt required key": "kind: scenario\nnam: x\nmodel: qwen3-235b-a22b\n",
    "unknown key beside deeper errors": GOOD + "sla: {ttft_p90_s: -1}\nzz: 1\nrate_rps: -3\n",
    "another kind's keys": "kind: chip\nname: foo\nvendor: x\n",
    "a number as a key": GOOD + "1: 2\n",
    "no unknown key, a bad value": GOOD + "rate_rps: -1\n",
    "no unknown key, a missing one": "kind: scenario\nname: x\n",
    "a bad nested key only": GOOD + "sla: {ttft_p99: 1}\n",
}
#: Documents the check leaves to the commands (a topology file: they reject it before any
#: validation, naming it as one).
LEFT = {"a topology file": "sites: {}\nbogus: 1\n"}


def _validation_error(doc: Any) -> ProfileError | None:
    try:
        validate(Scenario, doc)
    except ProfileError as exc:
        return exc
    return None


def _check_error(doc: Any) -> ProfileError | None:
    try:
        key_check.check(doc)
    except ProfileError as exc:
        return exc
    return None


def _same(a: ProfileError | None, b: ProfileError | None) -> bool:
    if a is None or b is None:
        return a is b
    return (str(a), a.file, a.key, a.line, a.exit_code) == (
        str(b),
        b.file,
        b.key,
        b.line,
        b.exit_code,
    )


def _is_top_unknown(exc: ProfileError | None, doc: Any) -> bool:
    return (
        exc is not None
        and "unknown key" in str(exc)
        and exc.key in doc.data
        and "." not in (exc.key or ".")
    )


@pytest.fixture(autouse=True)
def _fresh(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(key_check, "_kept_here", False)


@pytest.mark.parametrize("name", sorted(DOCS))
@pytest.mark.parametrize("kept", ["kept", "read from the schemas"])
def test_the_check_names_what_validation_names(name: str, kept: str, cache: Path) -> None:
    doc = parse_yaml(DOCS[name], "s.yaml")
    if kept == "kept":
        key_check.keep()
        key_check._kept_here = False
        assert any(cache.iterdir())
    found, expected = _check_error(doc), _validation_error(doc)
    if _is_top_unknown(expected, doc):
        assert _same(found, expected), (found, expected)
    else:
        assert found is None, found
    assert expected is not None or found is None


def test_every_case_names_a_key_or_says_nothing() -> None:
    """The cases cover both answers: the check raising, and it leaving the file to validation."""
    raised = [n for n, text in DOCS.items() if _check_error(parse_yaml(text, "s.yaml"))]
    assert 0 < len(raised) < len(DOCS)


KEYS = sorted(Scenario.model_fields)
VALUES = st.sampled_from(["1", "-1", "x", "[1, 2]", "{a: 1}", "qwen3-235b-a22b", "scenario"])


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.one_of(
                st.sampled_from(KEYS),
                # ``sites`` makes a topology file, which the commands reject before validation
                st.from_regex(r"[a-z][a-z_]{0,8}", fullmatch=True).filter(lambda k: k != "sites"),
            ),
            VALUES,
        ),
        min_size=1,
        max_size=8,
        unique_by=lambda kv: kv[0],
    )
)
def test_generated_documents_agree(pairs: list[tuple[str, str]]) -> None:
    """Any top-level mix of known and unknown keys with any values: where validation names a
    top-level unknown key, the check names the same one (message, line); elsewhere it says
    nothing."""
    text = "".join(f"{k}: {v}\n" for k, v in pairs)
    doc = parse_yaml(text, "gen.yaml")
    expected = _validation_error(doc)
    found = _check_error(doc)
    if _is_top_unknown(expected, doc):
        assert _same(found, expected), (text, found, expected)
    else:
        assert found is None, (text, found, expected)


def test_a_damaged_entry_is_noted_and_the_answer_kept(
    cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = parse_yaml(DOCS["unknown key last"], "s.yaml")
    parse_cache.put(key_check._name(), ["not", "sorted", "kind"])
    found = _check_error(doc)
    assert _same(found, _validation_error(doc))
    assert "unreadable parse cache entry" in capsys.readouterr().err
    assert parse_cache.get(key_check._name()) == scenario_keys()  # rewritten


def test_the_cache_turned_off_gives_the_same_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(parse_cache.ENV_DIR, "off")
    parse_cache.cache_dir.cache_clear()
    try:
        doc = parse_yaml(DOCS["two unknown keys: the first in the file"], "s.yaml")
        found = _check_error(doc)
        assert found is not None and found.key == "zeta"
        assert _same(found, _validation_error(doc))
    finally:
        parse_cache.cache_dir.cache_clear()


@pytest.mark.parametrize("kept", [False, True])
def test_a_file_key_is_reported_before_a_bad_option(
    kept: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The file's unknown key comes before a bad option's error whether or not the keys were
    kept: which error a command reports never depends on the cache."""
    f = tmp_path / "s.yaml"
    f.write_text(DOCS["unknown key last"])
    if kept:
        key_check.keep()
    with pytest.raises(SystemExit) as exc:
        main(["solve", str(f), "--rate", "-1"])
    assert exc.value.code == 1
    err = capsys.readouterr().err
    assert f"{f}:5: bogus_key: unknown key 'bogus_key'" in err, err
    assert "--rate" not in err


@pytest.mark.parametrize("name", sorted(LEFT))
def test_a_document_left_to_the_commands_gets_no_check(name: str) -> None:
    assert _check_error(parse_yaml(LEFT[name], "s.yaml")) is None
    assert _validation_error(parse_yaml(LEFT[name], "s.yaml")) is not None
