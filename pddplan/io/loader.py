"""Profiles and scenarios from their files: validation against the specs, the profile search
path and scenario resolution. The YAML itself is parsed by :mod:`pddplan.io.yamldoc` (strict,
with the line of every key), whose names are re-exported here."""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from pddplan.errors import NotFoundError, ProfileError, did_you_mean
from pddplan.io import key_check, parse_cache
from pddplan.io.bundled import bundled_profiles_dir as bundled_profiles_dir  # re-exported
from pddplan.io.memo import IdentityMemo
from pddplan.io.search_path import ENV_VAR as ENV_VAR  # re-exported
from pddplan.io.search_path import SearchPath
from pddplan.io.search_path import is_workload_path as is_workload_path  # re-exported
from pddplan.io.yamldoc import YamlDoc as YamlDoc  # re-exported: the document and its parser
from pddplan.io.yamldoc import doc_from_bytes
from pddplan.io.yamldoc import parse_yaml as parse_yaml
from pddplan.io.yamldoc import read_yaml as read_yaml
from pddplan.spec import KIND_DIRS, KINDS, Scenario, Strict, Workload
from pddplan.spec.scenario import ResolvedScenario
from pddplan.spec.scenario import role_chip_names as role_chip_names  # re-exported
from pddplan.spec.validation import (
    Path_,
    data_path,
    dotted,
    line_for,
    validation_to_profile_error,
)


def validate(cls: type[Strict], doc: YamlDoc) -> Any:
    if not isinstance(doc.data, dict):
        raise ProfileError("expected a mapping of keys at the top level", file=doc.file, line=1)
    if cls is Scenario:
        key_check.keep()
    try:
        return cls.model_validate(doc.data)
    except ValidationError as exc:
        raise validation_to_profile_error(exc, cls, doc) from None


def load_file(path: Path, expected_kind: str | None = None) -> Any:
    """Load and validate one profile or scenario file; its ``kind:`` picks the schema.

    A file validated before is read back validated (:func:`pddplan.io.parse_cache.
    validated_key`: keyed by its content, the kind asked for and the schemas' source)."""
    return _load_validated(path, read_yaml(path), expected_kind)


def load_bytes(path: Path, raw: bytes, expected_kind: str | None = None) -> Any:
    """:func:`load_file` of the file ``path`` as holding ``raw`` (bytes read with
    :func:`~pddplan.io.yamldoc.read_document_bytes`): what a caller keyed on those exact bytes
    loads, whatever the file holds by then and whatever this process read from it before."""
    return _load_validated(path, doc_from_bytes(str(path), raw), expected_kind)


def _load_validated(path: Path, doc: YamlDoc, expected_kind: str | None) -> Any:
    """The validated object of a document: read back from the parse cache where it was
    validated before (:func:`pddplan.io.parse_cache.validated_key`), else validated and kept."""
    said = doc.data.get("kind") if isinstance(doc.data, dict) else None
    # a kind that is not a name (a list, a mapping) matches no kept object: _load_doc says why
    said = said if isinstance(said, str) else None
    kind = KINDS.get(expected_kind or said or "", ())
    return _kept_validated(doc, expected_kind, kind, lambda: _load_doc(path, doc, expected_kind))


def validated_scenario(doc: YamlDoc) -> Scenario:
    """``validate(Scenario, doc)``, read back from the parse cache where the same document
    validated before (as :func:`load_file` reads a profile back): a start that loads a scenario
    file then builds no validator for it. Errors are :func:`validate`'s, raised afresh."""
    return _kept_validated(doc, "scenario", Scenario, lambda: validate(Scenario, doc))


def _kept_validated(
    doc: YamlDoc, expected_kind: str | None, cls: Any, compute: Callable[[], Any]
) -> Any:
    """``compute()`` (a validation of ``doc``), kept in the parse cache under the document's
    key and the kind asked for; a kept object that is not a ``cls`` is treated as damaged."""
    if not doc.key:
        return compute()
    name = parse_cache.validated_key(doc.key, expected_kind)
    kept = parse_cache.get(name, "validated")
    if kept is not None:
        if isinstance(kept, cls):
            if cls is Scenario:
                key_check.keep()
            return kept
        parse_cache.damaged(name, "validated")
    obj = compute()
    parse_cache.put(name, obj)
    return obj


def _load_doc(path: Path, doc: YamlDoc, expected_kind: str | None) -> Any:
    kind = doc.data.get("kind") if isinstance(doc.data, dict) else None
    if kind is None:
        kind = expected_kind
    if not isinstance(kind, str) or kind not in KINDS:
        raise ProfileError(
            f"unknown kind {kind!r}; allowed: {', '.join(KINDS)}",
            file=str(path),
            key="kind",
            line=doc.lines.get(("kind",), 1),
        )
    if expected_kind is not None and kind != expected_kind:
        raise ProfileError(
            f"expected kind {expected_kind!r}, found {kind!r}",
            file=str(path),
            key="kind",
            line=doc.lines.get(("kind",)),
        )
    obj = validate(KINDS[kind], doc)
    stem = path.stem
    if kind != "scenario" and getattr(obj, "name", stem) != stem:
        raise ProfileError(
            f"name {obj.name!r} must match the file name {stem!r}",
            file=str(path),
            key="name",
            line=doc.lines.get(("name",)),
        )
    return obj


# ------------------------------------------------------------------------------ search path


def bundled_names(text: str) -> str:
    """``text`` with the path of every bundled file replaced by its name: ``bundled scenario
    pdd-paper`` or ``bundled chip profile gpu-b`` (``, line N`` for ``PATH:N``), so that a
    message does not send the reader into the installed package."""
    root = bundled_profiles_dir()
    places = [(root / "scenarios", "scenario")]
    places += [(root / sub, f"{kind} profile") for kind, sub in KIND_DIRS.items()]
    if root.name == "profiles":  # a source checkout: the examples are bundled scenarios
        places.append((root.parent / "examples", "scenario"))
    for folder, what in places:
        if str(folder) not in text:
            continue
        pattern = re.escape(str(folder)) + r"[/\\]([A-Za-z0-9_.+-]+)\.ya?ml(?::(\d+))?"

        def name(m: re.Match[str], what: str = what) -> str:
            return f"bundled {what} {m[1]}" + (f", line {m[2]}" if m[2] else "")

        text = re.sub(pattern, name, text)
    return text


@dataclass
class Registry(SearchPath):
    """The search path (:class:`~pddplan.io.search_path.SearchPath`) that also loads and
    validates the profiles it finds."""

    def load(self, kind: str, name: str) -> Any:
        return _load_cached(self.path(kind, name), kind)


def _load_cached(path: Path, kind: str) -> Any:
    """:func:`load_file`, memoized on the file's path, size and modification time, as the parse
    is (:func:`~pddplan.io.yamldoc.read_yaml`): a long-lived process (a notebook) that edits a
    profile between two solves reads it again."""
    try:
        st = path.stat()
    except OSError:
        return load_file(path, kind)  # the error, with the file named
    return _load_at(path, kind, st.st_size, st.st_mtime_ns)


@lru_cache(maxsize=512)
def _load_at(path: Path, kind: str, size: int, mtime_ns: int) -> Any:
    return load_file(path, kind)


# -------------------------------------------------------------------------------- scenarios


def _deep_merge(base: dict[str, Any], patch: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` with ``patch`` merged in, key by key, as a new document; neither is changed.

    The containers on the patch's paths are new, and so is every value the patch brings; the
    rest of ``base`` is shared with the result, never changed by anyone (a parsed document is
    read, validated and merged, and each merge builds its own containers). A document in
    which one container appears twice (a YAML alias, ``*name``) is deep-copied and patched in
    place instead, so that a change through one of its places shows at the other as before.
    Copying only the patched paths keeps a sweep's point from copying a whole profile to
    change its price."""
    if _has_alias(base):
        out = _copy_document(base)
        _merge_into(out, patch)
        return out
    return _merged(base, patch)


def _merged(base: dict[str, Any], patch: Mapping[str, Any]) -> dict[str, Any]:
    """:func:`_deep_merge` of a document without aliases: a new container on each patched
    path, the untouched values shared (keys in ``base``'s order, new ones after, as
    :func:`_merge_into` leaves them)."""
    out = dict(base)
    for k, v in patch.items():
        cur = out.get(k)
        if isinstance(v, Mapping) and isinstance(cur, dict):
            out[k] = _merged(cur, v)
        elif isinstance(v, Mapping) and isinstance(cur, list) and _indexed(v, cur):
            entries = list(cur)
            for i, e in enumerate(entries):
                if i in v and isinstance(e, dict):
                    entries[i] = _merged(e, v[i])
            out[k] = entries
        else:
            out[k] = _copy_document(v)
    return out


def _has_alias(doc: Any) -> bool:
    """Whether a parsed document holds one container at two places (remembered per document
    object: the parsed documents a sweep merges into are the loader's cached ones)."""
    return _ALIASED.get(doc, (), lambda: _walk_has_alias(doc, set()))


def _walk_has_alias(doc: Any, seen: set[int]) -> bool:
    kind = type(doc)
    if kind is not dict and kind is not list:
        return kind not in _ATOMS  # another type: deep-copied as before
    if id(doc) in seen:
        return True
    seen.add(id(doc))
    values = doc.values() if kind is dict else doc
    return any(_walk_has_alias(v, seen) for v in values if type(v) not in _ATOMS)


#: :func:`_has_alias` by document object.
_ALIASED = IdentityMemo(size=256)


def _groups_patched(
    cls: type[Strict],
    base: Any,
    merged: dict[str, Any],
    ov: Mapping[str, Any],
    loaded: Callable[[], Any] | None = None,
) -> Any | None:
    """The profile ``cls.model_validate(merged)`` gives, where ``merged`` is the parsed
    document ``base`` with overrides ``ov`` that change whole groups alone (a chip's
    ``price``, a sweep's point): ``base``'s validated object (kept per document object) with
    those groups validated alone in their own schema and set by pydantic's copy. None, for the
    full validation to decide, wherever that could differ: ``cls`` has validators of its own,
    ``ov`` names a key that is not a group (:func:`_group_fields`), ``base`` holds a YAML alias
    (a change through one place shows at the other), or either validation fails (the error is
    the full validation's).

    The same object: a model field validates with its own class's schema, whatever holds it;
    every other field of ``merged`` is ``base``'s very value, validated the same; and the copy
    adds the groups to the fields set as a key present in ``merged`` would.

    ``loaded``: the caller's load of the file ``base`` was parsed from (:func:`_load_cached`:
    kept validated in the parse cache, so that no schema is built for it), taken as ``base``'s
    validated object; where it raises, ``base`` is validated here."""
    groups = _group_fields(cls)
    if not groups or not all(k in groups for k in ov) or type(base) is not dict:
        return None
    if _has_alias(base):
        return None
    whole = _BASE_VALIDATED.get(base, cls, lambda: _loaded_or_validated(cls, base, loaded))
    if whole is None:
        return None
    try:
        update = {k: groups[k].model_validate(merged[k]) for k in ov}
    except Exception:  # a rejected value, or a validator's fault: the full validation's to say
        return None
    return BaseModel.model_copy(whole, update=update)


def _loaded_or_validated(
    cls: type[Strict], data: dict[str, Any], loaded: Callable[[], Any] | None
) -> Any | None:
    """``loaded()`` where it gives a ``cls`` (the file of ``data`` as loaded), else
    :func:`_validated_or_none`."""
    if loaded is not None:
        try:
            obj = loaded()
        except Exception:  # the file alone fails (an override may mend it): validated here
            obj = None
        if type(obj) is cls:
            return obj
    return _validated_or_none(cls, data)


def _validated_or_none(cls: type[Strict], data: dict[str, Any]) -> Any | None:
    try:
        return cls.model_validate(data)
    except Exception:  # the override may mend it: the full validation decides
        return None


@lru_cache(maxsize=64)
def _group_fields(cls: type[Strict]) -> dict[str, type[BaseModel]]:
    """The fields of ``cls`` that hold a model of their own, with nothing else on the field
    (no alias, constraint, default factory or union), by name; none where ``cls`` has
    validators of its own (a check across its groups would be skipped) or a default computed
    from the other fields (it would keep the base's value)."""
    dec = cls.__pydantic_decorators__
    if dec.model_validators or dec.field_validators or dec.root_validators or dec.validators:
        return {}
    fields = cls.model_fields
    if any(f.default_factory_takes_validated_data for f in fields.values()):
        return {}
    out: dict[str, type[BaseModel]] = {}
    for name, f in fields.items():
        kind = f.annotation
        if (
            isinstance(kind, type)
            and issubclass(kind, BaseModel)
            and f.alias is None
            and f.validation_alias is None
            and not f.metadata
            and f.default_factory is None
        ):
            out[name] = kind
    return out


#: :func:`_groups_patched`'s validated base objects, by document object and schema.
_BASE_VALIDATED = IdentityMemo(size=256)


#: The leaves of a parsed document that a deep copy keeps as they are (immutable).
_ATOMS = frozenset({str, int, float, bool, type(None)})


def _copy_document(doc: Any, memo: dict[int, Any] | None = None) -> Any:
    """``copy.deepcopy`` of a parsed document, its dicts and lists walked directly (a robust
    study copies a scenario and its changed profiles per sample; ``deepcopy``'s generic
    dispatch took 3-4x as long): the same result, an alias (``*name``) still one container
    in the copy, and any other type deep-copied as ``deepcopy`` does it."""
    if memo is None:
        memo = {}
    kind = type(doc)
    if kind in _ATOMS:
        return doc
    if kind is not dict and kind is not list:
        return copy.deepcopy(doc, memo)
    key = id(doc)
    if key in memo:
        return memo[key]
    if kind is dict:
        out: Any = {}
        memo[key] = out
        for k, v in doc.items():
            out[_copy_document(k, memo)] = v if type(v) in _ATOMS else _copy_document(v, memo)
    else:
        out = []
        memo[key] = out
        out.extend(v if type(v) in _ATOMS else _copy_document(v, memo) for v in doc)
    return out


def _merge_into(out: dict[str, Any], patch: Mapping[str, Any]) -> None:
    for k, v in patch.items():
        if isinstance(v, Mapping) and isinstance(out.get(k), dict):
            _merge_into(out[k], v)
        elif isinstance(v, Mapping) and isinstance(out.get(k), list) and _indexed(v, out[k]):
            # entries of a list by index (an override ``cache.tiers.0.capacity_gb_per_node``)
            for i, e in enumerate(out[k]):
                if i in v and isinstance(e, dict):
                    _merge_into(e, v[i])
        else:
            out[k] = _copy_document(v)


def _indexed(patch: Mapping[str, Any], entries: list[Any]) -> bool:
    """Whether ``patch`` sets entries of ``entries`` by index (int keys, each in range)."""
    return all(isinstance(i, int) and 0 <= i < len(entries) for i in patch)


_OVERRIDE_KINDS = {
    "chips": "chip",
    "models": "model",
    "links": "link",
    "workloads": "workload",
    "caches": "cache",
}
#: The override group of each profile kind (the inverse of :data:`_OVERRIDE_KINDS`).
_GROUP_OF_KIND = {kind: group for group, kind in _OVERRIDE_KINDS.items()}


def _in_override(ov: Mapping[str, Any], path: Path_) -> bool:
    cur: Any = ov
    for part in path:
        if isinstance(cur, Mapping) and part in cur:
            cur = cur[part]
        else:
            return isinstance(cur, Mapping) and cur is not ov
    return True


def _with_scenario_overrides(
    scen: Scenario,
    kind: str,
    name: str,
    ppath: Path,
    read: Callable[[Path], YamlDoc],
    load: Callable[[Path, str], Any],
    file: str,
    line_of: Callable[[Path_], int | None],
) -> Any:
    """Profile ``name`` of ``kind`` (its file ``ppath``) with the scenario's
    ``overrides.GROUP.NAME`` merged and validated: how a scenario sees any profile. A value the
    schema rejects is a ProfileError naming the scenario's key (its line from ``line_of``)."""
    group = _GROUP_OF_KIND[kind]
    ov = scen.overrides.get(group, {}).get(name)
    if not ov:
        return load(ppath, kind)
    base = read(ppath)
    if not isinstance(base.data, dict):
        return load(ppath, kind)  # not a mapping: its own load says so, file and line
    merged = YamlDoc(_deep_merge(base.data, ov), base.lines, str(ppath))
    patched = _groups_patched(KINDS[kind], base.data, merged.data, ov, lambda: load(ppath, kind))
    if patched is not None:
        return patched
    try:
        return KINDS[kind].model_validate(merged.data)
    except ValidationError as exc:
        err = validation_to_profile_error(exc, KINDS[kind], merged)
        path = data_path(exc.errors(include_url=False)[0]["loc"], merged.data)
        okey: Path_ = ("overrides", group, name, *path)
        if _in_override(ov, path):
            # the offending value came from the scenario: name the scenario's key and line
            msg = err.message.split(": ", 2)[-1]
            raise ProfileError(msg, file=file, key=dotted(okey), line=line_of(okey)) from None
        raise ProfileError(f"{err.message} (with the overrides of {file})", file=None) from None


def scenario_chip(rs: ResolvedScenario, registry: Registry, name: str) -> Any:
    """Chip ``name`` as scenario ``rs`` sees it, priced and derated by its
    ``overrides.chips.NAME``: the chip it loaded, or (a chip of the catalog it does not use,
    as ``chips rank`` ranks) the registry's profile with those overrides applied, as
    :func:`resolve` applies them."""
    if name in rs.chips:
        return rs.chips[name]
    return _with_scenario_overrides(
        rs.scenario,
        "chip",
        name,
        registry.path("chip", name),
        read_yaml,
        _load_cached,
        rs.file,
        lambda okey: None,  # the scenario's lines are not kept once it is resolved
    )


def load_scenario(
    name_or_path: str | None,
    registry: Registry,
    patch: Mapping[str, Any] | None = None,
) -> ResolvedScenario:
    """Load a scenario, the profiles it names, and apply its ``overrides`` (and ``patch``)."""
    path = registry.scenario_path(name_or_path)
    doc = read_yaml(path)
    if patch:
        doc = YamlDoc(data=_deep_merge(doc.data, patch), lines=doc.lines, file=doc.file)
    return resolve(validated_scenario(doc), doc, registry)


def resolve(
    scen: Scenario,
    doc: YamlDoc,
    registry: Registry,
    read: Callable[[Path], YamlDoc] = read_yaml,
    load: Callable[[Path, str], Any] = _load_cached,
) -> ResolvedScenario:
    """The profiles ``scen`` names, loaded, with its ``overrides`` merged and validated.

    ``read`` parses a profile file that has overrides and ``load`` loads one that has none
    (a caller that resolves many variants of one scenario passes memoized ones).
    """
    file = doc.file

    def unknown(what: str, known: Iterable[str], *path: str, tail: str = "") -> ProfileError:
        return ProfileError(
            f"{what} {path[-1]!r}{did_you_mean(path[-1], known)}{tail}",
            file=file,
            key=dotted(("overrides", *path)),
            line=doc.lines.get(("overrides", *path)),
        )

    for group in scen.overrides:
        if group not in _OVERRIDE_KINDS:
            allowed = f" (allowed: {', '.join(_OVERRIDE_KINDS)})"
            raise unknown("unknown override group", _OVERRIDE_KINDS, group, tail=allowed)
        known = registry.index(_OVERRIDE_KINDS[group])
        for name in scen.overrides[group]:
            if group == "workloads" and name == scen.workload and is_workload_path(name):
                continue  # the overrides of the workload file the scenario names
            if name not in known:
                # an override of no profile would be dropped without a word
                raise unknown(f"no {_OVERRIDE_KINDS[group]} profile named", known, group, name)

    def get(kind: str, name: str, key: Path_) -> Any:
        if kind == "workload" and is_workload_path(name):
            # a workload file, relative to the scenario file (not found: NotFoundError, exit 2)
            line = doc.lines.get(key)
            origin = f"{dotted(key)}: in {file}" + (f", line {line}" if line else "")
            ppath = registry.path(kind, name, base_dir=Path(file).parent, origin=origin)
        else:
            try:
                ppath = registry.path(kind, name)
            except NotFoundError as exc:
                raise ProfileError(
                    str(exc), file=file, key=dotted(key), line=line_for(doc, key)
                ) from None
        return _with_scenario_overrides(
            scen, kind, name, ppath, read, load, file, lambda okey: line_for(doc, okey)
        )

    model = get("model", scen.model, ("model",))
    if isinstance(scen.workload, Workload):
        workload = scen.workload
    else:
        workload = get("workload", scen.workload, ("workload",))
    link = get("link", scen.link, ("link",))
    rdma = get("link", scen.rdma, ("rdma",))
    if link.type != "wan":
        raise ProfileError(
            "must name a WAN link profile", file=file, key="link", line=doc.lines.get(("link",))
        )
    if rdma.type != "rdma":
        raise ProfileError(
            "must name an RDMA link profile", file=file, key="rdma", line=doc.lines.get(("rdma",))
        )

    all_chips = list(registry.index("chip"))
    names: dict[str, Path_] = {}
    for role in ("P", "RLD", "MD"):
        choice = getattr(scen.roles, role)
        for i, c in enumerate(choice.chips):
            if c == "*":
                for n in all_chips:
                    names.setdefault(n, ("roles", role, "chips", i))
            else:
                names.setdefault(c, ("roles", role, "chips", i))
    if scen.baseline is not None:
        names.setdefault(scen.baseline.chip, ("baseline", "chip"))
    for c in scen.limits.max_chips:
        names.setdefault(c, ("limits", "max_chips", c))
    for c in scen.inventory.owned:
        names.setdefault(c, ("inventory", "owned", c))
    chips = {n: get("chip", n, key) for n, key in names.items()}
    caches = {}
    if scen.cache is not None:
        for i, t in enumerate(scen.cache.tiers):
            spec = get("cache", t.profile, ("cache", "tiers", i, "profile"))
            caches[t.profile] = spec
            for j, gb in enumerate(t.capacity_gb_per_node):
                if gb > spec.max_capacity_gb_per_node:
                    key: Path_ = ("cache", "tiers", i, "capacity_gb_per_node", j)
                    raise ProfileError(
                        f"{gb:g} GB is more than the {spec.name} profile's node holds: allowed "
                        f"0 to {spec.max_capacity_gb_per_node:g} (max_capacity_gb_per_node)",
                        file=file,
                        key=dotted(key),
                        line=line_for(doc, key),
                    )
        # each P instance holds one node's cache (capacity and price per node, the cost P
        # instances x the node's): instances smaller than a node would share one node's
        # memory and each be billed a node's (tp4 on 8-chip nodes: 4 nodes' 2048 GB of DRAM
        # on 2 nodes, past what a node holds); one of several nodes holds it on one of them
        p_role = scen.roles.P
        p_chips = list(all_chips) if "*" in p_role.chips else p_role.chips
        for j, size in enumerate(p_role.chips_per_instance):
            for c in p_chips:
                node = chips[c].datasheet.chips_per_node
                if size < node:
                    key = ("roles", "P", "chips_per_instance", j)
                    raise ProfileError(
                        f"{size}: with cache: tiers each P instance holds one node's cache "
                        f"(capacity_gb_per_node, priced per node), and a {c} node holds "
                        f"{node} chips: give at least {node}",
                        file=file,
                        key=dotted(key),
                        line=line_for(doc, key),
                    )
    return ResolvedScenario(
        scenario=scen,
        file=file,
        model=model,
        workload=workload,
        link=link,
        rdma=rdma,
        chips=chips,
        caches=caches,
    )
