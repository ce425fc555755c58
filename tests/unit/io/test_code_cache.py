"""The dataclass methods and forward references compiled once and kept from one start to the
next (pddplan.io.code_cache): the same code as Python's own ``exec`` and ``compile`` make, read
back by a second start, a damaged file noted and rewritten, and nothing installed with the caches
off."""

from __future__ import annotations

import dataclasses
import marshal
import os
import subprocess
import typing
from pathlib import Path

import pytest

from pddplan.io import code_cache
from tests.fresh import fresh_runs

#: A class whose methods no other test compiles; its fields make the generated text unique.
CLASS_SOURCE = """
import dataclasses

@dataclasses.dataclass(frozen=True, order=True)
class Probe:
    kv_bytes_{tag}: float = -0.0
    name_{tag}: str = "p"
    tags_{tag}: tuple = ()
"""


def _make(tag: str) -> type:
    ns: dict[str, object] = {}
    exec(CLASS_SOURCE.format(tag=tag), ns)  # noqa: S102 - a class defined on purpose
    cls = ns["Probe"]
    assert isinstance(cls, type)
    return cls


CODE_ATTRS = (
    "co_code",
    "co_consts",
    "co_names",
    "co_varnames",
    "co_freevars",
    "co_cellvars",
    "co_flags",
    "co_argcount",
    "co_kwonlyargcount",
    "co_firstlineno",
    "co_filename",
    "co_name",
)
METHODS = ("__init__", "__repr__", "__eq__", "__lt__", "__hash__", "__setattr__", "__delattr__")


def _codes(cls: type) -> dict[str, tuple[object, ...]]:
    return {
        m: tuple(getattr(getattr(cls, m).__code__, a) for a in CODE_ATTRS)
        for m in METHODS
        if hasattr(getattr(cls, m), "__code__")
    }


def test_cached_methods_are_the_code_python_compiles(monkeypatch: pytest.MonkeyPatch) -> None:
    tag = f"t{os.getpid()}"
    monkeypatch.setattr(dataclasses, "exec", exec, raising=False)
    plain = _make(tag)
    monkeypatch.setattr(dataclasses, "exec", code_cache._exec, raising=False)
    first = _make(tag)  # compiled by _exec
    again = _make(tag)  # read back from _exec's table
    assert len(_codes(plain)) == len(METHODS)
    assert _codes(first) == _codes(plain)
    assert _codes(again) == _codes(plain)
    a, b = again(1.0, "x", (1,)), again(1.0, "x", (1,))
    assert a == b and hash(a) == hash(b) and not a < b
    assert repr(again()) == repr(plain()).replace(plain.__qualname__, again.__qualname__)
    with pytest.raises(dataclasses.FrozenInstanceError):
        again().name_x = "y"  # type: ignore[attr-defined]


def test_cached_forward_references_are_the_code_python_compiles(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    text = f"dict[str, list[Probe{os.getpid()}]] | None"
    plain = typing.ForwardRef(text).__forward_code__
    monkeypatch.setattr(typing, "compile", code_cache._compile, raising=False)
    first = typing.ForwardRef(text).__forward_code__
    again = typing.ForwardRef(text).__forward_code__
    assert again is first  # kept
    for attr in CODE_ATTRS:
        assert getattr(first, attr) == getattr(plain, attr), attr
    with pytest.raises(SyntaxError, match="Forward reference must be an expression"):
        typing.ForwardRef("not an expression (")  # raised as before, and nothing kept
    assert not any(src == "not an expression (" for _, src in code_cache._codes)
    # calls it does not keep pass through: another file name, another mode
    assert code_cache._compile("x = 1", "f.py", "exec").co_filename == "f.py"
    assert code_cache._compile("x = 1", "<string>", "single").co_filename == "<string>"
    assert ("single", "x = 1") not in code_cache._codes


def _start(cache: Path, snippet: str) -> subprocess.CompletedProcess[str]:
    """A fresh interpreter that imports the command line (which installs the code cache) with
    the caches in ``cache``, then runs ``snippet``."""
    code = "import pddplan.cli\nfrom pddplan.io import code_cache as cc\n" + snippet
    return fresh_runs(code, cache, check=False)[0]


def _kept(cache: Path) -> dict[str, object]:
    (f,) = cache.glob("code-*.marshal")
    with open(f, "rb") as fh:
        kept = marshal.load(fh)
    assert isinstance(kept, dict)
    return kept


def test_a_second_start_reads_the_code_the_first_compiled(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    show = "import dataclasses\nprint(cc._loaded, dataclasses.exec is cc._exec)\n"
    first = _start(cache, show)
    assert first.returncode == 0, first.stderr
    assert first.stdout.split() == ["0", "True"]  # nothing kept before: all compiled
    kept = _kept(cache)
    modes = {mode for mode, _ in kept}  # type: ignore[misc]
    assert modes == {"exec", "eval"}  # dataclasses' methods, typing's forward references
    second = _start(cache, show)
    assert second.returncode == 0, second.stderr
    assert second.stdout.split() == [str(len(kept)), "True"]
    assert second.stderr == ""


def test_a_damaged_file_is_noted_once_and_rewritten(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    assert _start(cache, "").returncode == 0
    (f,) = cache.glob("code-*.marshal")
    f.write_bytes(b"not marshal data")
    run = _start(cache, "print(cc._loaded)")
    assert run.returncode == 0
    assert run.stdout.split() == ["0"]
    lines = run.stderr.splitlines()
    assert len(lines) == 1 and str(f) in lines[0] and "afresh and rewritten" in lines[0]
    assert _kept(cache)  # rewritten at the end of the damaged run
    assert _start(cache, "").stderr == ""


def test_off_with_the_caches(tmp_path: Path) -> None:
    code = (
        "import dataclasses, typing, pddplan.cli\n"
        "print(getattr(dataclasses, 'exec', None), getattr(typing, 'compile', None))\n"
    )
    (run,) = fresh_runs(code, "off", check=False)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["None", "None"]  # the builtins serve them


def test_past_the_cap_the_file_keeps_the_process_own(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file over :data:`~pddplan.io.code_cache.MAX_ENTRIES` is written with only the code this
    process used: it stays small (reading it back is part of every start)."""
    used = {("eval", f"list[U{i}]"): compile(f"list[U{i}]", "<string>", "eval") for i in range(3)}
    other = {("eval", f"set[O{i}]"): compile(f"set[O{i}]", "<string>", "eval") for i in range(5)}
    monkeypatch.setattr(code_cache, "_codes", {**used, **other})
    monkeypatch.setattr(code_cache, "_used", set(used))
    monkeypatch.setattr(code_cache, "_loaded", 0)
    monkeypatch.setattr(code_cache, "MAX_ENTRIES", 4)
    assert code_cache.save()
    assert set(_kept(cache)) == set(used)
    monkeypatch.setattr(code_cache, "MAX_ENTRIES", 8)
    assert code_cache.save()
    assert set(_kept(cache)) == {*used, *other}  # under the cap: every one kept
