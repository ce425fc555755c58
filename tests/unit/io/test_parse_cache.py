"""The parsed-YAML cache (pddplan.io.parse_cache): keyed by content, never changes an answer, a
damaged entry is parsed afresh with a note, and it can be turned off."""

from __future__ import annotations

import ast
import os
import pickle
import re
import subprocess
import sys
from pathlib import Path

import pytest

from pddplan.io import loader, parse_cache, yamldoc

CHIP = Path(loader.bundled_profiles_dir()) / "chips" / "gpu-a.yaml"


def test_a_kept_document_is_the_parse_itself(cache: Path) -> None:
    fresh = loader.parse_yaml(CHIP.read_text(encoding="utf-8"), str(CHIP))
    first = loader.read_yaml(CHIP)
    assert len(list(cache.glob("*.pickle"))) == 1
    yamldoc._read_yaml_cached.cache_clear()
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
    yamldoc._read_yaml_cached.cache_clear()
    assert loader.read_yaml(f).data == {"a": 2}


def test_a_damaged_entry_is_parsed_afresh_with_a_note(
    cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = loader.read_yaml(CHIP)
    (entry,) = cache.glob("*.pickle")
    entry.write_bytes(b"not a pickle")
    yamldoc._read_yaml_cached.cache_clear()
    assert loader.read_yaml(CHIP) == first
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("pddplan: note: unreadable parse cache entry")
    yamldoc._read_yaml_cached.cache_clear()
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


def test_a_validated_profile_is_kept_and_read_back_as_validated(cache: Path) -> None:
    fresh = loader.validate(loader.KINDS["chip"], loader.read_yaml(CHIP))
    first = loader.load_file(CHIP, "chip")
    assert len(list(cache.glob("*.pickle"))) == 2  # the parse and the validated object
    yamldoc._read_yaml_cached.cache_clear()
    again = loader.load_file(CHIP, "chip")  # from the disk
    assert again == first == fresh and again is not first
    assert type(again) is type(fresh)


def test_the_validated_key_follows_the_kind_and_the_document() -> None:
    assert parse_cache.validated_key("a", "chip") == parse_cache.validated_key("a", "chip")
    assert parse_cache.validated_key("a", "chip") != parse_cache.validated_key("a", None)
    assert parse_cache.validated_key("a", "chip") != parse_cache.validated_key("b", "chip")
    assert parse_cache.validated_key("a", "chip") != parse_cache.key("", b"a")


def test_a_validated_entry_of_another_kind_is_validated_afresh_with_a_note(
    cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = loader.load_file(CHIP, "chip")
    doc = loader.read_yaml(CHIP)
    name = parse_cache.validated_key(doc.key, "chip")
    link = Path(loader.bundled_profiles_dir()) / "links" / "rdma-400g.yaml"
    parse_cache.put(name, loader.load_file(link, "link"))  # a damaged entry: a link
    capsys.readouterr()
    assert loader.load_file(CHIP, "chip") == first
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("pddplan: note: unreadable parse cache entry")
    assert "validated afresh" in err[0]
    assert loader.load_file(CHIP, "chip") == first  # rewritten: no note the second time
    assert capsys.readouterr().err == ""


def test_a_damaged_validated_entry_is_validated_afresh_with_a_note(
    cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = loader.load_file(CHIP, "chip")
    name = parse_cache.validated_key(loader.read_yaml(CHIP).key, "chip")
    (cache / f"{name}.pickle").write_bytes(b"not a pickle")
    assert loader.load_file(CHIP, "chip") == first
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "validated afresh" in err[0]


def test_an_edited_profile_is_validated_again(cache: Path, tmp_path: Path) -> None:
    f = tmp_path / "chips" / "gpu-a.yaml"
    f.parent.mkdir()
    f.write_text(CHIP.read_text(encoding="utf-8"), encoding="utf-8")
    before = loader.load_file(f, "chip")
    text = CHIP.read_text(encoding="utf-8").replace("name: gpu-a", "name: gpu-x")
    f.write_text(text, encoding="utf-8")
    yamldoc._read_yaml_cached.cache_clear()
    with pytest.raises(loader.ProfileError, match="must match the file name"):
        loader.load_file(f, "chip")
    assert before.name == "gpu-a"


def test_a_user_profile_that_shadows_a_bundled_one_still_wins(cache: Path, tmp_path: Path) -> None:
    bundled = loader.Registry.default().load("chip", "gpu-a")  # kept validated
    user = tmp_path / "mine"
    (user / "chips").mkdir(parents=True)
    text = CHIP.read_text(encoding="utf-8")
    price = bundled.price.rental_usd_per_hour
    changed = re.sub(r"(rental_usd_per_hour: )\S+", rf"\g<1>{price + 1}", text)
    assert changed != text
    (user / "chips" / "gpu-a.yaml").write_text(changed, encoding="utf-8")
    mine = loader.Registry.default([user]).load("chip", "gpu-a")
    assert mine.price.rental_usd_per_hour != price


def test_the_validated_key_covers_every_module_a_validation_runs() -> None:
    """Every spec module and every pddplan module the specs import is in the schemas' salt
    (parse_cache.SCHEMA_FILES): a change to any of them is a new key, never a stale object."""
    package = Path(parse_cache.__file__).resolve().parents[1]
    salted = {f for pattern in parse_cache.SCHEMA_FILES for f in package.glob(pattern)}
    needed = set(package.glob("spec/*.py"))
    for f in package.glob("spec/*.py"):
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            for name in names:
                if name.startswith("pddplan."):
                    rel = Path(*name.split(".")[1:])
                    needed |= {p for p in (package / f"{rel}.py",) if p.is_file()}
    assert needed and needed <= salted, sorted(str(p) for p in needed - salted)


def test_a_profile_edited_between_two_loads_of_one_process_is_read_again(
    cache: Path, tmp_path: Path
) -> None:
    """A long-lived process (a notebook) that edits a profile between two solves sees the edit:
    the registry's in-process memo is keyed on the file's size and modification time too."""
    user = tmp_path / "mine"
    (user / "chips").mkdir(parents=True)
    f = user / "chips" / "gpu-a.yaml"
    text = CHIP.read_text(encoding="utf-8")
    reg = loader.Registry.default([user])
    prices = []
    for price in (11.5, 12.25):
        f.write_text(
            re.sub(r"(rental_usd_per_hour: )\S+", rf"\g<1>{price}", text), encoding="utf-8"
        )
        os.utime(f, ns=(int(price * 1e9), int(price * 1e9)))  # a later edit, a later time
        prices.append(reg.load("chip", "gpu-a").price.rental_usd_per_hour)
    assert prices == [11.5, 12.25]


def test_a_whole_damaged_cache_gives_one_note_and_the_same_answer(tmp_path: Path) -> None:
    """Every entry damaged at once (a solve reads some fifty): the solve's answer is the one
    a sound cache gives, and stderr says so in one line, naming the first entry met."""
    d = tmp_path / "c"
    env = {**os.environ, parse_cache.ENV_DIR: str(d)}
    argv = [sys.executable, "-m", "pddplan", "solve", "-f", "json"]
    sound = subprocess.run(argv, capture_output=True, text=True, env=env, check=True)
    entries = list(d.glob("*.pickle"))
    assert len(entries) > 10
    for f in entries:
        f.write_bytes(b"not a pickle")
    run = subprocess.run(argv, capture_output=True, text=True, env=env, check=True)
    assert run.stdout == sound.stdout
    notes = [ln for ln in run.stderr.splitlines() if "unreadable parse cache entry" in ln]
    assert len(notes) == 1 and "any other damaged entry is rebuilt without a note" in notes[0]
    again = subprocess.run(argv, capture_output=True, text=True, env=env, check=True)
    assert "unreadable" not in again.stderr  # every entry rewritten


SCENARIO = Path(loader.bundled_profiles_dir()) / "scenarios" / "default.yaml"


def test_a_scenario_file_is_kept_validated_and_read_back_without_a_validation(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A scenario file validated once (the base of every command's scenario) is read back from
    the cache as the object a validation gives: the next start validates nothing."""
    fresh = loader.validate(loader.Scenario, loader.read_yaml(SCENARIO))
    first = loader.validated_scenario(loader.read_yaml(SCENARIO))
    yamldoc._read_yaml_cached.cache_clear()

    def no_validation(*_: object) -> None:
        raise AssertionError("validated again")

    monkeypatch.setattr(loader, "validate", no_validation)
    again = loader.validated_scenario(loader.read_yaml(SCENARIO))  # from the disk
    assert again == first == fresh and again is not first
    assert type(again) is loader.Scenario


def test_a_patched_scenario_is_validated_afresh(cache: Path) -> None:
    """A document that is not a file's content as read (an override's merge) has no key: it
    is validated, its errors are the validation's, and nothing is kept for it."""
    doc = loader.read_yaml(SCENARIO)
    loader.validated_scenario(doc)
    kept = set(cache.glob("*.pickle"))
    data = {**doc.data, "rate_rps": -1}
    patched = yamldoc.YamlDoc(data=data, lines=doc.lines, file=doc.file)
    with pytest.raises(loader.ProfileError, match="rate_rps"):
        loader.validated_scenario(patched)
    assert set(cache.glob("*.pickle")) == kept


def test_a_scenario_entry_of_another_kind_is_validated_afresh_with_a_note(
    cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = loader.read_yaml(SCENARIO)
    first = loader.validated_scenario(doc)
    name = parse_cache.validated_key(doc.key, "scenario")
    parse_cache.put(name, loader.load_file(CHIP, "chip"))  # a damaged entry: a chip
    capsys.readouterr()
    assert loader.validated_scenario(doc) == first
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "validated afresh" in err[0]


def test_the_package_sources_are_rglobs_files_in_its_order() -> None:
    """The package's salt reads pddplan's ``.py`` files in ``sorted(rglob("*.py"))``'s order."""
    package = Path(parse_cache.__file__).resolve().parent.parent
    found = ["/".join(parts) for parts in parse_cache._sources(str(package))]
    assert found == [str(f.relative_to(package)) for f in sorted(package.rglob("*.py"))]
    assert len(found) > 100


def test_a_writing_process_removes_its_kinds_oldest_entries_past_the_cap(tmp_path: Path) -> None:
    """The parse cache's own entries (64 hexadecimal digits) beyond ``MAX_KEPT`` go, those
    written longest ago first, when a process that wrote one ends; entries of other kinds (the
    physics tables, anything else named with a prefix) are not counted or removed."""
    d = tmp_path / "c"
    d.mkdir(mode=0o700)
    own = [f"{i:064x}" for i in range(5)]
    for i, name in enumerate([*own, "physics-" + own[0], "unrelated"]):
        f = d / f"{name}.pickle"
        f.write_bytes(pickle.dumps(i))
        os.utime(f, ns=(10**9 * (i + 1), 10**9 * (i + 1)))  # written in this order, long ago
    new = "f" * 64
    code = (
        "from pddplan.io import parse_cache as p\n"
        f"p.MAX_KEPT = 3\np.put({new!r}, 'x')\np.put({'e' * 64!r}, 'y')\n"
    )
    env = {**os.environ, parse_cache.ENV_DIR: str(d)}
    subprocess.run([sys.executable, "-c", code], env=env, check=True)
    left = {f.name.removesuffix(".pickle") for f in d.glob("*.pickle")}
    # five old and two new own entries: the four written first go
    assert left == {own[4], new, "e" * 64, "physics-" + own[0], "unrelated"}
    assert parse_cache.own_entry(new) and not parse_cache.own_entry("physics-" + own[0])


def _hashed_now() -> bytes:
    """The package's salt hashed from its files now (what a kept salt must equal)."""
    package = str(Path(parse_cache.__file__).resolve().parent.parent)
    return parse_cache._hashed_package_salt(
        package, parse_cache._sources(package), parse_cache._pydantic_version_file()
    )


def test_the_package_salt_is_kept_by_the_files_stat_and_read_back(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The package's salt is the sources' hash, kept under their stat: a second start reads it
    back without hashing the sources; one entry, named with its prefix, not the parse
    cache's own kind."""
    parse_cache._package_salt.cache_clear()
    try:
        first = parse_cache._package_salt()
        assert first == _hashed_now()
        (entry,) = cache.glob(f"{parse_cache.SALT_PREFIX}*.pickle")
        assert not parse_cache.own_entry(entry.name.removesuffix(".pickle"))
        parse_cache._package_salt.cache_clear()

        def no_hashing(*args: object) -> bytes:
            raise AssertionError("hashed the sources again")

        monkeypatch.setattr(parse_cache, "_hashed_package_salt", no_hashing)
        assert parse_cache._package_salt() == first
    finally:
        parse_cache._package_salt.cache_clear()


def test_a_damaged_kept_salt_is_hashed_afresh_with_a_note(
    cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    parse_cache._package_salt.cache_clear()
    try:
        parse_cache._package_salt()
        (entry,) = cache.glob(f"{parse_cache.SALT_PREFIX}*.pickle")
        for bad in (pickle.dumps(b"short"), pickle.dumps("x" * 32), b"not a pickle"):
            entry.write_bytes(bad)
            parse_cache._NOTED.clear()
            parse_cache._package_salt.cache_clear()
            capsys.readouterr()
            assert parse_cache._package_salt() == _hashed_now()
            err = capsys.readouterr().err.strip().splitlines()
            assert len(err) == 1 and "unreadable parse cache entry" in err[0], err
            assert pickle.loads(entry.read_bytes()) == _hashed_now()  # rewritten
    finally:
        parse_cache._package_salt.cache_clear()


def test_the_salt_signature_follows_each_file_s_stat(tmp_path: Path) -> None:
    """A file's new modification time, size or inode (a file replaced) is a new signature, as
    Python's own bytecode check would see the file changed; the same stat is the same one."""
    root = tmp_path / "pkg"
    (root / "sub").mkdir(parents=True)
    (root / "a.py").write_text("x = 1\n")
    (root / "sub" / "b.py").write_text("y = 2\n")
    (root / "sub" / "notes.txt").write_text("not a source\n")

    def signature() -> str:
        return parse_cache._stat_signature(parse_cache._source_stats(str(root)), None)

    first = signature()
    assert signature() == first
    assert [p for p, _ in parse_cache._source_stats(str(root))] == [("a.py",), ("sub", "b.py")]
    (root / "sub" / "notes.txt").write_text("still not a source\n")
    assert signature() == first
    st = (root / "a.py").stat()
    os.utime(root / "a.py", ns=(st.st_atime_ns, st.st_mtime_ns + 1))
    touched = signature()
    assert touched != first
    (root / "a.py").write_text("x = 10\n")
    os.utime(root / "a.py", ns=(st.st_atime_ns, st.st_mtime_ns + 1))
    resized = signature()
    assert resized not in (first, touched)
    (root / "a.py").rename(root / "old.txt")
    (root / "a.py").write_text("x = 11\n")  # the same size, a new inode
    os.utime(root / "a.py", ns=(st.st_atime_ns, st.st_mtime_ns + 1))
    assert signature() not in (first, touched, resized)


def test_the_kept_salts_are_pruned_past_their_cap(cache: Path) -> None:
    """At most ``SALTS_KEPT`` salts are kept, those written longest ago removed; the parse
    cache's own entries are not counted or removed."""
    cache.mkdir(mode=0o700)
    for i in range(parse_cache.SALTS_KEPT + 3):
        f = cache / f"{parse_cache.SALT_PREFIX}{i:064x}.pickle"
        f.write_bytes(pickle.dumps(b"\0" * 32))
        os.utime(f, ns=(10**9 * (i + 1), 10**9 * (i + 1)))
    own = cache / f"{'a' * 64}.pickle"
    own.write_bytes(pickle.dumps("x"))
    parse_cache._package_salt.cache_clear()
    try:
        parse_cache._package_salt()
    finally:
        parse_cache._package_salt.cache_clear()
    salts = sorted(f.name for f in cache.glob(f"{parse_cache.SALT_PREFIX}*.pickle"))
    assert len(salts) == parse_cache.SALTS_KEPT
    assert f"{parse_cache.SALT_PREFIX}{0:064x}.pickle" not in salts  # the oldest went
    assert own.exists()
