"""Instances' physics tables kept on disk from one run to the next.

An instance's memo tables (:func:`pddplan.deployment.chips._physics_cache`: the largest batch
that meets a TPOT at a context, the largest whose KV fits, MD's extend pass, the classes'
prefill times) depend only on its physics key (:attr:`pddplan.deployment.Instance.physics_key`:
the chip's datasheet and derates, the model, the layout) and on pddplan's code. Computing them
is most of a cold solve over a large catalog (the largest batch evaluates a decode step at every
batch up to it, for every RLD and MD option at every routing's context), and each run of the
same catalog, or of the same verdict check, computes the same ones again.

They are kept in the parse cache (:mod:`pddplan.io.parse_cache`: its directory, its owner
checks, ``PDDPLAN_CACHE_DIR=off`` to turn it off), one entry per physics key, named by
:func:`~pddplan.io.parse_cache.derived_key` of the key's ``repr`` (every number of the chip,
model and layout) and so also by the source of every pddplan module: a changed profile or a
changed model meets no old entry. An entry holds exactly the values the computation gave, so a
run that reads it gives the same answers as one that does not. The tables that grew in a
process are written when it ends (:mod:`pddplan.deployment.chips` registers :func:`save`; at
most :data:`MAX_WRITES` keys a run, :data:`MAX_KEPT` in all, the oldest removed first); a
process that evaluates sampled physics (``robust``'s samples, ``calibrate``'s fit: a new key at
every step) reads and writes none from then on (:func:`transient`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import is_dataclass
from functools import partial
from typing import Any

from pddplan.io.memo import IdentityMemo

#: Physics keys whose tables one run writes at most (a sweep over a chip's numbers makes a
#: new key per point).
MAX_WRITES = 256
#: Entries kept at most (about 5 KB each): past it, the ones written longest ago go first.
MAX_KEPT = 2048
#: The entries' names start with it (the parse cache's directory holds other entries too).
PREFIX = "physics-"

_transient = False
#: Each table's entries when its key's tables were read (or created), per physics key.
_SIZES: dict[Any, dict[str, int]] = {}
#: Keys whose sizes :data:`_SIZES` holds at most (as many as the in-process tables).
_SIZES_MAX = 4096


def transient() -> None:
    """This run evaluates physics that no other run will ask for again: write nothing."""
    global _transient
    _transient = True


def _name(key: Any) -> str:
    """The entry's name of a physics key (a ``HashedKey``: its value's ``repr``)."""
    from pddplan.io import parse_cache

    return PREFIX + parse_cache.derived_key("physics-tables", [_text(key.value).encode()])


def _text(value: Any) -> str:
    """``repr(value)``, with the ``repr`` of each dataclass in a tuple kept by identity: the
    physics keys of a verdict check's or a sweep's changed chips hold the same model and
    layout numbers, whose ``repr`` walks every field (some 2 ms of CPU in a solve's verdict
    check). The text is ``repr``'s own: ``(a, b)``, and ``(a,)`` for one part."""
    if not isinstance(value, tuple):
        return repr(value)
    parts = [_REPRS.get(v, (), partial(repr, v)) if is_dataclass(v) else repr(v) for v in value]
    return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"


#: The ``repr`` of the dataclasses of physics keys, by object (frozen: their text never changes).
_REPRS = IdentityMemo(size=64)


def load(key: Any) -> dict[str, dict[Any, Any]]:
    """The tables kept for the physics key ``key`` (a new dict each call; empty when none are
    kept, the cache is off or the process is :func:`transient`)."""
    from pddplan.io import parse_cache

    tables: dict[str, dict[Any, Any]] = {}
    if not _transient and parse_cache.cache_dir() is not None:
        name = _name(key)
        kept = parse_cache.get(name, "physics tables computed")
        if isinstance(kept, dict) and all(
            isinstance(k, str) and isinstance(v, dict) for k, v in kept.items()
        ):
            tables = kept
        elif kept is not None:
            parse_cache.damaged(name, "physics tables computed")
    if not _transient:  # a transient process writes nothing: nothing to compare with
        if len(_SIZES) >= _SIZES_MAX:  # a long session's: at worst, kept tables are rewritten
            _SIZES.clear()
        _SIZES[key] = {n: len(t) for n, t in tables.items()}
    return tables


def save(physics: Mapping[Any, dict[str, dict[Any, Any]]]) -> int:
    """Write the tables of ``physics`` (physics key -> tables) that grew since they were read;
    returns how many keys were written."""
    from pddplan.io import parse_cache

    if _transient or parse_cache.cache_dir() is None:
        return 0
    written = 0
    for key, tables in list(physics.items()):
        before = _SIZES.get(key, {})
        if not any(len(t) > before.get(n, 0) for n, t in tables.items()):
            continue
        if written >= MAX_WRITES:
            break
        try:
            parse_cache.put(_name(key), tables)
        except Exception:  # noqa: BLE001 - a table that cannot be kept is computed next time
            continue
        _SIZES[key] = {n: len(t) for n, t in tables.items()}
        written += 1
    if written:
        _prune()
    return written


def _prune() -> None:
    """Remove the entries written longest ago beyond :data:`MAX_KEPT`."""
    from pddplan.io import parse_cache

    parse_cache.prune(lambda name: name.startswith(PREFIX), MAX_KEPT)
