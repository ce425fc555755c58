"""The parsed-YAML cache (pddplan.io.parse_cache): keyed by content, never changes an answer, a
damaged entry is parsed afresh with a note, and it can be turned off."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from pddplan.io import loader, parse_cache

CHIP = Path(loader.bundled_profiles_dir()) / "chips" / "gpu-a.yaml"


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    d = tmp_path / "cache"
    monkeypatch.setenv(parse_cache.ENV_DIR, str(d))
    parse_cache.cache_dir.cache_clear()
    loader._read_yaml_cached.cache_clear()
    yield d
    parse_cache.cache_dir.cache_clear()
    loader._read_yaml_cached.cache_clear()


def test_a_kept_document_is_the_parse_itself(cache: Path) -> None:
    fresh = loader.parse_yaml(CHIP.read_text(encoding="utf-8"), str(CHIP))
    first = loader.read_yaml(CHIP)
    assert len(list(cache.glob("*.pickle"))) == 1
    loader._read_yaml_cached.cache_clear()
    again = loader.read_yaml(CHIP)  # from the disk
    assert again == first == fresh and again is not first


def test_the_key_follows_the_content_and_the_path() -> None:
    raw = CHIP.read_bytes()
    assert parse_cache.key(str(CHIP), raw) == parse_cache.key(str(CHIP), raw)
    assert parse_cache.key(str(CHIP), raw) != parse_cache.key(str(CHIP), raw + b"\n")
    assert parse_cache.key(str(CHIP), raw) != parse_cache.key("elsewhere.yaml", raw)


def test_an_edited_file_is_parsed_again(cache: Path, tmp_path: Path) -> None:
    f = tmp_path / "w.yaml"
    f.write_text("a: 1\n", encoding="utf-8")
    assert loader.read_yaml(f).data == {"a": 1}
    f.write_text("a: 2\n", encoding="utf-8")
    os.utime(f, ns=(1, 1))  # even with the same size and an old modification time
    loader._read_yaml_cached.cache_clear()
    assert loader.read_yaml(f).data == {"a": 2}


def test_a_damaged_entry_is_parsed_afresh_with_a_note(
    cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = loader.read_yaml(CHIP)
    (entry,) = cache.glob("*.pickle")
    entry.write_bytes(b"not a pickle")
    loader._read_yaml_cached.cache_clear()
    assert loader.read_yaml(CHIP) == first
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("pddplan: note: unreadable parse cache entry")
    loader._read_yaml_cached.cache_clear()
    loader.read_yaml(CHIP)  # rewritten: no note the second time
    assert capsys.readouterr().err == ""


def test_off_keeps_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(parse_cache.ENV_DIR, "off")
    parse_cache.cache_dir.cache_clear()
    try:
        assert parse_cache.cache_dir() is None
        assert parse_cache.get("x") is None
        parse_cache.put("x", {"a": 1})  # a no-op
    finally:
        parse_cache.cache_dir.cache_clear()


def test_a_directory_others_can_write_is_not_trusted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    d = tmp_path / "open"
    d.mkdir()
    d.chmod(0o777)
    monkeypatch.setenv(parse_cache.ENV_DIR, str(d))
    parse_cache.cache_dir.cache_clear()
    try:
        assert parse_cache.cache_dir() is None
    finally:
        parse_cache.cache_dir.cache_clear()


def test_answers_are_the_same_with_and_without_the_cache(tmp_path: Path) -> None:
    code = "import json, pddplan; print(json.dumps(pddplan.solve('pdd-paper').to_json()))"
    outs = []
    for env_dir in ("off", str(tmp_path / "c"), str(tmp_path / "c")):  # off, cold, warm
        env = {**os.environ, parse_cache.ENV_DIR: env_dir}
        outs.append(
            subprocess.run(
                [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
            ).stdout
        )
    assert outs[0] == outs[1] == outs[2]
    assert list((tmp_path / "c").glob("*.pickle"))
