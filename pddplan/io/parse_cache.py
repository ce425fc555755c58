"""Parsed YAML documents kept on disk, keyed by their content, so that a start does not parse
every profile again.

Parsing the bundled catalog (about 50 files) with the strict, line-tracking loader takes about
0.3 s of CPU; reading the parsed documents back takes about a millisecond. An entry's key is the
SHA-256 of the file's path, its bytes and the parser's own source (:data:`PARSER_FILES`), so an
edited file, a moved file or a changed parser never meets an old entry: entries cannot be stale,
and an answer never depends on the cache. Only documents that parsed cleanly are kept (an error
is raised afresh, with its file and line, each time).

Where: ``$PDDPLAN_CACHE_DIR``, else ``$XDG_CACHE_HOME/pddplan/yaml``, else
``~/.cache/pddplan/yaml``. ``PDDPLAN_CACHE_DIR=off`` (or empty) turns the cache off. Entries
are pickles, read only from a directory owned by the user and writable by no one else (a
pickle runs code when it is read); an entry that cannot be read is rebuilt, with a one-line
note on stderr (one a process: :func:`damaged`). At most :data:`MAX_KEPT` entries are kept
(a new version of pddplan keys its entries afresh): a process that writes one removes those
written longest ago past it when it ends (:func:`prune`).

A profile or a scenario file is kept a second time, validated (:func:`validated_key`): loading
the bundled catalog, or a scenario read before, then builds no validator and validates nothing.
That entry's key adds the profile kind asked for and the source of everything that decides a
validation (:data:`SCHEMA_FILES`: the specs and the modules below them) and the versions of
pydantic and Python, so a changed schema never meets an old object; only objects that validated
are kept, and one that is not of the kind asked for is treated as damaged.

Figures derived from profiles are kept too (:func:`derived_key`: ``profiles list``'s rows), keyed
by the profiles' content and the source of every pddplan module and pydantic's version, so that
a warm ``profiles list`` imports neither pydantic nor numpy and no change to a profile or to the
code that derives the figures meets an old entry.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import pickle
import sys
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

# the directory's one home; named here too, where the parse cache's readers look for it
from pddplan.io.user_cache import ENV_DIR as ENV_DIR
from pddplan.io.user_cache import cache_dir as cache_dir

#: The modules whose code decides what a parse gives: a change to any of them is a new key.
PARSER_FILES = ("yamldoc.py", "../errors.py")
#: The modules (relative to pddplan/) whose code decides what a validation gives: the specs, the
#: modules they import, and the loader's checks after validation.
SCHEMA_FILES = ("spec/*.py", "errors.py", "units.py", "labels.py", "limits.py", "defaults.py")


@cache
def _salt() -> bytes:
    here = Path(__file__).resolve().parent
    h = hashlib.sha256()
    for name in PARSER_FILES:
        h.update((here / name).read_bytes())
    return h.digest()


@cache
def _schema_salt() -> bytes:
    import pydantic
    import pydantic_core

    package = Path(__file__).resolve().parent.parent
    h = hashlib.sha256(_salt())
    h.update(f"{sys.version}|{pydantic.VERSION}|{pydantic_core.__version__}".encode())
    for pattern in SCHEMA_FILES:
        for f in sorted(package.glob(pattern)):
            h.update(f.name.encode())
            h.update(f.read_bytes())
    return h.digest()


@cache
def _package_salt() -> bytes:
    """The parser's salt, the source of every pddplan module, Python's version and pydantic's
    (its version file, which also names the pydantic-core it needs; read without importing
    pydantic).

    Reading and hashing every module's source is some 3 ms of CPU at every start that derives
    a key. The salt is therefore kept in the cache directory under the files' stat (path,
    modification time in ns, size and inode: :func:`_stat_signature`), which is what Python
    itself trusts to run a module's cached bytecode (a source's modification time and size): a
    file changed in any way Python would see is a new signature, and the salt is hashed from
    the sources again. An entry that is not a 32-byte digest is hashed afresh and rewritten."""
    package = str(Path(__file__).resolve().parent.parent)
    found = _source_stats(package)
    sources = [parts for parts, _ in found]
    version = _pydantic_version_file()
    if cache_dir() is None:
        return _hashed_package_salt(package, sources, version)
    name = SALT_PREFIX + _stat_signature(found, version)
    kept = get(name, "hashed")
    if isinstance(kept, bytes) and len(kept) == 32:
        return kept
    if kept is not None:
        damaged(name, "hashed")
    salt = _hashed_package_salt(package, sources, version)
    put(name, salt)
    prune(lambda n: n.startswith(SALT_PREFIX), SALTS_KEPT)
    return salt


#: The kept package salts' names start with it (:func:`_package_salt`).
SALT_PREFIX = "salt-"
#: Kept package salts at most (one for each state of the sources a process has met).
SALTS_KEPT = 16


def _pydantic_version_file() -> Path | None:
    """pydantic's ``version.py``, found without importing pydantic (None: not found)."""
    spec = importlib.util.find_spec("pydantic")
    for where in (spec.submodule_search_locations or []) if spec is not None else []:
        version = Path(where) / "version.py"
        if version.is_file():
            return version
    return None


def _stat_signature(
    found: list[tuple[tuple[str, ...], os.stat_result]], version: Path | None
) -> str:
    """A digest of what :func:`_hashed_package_salt` reads, by the files' stat
    (:func:`_source_stats`): Python's version, the parser's salt, and each file's path,
    modification time [ns], size and inode."""
    h = hashlib.sha256(_salt())
    h.update(sys.version.encode())
    stats = [("/".join(parts), st) for parts, st in found]
    if version is not None:
        stats.append((str(version), version.stat()))
    for f, st in stats:
        h.update(f"{f}\0{st.st_mtime_ns}\0{st.st_size}\0{st.st_ino}\n".encode())
    return h.hexdigest()


def _hashed_package_salt(
    package: str, sources: list[tuple[str, ...]], version: Path | None
) -> bytes:
    """:func:`_package_salt` from the files' bytes."""
    h = hashlib.sha256(_salt())
    h.update(sys.version.encode())
    if version is not None:
        h.update(version.read_bytes())
    for parts in sources:
        h.update("/".join(parts).encode())
        h.update(b"\0")
        with open(os.path.join(package, *parts), "rb", buffering=0) as fh:
            h.update(fh.read())
    return h.digest()


def _sources(root: str) -> list[tuple[str, ...]]:
    """The ``.py`` files under ``root``, each as the parts of its path relative to it, in the
    order of ``sorted(Path(root).rglob("*.py"))`` (part by part)."""
    return [parts for parts, _ in _source_stats(root)]


def _source_stats(root: str) -> list[tuple[tuple[str, ...], os.stat_result]]:
    """:func:`_sources` with each file's stat, found with :func:`os.scandir` (the directory
    entries' own stat calls: walking and stating the package's some 190 files takes 0.45 ms
    of CPU, where :func:`os.walk` and then :func:`os.stat` took 1 ms)."""
    found: list[tuple[tuple[str, ...], os.stat_result]] = []

    def scan(path: str, rel: tuple[str, ...]) -> None:
        with os.scandir(path) as it:
            for e in it:
                if e.is_dir():  # as os.walk: a link to a directory is one, not descended
                    if not e.is_symlink():
                        scan(e.path, (*rel, e.name))
                elif e.name.endswith(".py"):
                    found.append(((*rel, e.name), e.stat()))

    scan(root, ())
    found.sort(key=lambda item: item[0])
    return found


def derived_key(what: str, parts: list[bytes]) -> str:
    """The entry's name for figures ``what`` derived from ``parts`` (each profile's kind, name
    and bytes, say) by pddplan's code: any change to a part, to pddplan's source or to
    pydantic's version is a new key."""
    h = hashlib.sha256(_package_salt())
    h.update(what.encode())
    for part in parts:
        h.update(len(part).to_bytes(8, "little"))
        h.update(part)
    return h.hexdigest()


def validated_key(name: str, kind: str | None) -> str:
    """The entry's name for the object validated from the document kept under ``name``
    (:func:`key`) as a ``kind`` profile (None: the kind the document says)."""
    h = hashlib.sha256(_schema_salt())
    h.update(f"{name}|{kind}".encode())
    return h.hexdigest()


def key(path: str, raw: bytes) -> str:
    """The entry's name for the file ``path`` holding ``raw``."""
    h = hashlib.sha256(_salt())
    h.update(path.encode("utf-8", "surrogatepass"))
    h.update(b"\0")
    h.update(raw)
    return h.hexdigest()


def get(name: str, what: str = "parsed") -> Any | None:
    """The document kept under ``name``, or None (not kept, cache off, or unreadable).

    ``what`` says, in the note on an unreadable entry, what is done afresh instead."""
    d = cache_dir()
    if d is None:
        return None
    f = d / f"{name}.pickle"
    try:
        data = f.read_bytes()
    except OSError:
        return None
    try:
        return pickle.loads(data)
    except Exception:  # noqa: BLE001 - any damage to an entry only means a fresh parse
        damaged(name, what)
        return None


#: The cache directories whose first damaged entry this process has noted on stderr.
_NOTED: set[str] = set()


def damaged(name: str, what: str = "parsed", suffix: str = ".pickle") -> None:
    """Say on stderr, in one line, that the entry ``name`` could not be read or held something
    it should not, so that it is done afresh (``what``) and rewritten (``suffix``: the ending of
    the entry's file name).

    One line a directory and process: the first damaged entry is named, and the others met
    after it (a whole cache damaged at once: some fifty entries for one solve) are rebuilt
    without a further note, as the line says; a long-lived process (a notebook using the API)
    notes only the first damage it meets."""
    d = cache_dir()
    f = d / f"{name}{suffix}" if d is not None else name
    where = str(d)
    if where in _NOTED:
        return
    _NOTED.add(where)
    sys.stderr.write(
        f"pddplan: note: unreadable parse cache entry {f}: {what} afresh and rewritten "
        "(any other damaged entry is rebuilt without a note)\n"
    )


def put(name: str, doc: Any) -> None:
    """Keep ``doc`` under ``name`` (atomically; a failure to write is ignored). The first entry
    a process writes has it remove, when it ends, its own kind's entries written longest ago
    past :data:`MAX_KEPT` (:func:`prune`)."""
    global _pruning
    d = cache_dir()
    if d is None:
        return
    try:
        import tempfile

        fd, tmp = tempfile.mkstemp(dir=d, suffix=".tmp")
        with os.fdopen(fd, "wb") as fh:
            pickle.dump(doc, fh, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, d / f"{name}.pickle")
    except OSError:
        try:
            os.unlink(tmp)
        except (OSError, UnboundLocalError):
            pass
        return
    if not _pruning and own_entry(name):
        _pruning = True
        import atexit

        atexit.register(prune, own_entry, MAX_KEPT)


#: The parse cache's own entries (parsed and validated files, derived rows: see
#: :func:`own_entry`) kept at most: some 300 are written for each version of pddplan (its
#: source is in their keys), so this keeps about a dozen versions' worth; past it a process
#: that wrote one removes those written longest ago when it ends. The physics tables
#: (:mod:`pddplan.io.physics_disk`) keep their own count.
MAX_KEPT = 4096
_pruning = False


def own_entry(name: str) -> bool:
    """Whether an entry's name (without ``.pickle``) is one of the parse cache's own: a key of
    :func:`key`, :func:`validated_key` or :func:`derived_key` (64 hexadecimal digits; other
    kinds of entry name themselves with a prefix)."""
    return len(name) == 64 and all(c in "0123456789abcdef" for c in name)


def prune(select: Callable[[str], bool], max_kept: int) -> int:
    """Remove the entries whose names ``select`` picks (without ``.pickle``) that were written
    longest ago, beyond ``max_kept`` of them; returns how many were removed (a failure to list
    or remove one is ignored)."""
    d = cache_dir()
    if d is None:
        return 0
    aged = []
    try:
        with os.scandir(d) as it:
            for e in it:
                if e.name.endswith(".pickle") and select(e.name[: -len(".pickle")]):
                    try:
                        aged.append((e.stat().st_mtime_ns, e.name))
                    except OSError:
                        continue
    except OSError:
        return 0
    if len(aged) <= max_kept:
        return 0
    aged.sort()
    removed = 0
    for _, name in aged[: len(aged) - max_kept]:
        try:
            os.unlink(d / name)
            removed += 1
        except OSError:
            pass
    return removed
