"""A scenario file's unknown top-level key, named before the schemas load.

Validating a scenario file (:func:`pddplan.io.loader.validate`) reports the first of its errors
with the shortest key path, an unknown key before any other at the same depth
(:func:`pddplan.spec.validation.validation_to_profile_error`), and pydantic lists unknown keys
in the file's order. A top-level key that :class:`~pddplan.spec.Scenario` does not know is
therefore the error a scenario file gets whenever it has one, whatever else is wrong deeper in
it. This module names that key from the file's parse alone, with the same message, file, key and
line, so that a command reports it at the cost of its start (the YAML parse it already does)
without importing pydantic or the schemas.

The allowed keys come from the schemas themselves: every validation of a scenario keeps them
(:func:`keep`) in the parse cache under a key derived from pddplan's whole source and pydantic's
version (:func:`~pddplan.io.parse_cache.derived_key`), so a changed schema never meets an old
list. Where none is kept (a first run, the cache turned off) or the entry is damaged (noted on
stderr, :func:`~pddplan.io.parse_cache.damaged`), :func:`check` reads the keys from the schemas,
importing them (which a command that goes on does anyway), and keeps them: whether the check names
a key, and so which of a file's errors and a command's options' or environment's (a ``--profiles``
or ``PDDPLAN_PROFILES`` directory that does not exist) is reported first, does not depend on the
cache, only its cost does: the file's own errors, its YAML and its unknown top-level key, come
first. An entry of the right shape (sorted names, ``kind`` among them) is trusted as the parse
cache trusts its other entries: its key holds pddplan's whole source, and the directory is written
only by its owner. A topology file (``sites:``) and a document that is not a mapping are left to
the commands' own checks, which come first for them.
"""

from __future__ import annotations

from typing import Any

from pddplan.errors import ProfileError, dotted, line_for, unknown_key
from pddplan.io import parse_cache

#: The parse cache's name for the list, without the package's salt.
WHAT = "scenario top-level keys"

_kept_here = False  # this process has kept the list (or found it kept) already


def _name() -> str:
    return parse_cache.derived_key(WHAT, [])


def _is_keys(kept: Any) -> bool:
    """Whether a kept entry has the list's shape: sorted names, ``kind`` among them."""
    return (
        isinstance(kept, list)
        and all(isinstance(k, str) for k in kept)
        and "kind" in kept
        and kept == sorted(kept)
    )


def scenario_keys() -> list[str] | None:
    """The keys a scenario file takes at its top level, sorted: its schema's fields (the
    schemas imported). None where a field takes another name in a file (an alias), which this
    check does not model."""
    from pddplan.spec import Scenario

    fields = Scenario.model_fields
    if any(f.alias is not None or f.validation_alias is not None for f in fields.values()):
        return None
    return sorted(fields)


def keep() -> None:
    """Keep the schema's keys (:func:`scenario_keys`) for :func:`check`: once a process, and
    written only where the cache does not already hold the same list."""
    global _kept_here
    if _kept_here:
        return
    _kept_here = True
    keys = scenario_keys()
    if keys is not None and parse_cache.get(_name(), "the scenario keys kept") != keys:
        _store(keys)


def _store(keys: list[str]) -> None:
    global _kept_here
    _kept_here = True
    parse_cache.put(_name(), keys)


def check(doc: Any) -> None:
    """Raise the :class:`~pddplan.errors.ProfileError` that validating the scenario document
    ``doc`` (a :class:`~pddplan.io.yamldoc.YamlDoc`) would raise for its first unknown top-level
    key, where the schema's keys are kept; do nothing otherwise (see the module notes)."""
    data = doc.data
    if not isinstance(data, dict) or "sites" in data:
        return
    if not all(isinstance(k, str) for k in data):  # the parser makes every key a string
        return
    name = _name()
    kept = parse_cache.get(name, "the scenario keys read from the schemas")
    if kept is not None and not _is_keys(kept):
        parse_cache.damaged(name, "the scenario keys read from the schemas")
        kept = None
    if kept is None:  # read from the schemas (imported): the same check, at their cost
        kept = scenario_keys()
        if kept is None:
            return
        _store(kept)
    allowed = set(kept)
    for key in data:
        if key not in allowed:
            path = (key,)
            raise ProfileError(
                unknown_key(key, kept), file=doc.file, key=dotted(path), line=line_for(doc, path)
            )
