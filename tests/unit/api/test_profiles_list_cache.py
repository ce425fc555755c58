"""``profiles list`` from the parse cache: the rows kept are the rows computed, keyed by every
listed file's content and pddplan's source, so a warm listing validates nothing (imports
neither pydantic nor numpy) and never shows a stale figure; a damaged entry is listed afresh
with a note; a user profile that shadows a bundled one is listed with its own figures."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from pddplan.api import profiles as profiles_api
from pddplan.errors import ProfileError
from pddplan.io import loader, parse_cache, yamldoc
from pddplan.io.search_path import SearchPath

CHIP = Path(loader.bundled_profiles_dir()) / "chips" / "gpu-a.yaml"


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    d = tmp_path / "cache"
    monkeypatch.setenv(parse_cache.ENV_DIR, str(d))

    def clear() -> None:
        parse_cache.cache_dir.cache_clear()
        yamldoc._read_yaml_cached.cache_clear()
        loader._load_at.cache_clear()

    clear()
    yield d
    clear()


def _listing_entry(cache: Path, extra: list[Path] | None = None) -> Path:
    sp = SearchPath.default(extra or [])
    files = [(k, n, p) for k in profiles_api.KINDS.values() for n, p in sp.index(k).items()]
    key = profiles_api._listing_key(files, [p.read_bytes() for _k, _n, p in files])
    return cache / f"{key}.pickle"


def _gpu_a(listing: dict) -> dict:
    (row,) = [r for r in listing["chips"] if r["name"] == "gpu-a"]
    return row


def test_a_kept_listing_is_the_computed_one(cache: Path) -> None:
    cold = profiles_api.list_profiles().to_json()
    entry = _listing_entry(cache)
    assert entry.is_file()
    loader._load_at.cache_clear()
    warm = profiles_api.list_profiles().to_json()
    assert warm == cold
    assert sum(len(v) for v in cold["profiles"].values()) >= 40


def test_a_warm_listing_validates_nothing_and_answers_as_a_cold_one(tmp_path: Path) -> None:
    code = (
        "import json, sys; from pddplan.api import list_profiles; "
        "r = list_profiles().to_json(); "
        "print(json.dumps({'r': r, 'mods': ['pydantic' in sys.modules, 'numpy' in sys.modules]}))"
    )
    outs = []
    for env_dir in ("off", str(tmp_path / "c"), str(tmp_path / "c")):  # off, cold, warm
        env = {**os.environ, parse_cache.ENV_DIR: env_dir}
        run = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
        )
        outs.append(json.loads(run.stdout))
    assert outs[0]["r"] == outs[1]["r"] == outs[2]["r"]
    assert outs[0]["mods"] == [True, True]  # computed: the profiles validated
    assert outs[2]["mods"] == [False, False]  # kept: nothing validated, no physics


def test_a_damaged_listing_is_listed_afresh_with_a_note(
    cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cold = profiles_api.list_profiles().to_json()
    entry = _listing_entry(cache)
    for damage in (b"not a pickle", None):
        if damage is None:  # a readable entry that is not a listing
            parse_cache.put(entry.stem, [{"no": "figures"}])
        else:
            entry.write_bytes(damage)
        parse_cache._NOTED.clear()  # each damage a run of its own: one note a run
        capsys.readouterr()
        assert profiles_api.list_profiles().to_json() == cold
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("pddplan: note: unreadable parse cache entry")
        assert "listed afresh" in err[0]
        assert profiles_api.list_profiles().to_json() == cold  # rewritten: no note again
        assert capsys.readouterr().err == ""


def test_a_user_profile_is_listed_with_its_own_figures_and_an_edit_shows(
    cache: Path, tmp_path: Path
) -> None:
    bundled = _gpu_a(profiles_api.list_profiles().to_json()["profiles"])
    assert bundled["origin"] == "bundled"
    user = tmp_path / "mine"
    (user / "chips").mkdir(parents=True)
    text = CHIP.read_text(encoding="utf-8")
    f = user / "chips" / "gpu-a.yaml"
    for price in (bundled["price_usd_per_hour"] + 1, bundled["price_usd_per_hour"] + 2):
        changed = re.sub(r"(rental_usd_per_hour: )\S+", rf"\g<1>{price}", text)
        assert changed != text
        f.write_text(changed, encoding="utf-8")
        os.utime(f, ns=(1, 1))  # an edit keeps neither size nor time apart: the content does
        # no in-process cache is cleared: a long-lived process lists the file as it now is,
        # and keeps those figures under its new content only
        mine = _gpu_a(profiles_api.list_profiles(profiles=[user]).to_json()["profiles"])
        assert mine["price_usd_per_hour"] == price
        assert mine["origin"] == str(user)
    # the bundled listing is still the bundled one
    assert _gpu_a(profiles_api.list_profiles().to_json()["profiles"]) == bundled
    # and a fresh process, from the kept entry, shows the file's last content
    code = (
        "import json, sys; from pddplan.api import list_profiles; "
        "r = list_profiles(profiles=[sys.argv[1]]).to_json()['profiles']['chips']; "
        "print(json.dumps([x['price_usd_per_hour'] for x in r if x['name'] == 'gpu-a']))"
    )
    env = {**os.environ, parse_cache.ENV_DIR: str(cache)}
    run = subprocess.run(
        [sys.executable, "-c", code, str(user)], capture_output=True, text=True, env=env, check=True
    )
    assert json.loads(run.stdout) == [price]


def test_a_file_too_large_for_a_profile_is_refused_unread(cache: Path, tmp_path: Path) -> None:
    """A listed file is read at most to the size limit of a profile (a link to an endless
    device is refused as too large, as before the listing was kept)."""
    user = tmp_path / "mine"
    (user / "chips").mkdir(parents=True)
    (user / "chips" / "zero.yaml").symlink_to("/dev/zero")
    with pytest.raises(ProfileError, match="larger than 4 MiB"):
        profiles_api.list_profiles("chips", profiles=[user])


def test_a_broken_user_profile_fails_as_without_the_cache(cache: Path, tmp_path: Path) -> None:
    profiles_api.list_profiles()  # the bundled listing, kept
    user = tmp_path / "mine"
    (user / "chips").mkdir(parents=True)
    bad = CHIP.read_text(encoding="utf-8").replace("name: gpu-a", "name: gpu-x")
    (user / "chips" / "gpu-a.yaml").write_text(bad, encoding="utf-8")
    with pytest.raises(ProfileError, match="must match the file name"):
        profiles_api.list_profiles(profiles=[user])
    with pytest.raises(ProfileError, match="must match the file name"):  # nothing was kept
        profiles_api.list_profiles(profiles=[user])


def test_the_derived_key_follows_every_part_and_what_is_derived() -> None:
    a = parse_cache.derived_key("profiles list", [b"chip", b"gpu-a", b"x: 1"])
    assert a == parse_cache.derived_key("profiles list", [b"chip", b"gpu-a", b"x: 1"])
    assert a != parse_cache.derived_key("profiles list", [b"chip", b"gpu-a", b"x: 2"])
    assert a != parse_cache.derived_key("profiles list", [b"chip", b"gpu-ax: 1"])  # framed
    assert a != parse_cache.derived_key("other", [b"chip", b"gpu-a", b"x: 1"])
