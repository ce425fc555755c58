"""Overrides: ``{"dotted.path": value}`` applied to a scenario and validated as a file is.

A PATH is a dotted key into the scenario as a user sees it:

- a scenario key: ``rate_rps``, ``sla.ttft_p99_s``, ``serving.chunk_size_tokens``;
- a key of a profile the scenario names: ``link.bandwidth_gbit_per_s``, ``rdma.rtt_ms``,
  ``model.dtypes.kv_cache``, ``workload.hit_rate.shift``, ``chips.gpu-b.price.rental_usd_per_hour``
  (these become the scenario's ``overrides:`` of that profile, exactly as if written in the file);
- short forms: ``chips.NAME.price_usd_per_hour`` for ``chips.NAME.price.rental_usd_per_hour``;
- a profile swap: ``link``, ``rdma``, ``model`` or ``workload`` set to another profile's name,
  or ``workload`` set to a workload file (``path/to/x.yaml``, relative to the working directory;
  :func:`pddplan.io.loader.is_workload_path` tells a path from a name).

:class:`ScenarioSource` keeps a scenario file's parsed document in memory; every set of
overrides is merged into that document and validated by the same pydantic schema and the same
loader code as the file itself, so a bad value gets the file's message (naming the key and the
allowed range) without the file being read again. Unknown paths get a did-you-mean.
"""

from __future__ import annotations

import copy
import functools
import types
import typing
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from pddplan.errors import OverrideError, ProfileError, UsageError, did_you_mean
from pddplan.io.loader import (
    Registry,
    ResolvedScenario,
    YamlDoc,
    _deep_merge,
    _load_cached,
    is_workload_path,
    read_yaml,
    resolve,
    validate,
    validated_scenario,
)
from pddplan.spec import Chip, Link, Model, Scenario, Workload
from pddplan.spec.caches import Cache
from pddplan.spec.scenario_spec import CacheTierChoice
from pddplan.spec.validation import unwrap, validation_to_profile_error

ALIASES = {"price_usd_per_hour": ("price", "rental_usd_per_hour")}
PROFILE_ROOTS: dict[str, type[BaseModel]] = {
    "link": Link,
    "rdma": Link,
    "model": Model,
    "workload": Workload,
}
#: Scenario keys that name a profile: ``{"link": "wan-10g-cross-city"}`` swaps the profile.
PROFILE_NAMES = ("link", "rdma", "model", "workload")
#: Keys that choose which chip profiles a scenario loads: applied first, like profile swaps, so
#: that a key of a chip they bring in (``chips.h100-sxm.price_usd_per_hour``) can be set along.
CHIP_CHOICES = ("roles.P.chips", "roles.RLD.chips", "roles.MD.chips", "baseline.chip")


# -------------------------------------------------------------------------------- paths


#: The segment of a path that stands for any key of a mapping field (``load.elastic.<key>.
#: startup_minutes`` is the path of ``load.elastic.h20.startup_minutes``).
ANY_KEY = "<key>"


def _fields(cls: type[BaseModel], prefix: str, depth: int = 0) -> Iterable[str]:
    for name, f in cls.model_fields.items():
        path = f"{prefix}.{name}" if prefix else name
        if _is_mapping(f.annotation):
            yield path  # the whole mapping
            path = f"{path}.{ANY_KEY}"  # keyed by a name: any key, then the value's fields
        subs = unwrap(f.annotation)
        if subs and depth < 4:
            for sub in subs:
                yield from _fields(sub, path, depth + 1)
        else:
            yield path


def known_paths(rs: ResolvedScenario) -> list[str]:
    """Every PATH an override may set on this scenario."""
    return list(_known_paths(tuple(rs.chips), tuple(rs.caches), _tier_count(rs)))


def _tier_count(rs: ResolvedScenario) -> int:
    return len(rs.scenario.cache.tiers) if rs.scenario.cache is not None else 0


@functools.cache
def _known_paths(
    chips: tuple[str, ...], caches: tuple[str, ...] = (), tiers: int = 0
) -> tuple[str, ...]:
    paths = [
        p
        for p in _fields(Scenario, "")
        if not p.startswith(("overrides", "workload", "roles", "uncertainty"))
    ]
    paths += [
        f"roles.{r}.{k}"
        for r in ("P", "RLD", "MD")
        for k in ("chips", "chips_per_instance", "layouts")
    ]
    for root, cls in PROFILE_ROOTS.items():
        paths += [f"{root}.{p}" for p in _fields(cls, "") if not p.endswith(("kind", "name"))]
    for chip in chips:
        paths += [
            f"chips.{chip}.{p}" for p in _fields(Chip, "") if not p.endswith(("kind", "name"))
        ]
        paths.append(f"chips.{chip}.price_usd_per_hour")
    # a cache profile's keys (caches.host-dram.price.usd_per_gb_hour) and each cache tier's
    # keys by index (cache.tiers.0.capacity_gb_per_node)
    for name in caches:
        paths += [
            f"caches.{name}.{p}" for p in _fields(Cache, "") if not p.endswith(("kind", "name"))
        ]
    for i in range(tiers):
        paths += [f"cache.tiers.{i}.{k}" for k in CacheTierChoice.model_fields]
    return tuple(sorted(set(paths)))


def _is_mapping(tp: Any) -> bool:
    """Whether an annotation is a ``dict`` (or an optional one)."""
    origin = typing.get_origin(tp)
    if origin is typing.Annotated:
        return _is_mapping(typing.get_args(tp)[0])
    if origin in (typing.Union, types.UnionType):
        return any(_is_mapping(a) for a in typing.get_args(tp))
    return origin is dict


def _matches(path: str, pattern: str) -> bool:
    """Whether ``path`` is ``pattern`` with each :data:`ANY_KEY` segment standing for a key."""
    a, b = path.split("."), pattern.split(".")
    return len(a) == len(b) and all(q in (p, ANY_KEY) for p, q in zip(a, b, strict=True))


def _valid(path: str, known: frozenset[str]) -> bool:
    if path in known or path in PROFILE_NAMES:
        return True
    if any(_matches(path, k) for k in known if ANY_KEY in k):
        return True
    # a path into a dict- or union-typed field (e.g. limits.max_chips.NAME) is checked by loading
    return any(path.startswith(k + ".") for k in known if k.endswith(("max_chips", "owned")))


@functools.cache
def _known_set(chips: tuple[str, ...], caches: tuple[str, ...], tiers: int) -> frozenset[str]:
    """:func:`_known_paths` as a set (built once per scenario shape: a robust study checks
    every sample's paths)."""
    return frozenset(_known_paths(chips, caches, tiers))


def check_path(path: str, rs: ResolvedScenario) -> None:
    """Raise :class:`OverrideError` (with a did-you-mean) when ``path`` is not a key of ``rs``."""
    shape = (tuple(rs.chips), tuple(rs.caches), _tier_count(rs))
    if not _valid(path, _known_set(*shape)):
        known = _known_paths(*shape)
        hint = did_you_mean(path, known)
        raise OverrideError(f"not a key of this scenario{hint}", key=path, unknown_key=True)


def canonical_path(path: str) -> str:
    """``path`` with its short form spelled out (``chips.NAME.price_usd_per_hour`` ->
    ``chips.NAME.price.rental_usd_per_hour``, :data:`ALIASES`): two PATHs that set one key have
    one canonical path."""
    parts = path.split(".")
    if parts[0] == "chips" and len(parts) == 3 and parts[2] in ALIASES:
        return ".".join([*parts[:2], *ALIASES[parts[2]]])
    return path


def check_distinct_keys(paths: Sequence[str]) -> None:
    """Raise :class:`OverrideError` where two PATHs set one key, or one sets a key inside the
    other's (``chips.gpu-b.price_usd_per_hour`` and ``chips.gpu-b.price.rental_usd_per_hour``;
    ``chips.gpu-b.price`` and ``chips.gpu-b.price.capex_usd``): one of them would be dropped
    without a word, whichever came last."""
    seen: dict[str, str] = {}
    for path in paths:
        key = canonical_path(path)
        for other_key, other in seen.items():
            if key == other_key or _inside(key, other_key) or _inside(other_key, key):
                raise OverrideError(  # a fault of the keys, whatever the values
                    f"{other} and {path} set the same key: give it once",
                    key=path,
                    unknown_key=True,
                )
        seen[key] = path


def _inside(key: str, outer: str) -> bool:
    """Whether ``key`` is a key inside the value ``outer`` sets. A profile swap (``workload``)
    sets none of the keys under it: they patch the profile it brings in (``workload`` with
    ``workload.hit_rate.shift``)."""
    return outer not in PROFILE_NAMES and key.startswith(outer + ".")


def patch_for(path: str, value: Any, rs: ResolvedScenario) -> dict[str, Any]:
    """The scenario patch (deep-merged into the document) that sets ``path`` to ``value``."""
    parts = path.split(".")
    scen = rs.scenario
    if path in PROFILE_NAMES:
        return {path: value}
    if parts[0] == "chips":
        name, rest = parts[1], parts[2:]
        if len(rest) == 1 and rest[0] in ALIASES:
            rest = list(ALIASES[rest[0]])
        return {"overrides": {"chips": {name: _nest(rest, value)}}}
    if parts[0] == "caches":
        return {"overrides": {"caches": {parts[1]: _nest(parts[2:], value)}}}
    if parts[:2] == ["cache", "tiers"] and len(parts) > 2 and parts[2].isdigit():
        # an entry of the list by index: the loader merges it into that entry
        return {"cache": {"tiers": {int(parts[2]): _nest(parts[3:], value)}}}
    if parts[0] in ("link", "rdma"):
        return {"overrides": {"links": {getattr(scen, parts[0]): _nest(parts[1:], value)}}}
    if parts[0] == "model":
        return {"overrides": {"models": {scen.model: _nest(parts[1:], value)}}}
    if parts[0] == "workload":
        if isinstance(scen.workload, str):
            return {"overrides": {"workloads": {scen.workload: _nest(parts[1:], value)}}}
        return {"workload": _nest(parts[1:], value)}
    return _nest(parts, value)


def _nest(parts: Sequence[str], value: Any) -> dict[str, Any]:
    out: Any = value
    for p in reversed(parts):
        out = {p: out}
    return typing.cast(dict[str, Any], out)


def merge(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """``b`` deep-merged over ``a`` (neither is modified)."""
    out = dict(a)
    for k, v in b.items():
        out[k] = merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def _leaf(patch: Mapping[str, Any]) -> str:
    """The dotted key path of a one-branch patch, as the loader names keys in its errors."""
    parts: list[str] = []
    cur: Any = patch
    while isinstance(cur, Mapping) and len(cur) == 1:
        k = next(iter(cur))
        parts.append(str(k))
        cur = cur[k]
    return ".".join(parts)


def _related(err_key: str, leaf: str) -> bool:
    return (
        err_key == leaf
        or err_key.startswith((leaf + ".", leaf + "["))
        or leaf.startswith(err_key + ".")
    )


# ------------------------------------------------------------------- profiles on their own


def profiles_with_overrides(
    registry: Registry, names: Mapping[str, str], overrides: Mapping[str, Any] | None
) -> dict[str, Any]:
    """Profiles named by kind (``{"model": "deepseek-v3", "chip": "h200-sxm"}``), each loaded with
    the overrides whose PATH starts with its kind (``model.dtypes.weights``, ``chip.derates.
    compute_efficiency``), validated by the profile's schema as a file with them would be.

    For commands without a scenario (``pddplan step``): the PATHs are the keys of those profiles,
    as in a scenario's ``model.*`` and ``chips.NAME.*``.

    Raises
    ------
    OverrideError
        a PATH outside those profiles or not a key of one (with a did-you-mean), or a value the
        schema rejects (the key, the allowed range, the value).
    """
    given = dict(overrides or {})
    patches: dict[str, dict[str, Any]] = {kind: {} for kind in names}
    leaves: dict[str, tuple[str, str]] = {}
    for path, value in given.items():
        root, _, rest = str(path).partition(".")
        if root not in names or not rest:
            allowed = ", ".join(f"{k}.KEY" for k in names)
            raise OverrideError(
                f"not a key here; allowed: {allowed}", key=str(path), unknown_key=True
            )
        cls = KIND_SCHEMAS[root]
        known = sorted(p for p in _fields(cls, "") if not p.endswith(("kind", "name")))
        if rest not in known:
            hint = did_you_mean(rest, known, within=f"{root}.")
            raise OverrideError(
                f"not a key of the {root} profile{hint}", key=path, unknown_key=True
            )
        patches[root] = merge(patches[root], _nest(rest.split("."), value))
        leaves[path] = (root, rest)
    out: dict[str, Any] = {}
    for kind, name in names.items():
        if not patches[kind]:
            out[kind] = registry.load(kind, name)
            continue
        base = read_yaml(registry.path(kind, name))
        doc = YamlDoc(_deep_merge(base.data, patches[kind]), base.lines, base.file)
        try:
            out[kind] = KIND_SCHEMAS[kind].model_validate(doc.data)
        except ValidationError as exc:
            err = validation_to_profile_error(exc, KIND_SCHEMAS[kind], doc)
            mine = [path for path, (root, _) in leaves.items() if root == kind]
            blamed = [p for p in mine if err.key and _related(err.key, leaves[p][1])]
            if not blamed and len(mine) == 1:
                blamed = mine  # the only change to this profile (the error's key may carry a tag)
            if blamed:
                raise OverrideError(err.detail, key=blamed[0], value=given[blamed[0]]) from None
            raise ProfileError(f"{err.message} (with {', '.join(mine)} set)") from None
    return out


#: The schema of each profile kind :func:`profiles_with_overrides` patches.
KIND_SCHEMAS: dict[str, type[BaseModel]] = {"model": Model, "chip": Chip}


# ------------------------------------------------------------------------------ the source


@dataclass
class ScenarioSource:
    """A scenario file's parsed document and the registry its profile names resolve in.

    The YAML is read once; :meth:`resolve` validates any set of overrides from the document in
    memory. The unpatched scenario is resolved once and kept, and so is each profile: read
    once per source, as the scenario is (a robust study or a verdict check resolves hundreds of
    variants; a new source reads the files again).
    """

    doc: YamlDoc
    registry: Registry
    _base: ResolvedScenario | None = field(default=None, repr=False, compare=False)
    _profile_docs: dict[Path, YamlDoc] = field(default_factory=dict, repr=False, compare=False)
    _profiles: dict[tuple[Path, str], Any] = field(default_factory=dict, repr=False, compare=False)

    def _read(self, path: Path) -> YamlDoc:
        """A profile's parsed document, read once per source."""
        if path not in self._profile_docs:
            self._profile_docs[path] = read_yaml(path)
        return self._profile_docs[path]

    def _load(self, path: Path, kind: str) -> Any:
        """A profile without overrides, loaded (:meth:`Registry.load`'s way) once per source."""
        key = (path, kind)
        if key not in self._profiles:
            self._profiles[key] = _load_cached(path, kind)
        return self._profiles[key]

    @classmethod
    def open(cls, name_or_path: str | None, registry: Registry) -> ScenarioSource:
        """A two-site scenario file's source; a topology file (``sites:``) is a UsageError
        saying which commands take it."""
        doc = read_yaml(registry.scenario_path(name_or_path))
        if isinstance(doc.data, dict) and "sites" in doc.data:
            raise UsageError(
                f"{doc.file}: is a topology file (sites:), and this command plans one two-site "
                "scenario: plan it with `pddplan topology`, or give it to `sweep`, `report` or "
                "`robust`"
            )
        return cls(doc=doc, registry=registry)

    @property
    def file(self) -> str:
        return self.doc.file

    @property
    def base(self) -> ResolvedScenario:
        """The scenario as the file says, with its own ``overrides:`` applied."""
        if self._base is None:
            self._base = resolve(
                validated_scenario(self.doc), self.doc, self.registry, self._read, self._load
            )
        return self._base

    def _with_overrides(self, doc: YamlDoc) -> Scenario | None:
        """The scenario of ``doc``, a document that differs from the file's in its
        ``overrides:`` block alone (a sweep of a profile's key: a chip's price, a link's
        bandwidth): the file's validated scenario with that block, checked as the schema
        checks it (kind -> profile name -> a mapping of string keys); None where it is not
        such a block, for the full validation to report.

        What else the schema validates is the file's, validated once for :attr:`base`, and
        the block's fields are validated where they are merged, in their profile's schema
        (:func:`~pddplan.io.loader.resolve`)."""
        block = doc.data.get("overrides")
        if not isinstance(block, dict):
            return None
        checked: dict[str, dict[str, dict[str, object]]] = {}
        for kind, named in block.items():
            if not isinstance(kind, str) or not isinstance(named, dict):
                return None
            checked[kind] = {}
            for name, fields in named.items():
                if not isinstance(name, str) or not isinstance(fields, dict):
                    return None
                if not all(isinstance(k, str) for k in fields):
                    return None
                checked[kind][name] = dict(fields)
        try:
            base = self.base.scenario
        except ProfileError:
            return None  # the file's own fault: reported as the full validation reports it
        return BaseModel.model_copy(base, update={"overrides": checked})

    def check(self, overrides: Mapping[str, Any]) -> None:
        """Check each override on its own (key, then value), and that no two set one key
        (:func:`check_distinct_keys`): the first bad one raises."""
        check_distinct_keys([str(p) for p in overrides])
        for path, value in overrides.items():
            self.resolve({path: value})

    def patch(
        self, overrides: Mapping[str, Any]
    ) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
        """The merged document patch of ``overrides`` and, per PATH, its own patch (one branch,
        whose leaf is its key in the document: :func:`_leaf`, read where an error is
        blamed)."""
        # profile swaps and chip choices first: a key of a swapped profile patches the new one
        swaps = {k: v for k, v in overrides.items() if k in PROFILE_NAMES or k in CHIP_CHOICES}
        base = self.resolve(swaps) if swaps and len(swaps) < len(overrides) else self.base
        patch: dict[str, Any] = {}
        ones: dict[str, dict[str, Any]] = {}
        check_distinct_keys([str(p) for p in overrides])
        for path, value in overrides.items():
            if not isinstance(path, str) or not path:
                raise OverrideError("an override key must be a dotted path", key=str(path))
            check_path(path, base)
            if path == "workload" and isinstance(value, str) and is_workload_path(value):
                # a workload file as an override: relative to the working directory, not to
                # the scenario file (whose own ``workload:`` paths are)
                origin = f"from the override workload={value}"
                value = str(self.registry.path("workload", value, origin=origin).absolute())
            one = ones[path] = patch_for(path, value, base)
            patch = merge(patch, one)
        return patch, ones

    def resolve(self, overrides: Mapping[str, Any] | None = None) -> ResolvedScenario:
        """The scenario with ``overrides`` applied, validated as a file with them would be.

        Raises
        ------
        OverrideError
            an unknown PATH (with a did-you-mean), or a value the schema rejects: the message
            is the one the same value gets in a YAML file (key, allowed range, value).
        ProfileError
            a fault of the files themselves.
        """
        if not overrides:
            return self.base
        patch, ones = self.patch(overrides)
        doc = YamlDoc(data=_deep_merge(self.doc.data, patch), lines={}, file=self.doc.file)
        try:
            scen = self._with_overrides(doc) if patch.keys() == {"overrides"} else None
            if scen is None:
                scen = validate(Scenario, doc)
            return resolve(scen, doc, self.registry, self._read, self._load)
        except ProfileError as exc:
            leaves = {path: _leaf(one) for path, one in ones.items()}
            raise _blame(exc, overrides, leaves) from None


def _blame(
    exc: ProfileError, overrides: Mapping[str, Any], leaves: Mapping[str, str]
) -> ProfileError | OverrideError:
    key = exc.key or ""
    for path, leaf in leaves.items():
        if key and _related(key, leaf):
            return OverrideError(exc.detail, key=path, value=overrides[path])
    if len(overrides) == 1:
        (path,) = overrides
        return OverrideError(exc.message, key=path, value=overrides[path])
    return exc


def copy_overrides(overrides: Mapping[str, Any] | None) -> dict[str, Any]:
    """A private copy of a caller's overrides (values deep-copied).

    Raises
    ------
    OptionError : ``overrides`` that is not a mapping (a list of ``"PATH=VALUE"`` texts, say:
        the command line's form, which :func:`pddplan.api.values.parse_overrides` reads).
    """
    if overrides is not None and not isinstance(overrides, Mapping):
        from pddplan.errors import OptionError

        raise OptionError(
            "overrides",
            "expects a mapping {'dotted.path': value}, not a "
            f"{type(overrides).__name__} (pddplan.api.values.parse_overrides reads PATH=VALUE "
            "texts)",
        )
    return {str(k): copy.deepcopy(v) for k, v in (overrides or {}).items()}


def current_value(rs: ResolvedScenario, path: str) -> Any:
    """The value a dotted PATH (as in ``overrides``) has in a resolved scenario, or None."""
    parts = path.split(".")
    obj: Any
    if parts[0] == "chips" and len(parts) > 2:
        obj, parts = rs.chips.get(parts[1]), parts[2:]
        if len(parts) == 1 and parts[0] in ALIASES:
            parts = list(ALIASES[parts[0]])
    elif parts[0] in ("link", "rdma", "model", "workload"):
        obj, parts = getattr(rs, parts[0]), parts[1:]
    elif parts[0] == "caches" and len(parts) > 2:
        obj, parts = rs.caches.get(parts[1]), parts[2:]
    else:
        obj = rs.scenario
    for part in parts:
        if isinstance(obj, list) and part.isdigit():
            obj = obj[int(part)] if int(part) < len(obj) else None
        else:
            obj = obj.get(part) if isinstance(obj, dict) else getattr(obj, part, None)
        if obj is None:
            return None
    return obj


# ------------------------------------------------------------------ topology documents

#: Lists of a topology file whose entries a PATH names by ``name`` (a line also by its
#: ``SITE-SITE`` label) or by index: ``traffic.north.rate_rps``, ``lines.0.max_count``.
TOPOLOGY_LISTS = ("sites", "lines", "traffic")


def _entry_name(kind: str, entry: Any) -> str | None:
    if not isinstance(entry, dict):
        return None
    if entry.get("name"):
        return str(entry["name"])
    sites = entry.get("sites")
    if kind == "lines" and isinstance(sites, list) and len(sites) == 2:
        return f"{sites[0]}-{sites[1]}"
    return None


def _topology_entry(kind: str, entries: list[Any], want: str, path: str) -> int:
    """The index of the entry of list ``kind`` that ``want`` names (its name or index)."""
    names = [_entry_name(kind, e) for e in entries]
    if want in names:
        return names.index(want)
    if want.isdigit() and int(want) < len(entries):
        return int(want)
    hint = did_you_mean(want, [n for n in names if n])
    raise OverrideError(
        f"{kind} has no entry {want!r}{hint} (give a name or an index below {len(entries)})",
        key=path,
        unknown_key=True,
    )


def topology_value(data: Mapping[str, Any], path: str) -> Any:
    """The value a topology document gives ``path`` (as :func:`topology_patch` names it), or
    None where the document has none (a key its profiles give, a default of the schema).

    Raises
    ------
    OverrideError : an entry no list has (with a did-you-mean).
    """
    parts = path.split(".")
    cur: Any = data
    i = 0
    while i < len(parts):
        if not isinstance(cur, Mapping):
            return None
        cur = cur.get(parts[i])
        if i == 0 and parts[0] in TOPOLOGY_LISTS and isinstance(cur, list) and i + 1 < len(parts):
            i += 1
            cur = cur[_topology_entry(parts[0], cur, parts[i], path)]
        i += 1
    return cur


def topology_patch(data: Mapping[str, Any], path: str, value: Any) -> tuple[dict[str, Any], str]:
    """A topology document with ``path`` set to ``value`` (``data`` is not modified), and the
    key the path names in the document (entries by index: ``traffic.0.rate_rps``), as the
    loader names keys in its errors.

    A PATH is a dotted key of the file: ``share_levels``, ``serving.link_utilization_cap``,
    ``resilience.site_chip_loss_share``; an entry of ``sites``, ``lines`` or ``traffic`` by its
    name (a line by ``SITE-SITE`` too) or index, then a key of it
    (``traffic.north.rate_rps``, ``lines.beijing-tianjin.link_numbers.bandwidth_gbit_per_s``,
    ``sites.tianjin.chips.gpu-b.rental_usd_per_hour``). A key the file lacks is added; the
    schema then rejects one it does not know (the file's message).

    Raises
    ------
    OverrideError : an entry no list has (with a did-you-mean), or a path into a value that is
        not a mapping.
    """
    if not isinstance(path, str) or not path:
        raise OverrideError("an override key must be a dotted path", key=str(path))
    parts = path.split(".")
    out = copy.deepcopy(dict(data))
    cur: Any = out
    doc_key: list[str] = []
    i = 0
    while i < len(parts) - 1:
        part = parts[i]
        if not isinstance(cur, dict):
            raise OverrideError(f"{'.'.join(doc_key)} is not a mapping", key=path, unknown_key=True)
        nxt = cur.setdefault(part, {})
        doc_key.append(part)
        if i == 0 and part in TOPOLOGY_LISTS and isinstance(nxt, list):
            i += 1
            want = parts[i]
            if i == len(parts) - 1:
                raise OverrideError(
                    f"names an entry of {part}; give a key of it ({path}.KEY)", key=path
                )
            k = _topology_entry(part, nxt, want, path)
            cur = nxt[k]
            doc_key.append(str(k))
            i += 1
            continue
        cur = nxt
        i += 1
    if not isinstance(cur, dict):
        raise OverrideError(f"{'.'.join(doc_key)} is not a mapping", key=path, unknown_key=True)
    cur[parts[-1]] = copy.deepcopy(value)
    doc_key.append(parts[-1])
    return out, ".".join(doc_key)
