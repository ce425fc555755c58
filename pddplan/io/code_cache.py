"""The methods that ``@dataclass`` generates and typing's forward references, compiled once and
kept on disk from one start to the next.

A command's start defines some 120 dataclasses (pddplan's and its libraries'); ``@dataclass``
writes each one's ``__init__``, ``__repr__``, ``__eq__``, ``__hash__`` and (frozen)
``__setattr__`` and ``__delattr__`` as source text and compiles it with ``exec``: some 600
compilations, about 35 ms of CPU of a ``pddplan solve`` on a 2-core machine, the same text
compiled the same way at every start. Likewise ``typing.ForwardRef`` compiles each annotation
written as a string (pydantic-core's schema types: some 800, about 7 ms). :func:`install` has
the ``dataclasses`` module's ``exec`` and the ``typing`` module's ``compile`` look each text up
first among the code objects compiled from it before (:func:`_exec`, :func:`_compile`): the
functions and references made are those the text gives (one text, one code object:
:func:`compile` with the flags the module's own call would use), only made sooner. Reading the
kept code objects back costs about 2 ms.

Where: one file in the caches' directory (:func:`pddplan.io.user_cache.cache_dir`: its owner
checks, ``PDDPLAN_CACHE_DIR=off`` turns it off), named by the interpreter's bytecode tag and
magic number and its optimization level (a code object is read back only by the interpreter
that made it), holding the code objects by the mode and the very text they were compiled from:
an entry cannot be stale, and an answer never depends on the file. A file that cannot be read,
or holds anything else, is ignored and rewritten, with a one-line note on stderr
(:func:`~pddplan.io.parse_cache.damaged`). The texts compiled in a process that the file lacked
are added when it ends; past :data:`MAX_ENTRIES` the file keeps only the process's own.

Installed by the command line only (:mod:`pddplan.cli`, before it imports its libraries): a
program that imports the API compiles as Python does.

This module has no ``from __future__ import annotations``: :func:`_compile` passes the calls it
does not keep to :func:`compile`, which takes the future flags of its caller's module, as the
``typing`` module's own call does (it has none either).
"""

import builtins
import dataclasses
import importlib.util
import marshal
import os
import sys
import typing
from types import CodeType
from typing import Any

from pddplan.io.user_cache import cache_dir

#: Code objects the file holds at most: a command's start compiles some 950 (solve: 560
#: methods, 380 forward references), the commands together some 1,400, and classes whose fields
#: change over versions add theirs; reading 1,400 back costs about 3 ms, so the file is kept
#: small rather than complete.
MAX_ENTRIES = 2048

#: The code objects by the mode (``exec``, ``eval``) and the text they were compiled from.
_codes: dict[tuple[str, str], CodeType] = {}
#: The keys looked up or compiled in this process.
_used: set[tuple[str, str]] = set()
_loaded = 0
_installed = False
#: The file's name ends with it.
SUFFIX = ".marshal"


def file_stem() -> str:
    """The file's name without :data:`SUFFIX`: the interpreter's bytecode tag, magic number and
    optimization level."""
    magic = importlib.util.MAGIC_NUMBER.hex()
    return f"code-{sys.implementation.cache_tag}-{magic}-O{sys.flags.optimize}"


def _exec(
    source: Any,
    globals: Any = None,  # noqa: A002 - exec's own names
    locals: Any = None,  # noqa: A002
    /,
    **kwargs: Any,
) -> None:
    """``exec`` of ``source`` in ``globals`` and ``locals``, a text compiled at most once (a
    code object, or a further argument such as ``closure``, passes through)."""
    if kwargs or not isinstance(source, str):
        return builtins.exec(source, globals, locals, **kwargs)
    return builtins.exec(_compile(source, "<string>", "exec"), globals, locals)


def _compile(source: Any, filename: Any, mode: Any, *args: Any, **kwargs: Any) -> Any:
    """:func:`compile` of ``source``; a text compiled in ``exec`` or ``eval`` mode as
    ``<string>``, with no further argument, compiled at most once (others pass through)."""
    plain = not args and not kwargs and filename == "<string>" and mode in ("exec", "eval")
    if not plain or not isinstance(source, str):
        return builtins.compile(source, filename, mode, *args, **kwargs)
    key = (mode, source)
    code = _codes.get(key)
    if code is None:
        # a text that does not compile raises here, as it would have, and is not kept;
        # dont_inherit: no future flag (none in ``dataclasses`` and ``typing`` either)
        code = builtins.compile(source, filename, mode, dont_inherit=True)
        _codes[key] = code
    _used.add(key)
    return code


def _read() -> dict[tuple[str, str], CodeType]:
    d = cache_dir()
    if d is None:
        return {}
    stem = file_stem()
    try:
        with open(os.path.join(d, stem + SUFFIX), "rb") as fh:
            data = fh.read()
    except OSError:
        return {}
    try:
        kept = marshal.loads(data)
    except (ValueError, EOFError, TypeError):
        kept = None
    if isinstance(kept, dict) and all(
        isinstance(k, tuple)
        and len(k) == 2
        and k[0] in ("exec", "eval")
        and isinstance(k[1], str)
        and isinstance(v, CodeType)
        for k, v in kept.items()
    ):
        return kept
    from pddplan.io import parse_cache

    parse_cache.damaged(stem, "dataclass methods and forward references compiled", SUFFIX)
    return {}


def install() -> None:
    """Have ``dataclasses`` and ``typing`` compile each text at most once, reading the code kept
    from earlier starts (see the module notes); once a process. Off with the parse cache."""
    global _installed, _loaded
    if _installed:
        return
    _installed = True
    if cache_dir() is None:
        return
    _codes.update(_read())
    _loaded = len(_codes)
    dataclasses.exec = _exec  # type: ignore[attr-defined]
    typing.compile = _compile  # type: ignore[attr-defined]
    import atexit

    atexit.register(save)


def save() -> bool:
    """Write the kept code objects with those compiled in this process (atomically; a failure to
    write is ignored). Returns whether the file was written."""
    d = cache_dir()
    if d is None or len(_codes) == _loaded:
        return False
    keep = _codes
    if len(keep) > MAX_ENTRIES:
        keep = {k: v for k, v in _codes.items() if k in _used}
    import tempfile

    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(dir=d, suffix=".tmp")
        with os.fdopen(fd, "wb") as fh:
            marshal.dump(keep, fh)
        os.replace(tmp, os.path.join(d, file_stem() + SUFFIX))
        tmp = None
    except OSError:
        return False
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
    return True
