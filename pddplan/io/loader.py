"""The only module that touches YAML: strict loading, line numbers, and the profile search path.

YAML is read with YAML 1.2 scalars (``1e9`` is a float, only ``true``/``false`` are booleans,
``no`` stays a string), duplicate keys are errors, and every key's line is remembered so that a
validation error names the file, the key path and the line.
"""

from __future__ import annotations

import copy
import functools
import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from pddplan.errors import NotFoundError, ProfileError, did_you_mean
from pddplan.io import parse_cache
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
from pddplan.spec.validation import YamlDoc as YamlDoc  # re-exported: the parsed document

ENV_VAR = "PDDPLAN_PROFILES"


# ----------------------------------------------------------------------------- strict YAML


class _LimitError(Exception):
    """A document over one of the size limits (raised while composing, before construction)."""

    def __init__(self, message: str, line: int | None) -> None:
        super().__init__(message)
        self.line = line


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader with YAML 1.2 core-schema booleans and floats, and limits on aliases and depth
    checked while the node tree is composed (before anything is constructed)."""

    _depth = 0
    _aliases = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            self._aliases += 1
            if self._aliases > MAX_ALIASES:
                mark = self.peek_event().start_mark
                raise _LimitError(
                    f"more than {MAX_ALIASES} aliases (*name): not accepted", mark.line + 1
                )
            return super().compose_node(parent, index)
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                mark = self.peek_event().start_mark
                raise _LimitError(
                    f"nested deeper than {MAX_DEPTH} levels: not accepted", mark.line + 1
                )
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


_StrictLoader.yaml_implicit_resolvers = {
    k: [
        (tag, rx)
        for tag, rx in v
        if tag not in ("tag:yaml.org,2002:bool", "tag:yaml.org,2002:float")
    ]
    for k, v in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_StrictLoader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)
_StrictLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(
        r"""^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?
        |[-+]?\.(?:inf|Inf|INF)
        |\.(?:nan|NaN|NAN))$""",
        re.X,
    ),
    list("-+0123456789."),
)
# YAML 1.2's core schema has no timestamps, merge keys or value keys: such scalars stay strings
for _first, _resolvers in list(_StrictLoader.yaml_implicit_resolvers.items()):
    _StrictLoader.yaml_implicit_resolvers[_first] = [
        (tag, rx)
        for tag, rx in _resolvers
        if tag
        not in ("tag:yaml.org,2002:timestamp", "tag:yaml.org,2002:merge", "tag:yaml.org,2002:value")
    ]

#: Largest YAML document read [bytes]: profiles and scenarios are a few kilobytes.
MAX_DOCUMENT_BYTES = 4 * 1024 * 1024
#: Most aliases (``*name``) in one document.
MAX_ALIASES = 100
#: Deepest nesting of mappings and lists.
MAX_DEPTH = 64
#: Most nodes of a document once its aliases are expanded (a billion-laughs bomb is far above).
MAX_NODES = 200_000
#: The tags of YAML 1.2's core schema: any other tag (``!!python/...``, ``!!binary``, ``!x``)
#: is an error.
CORE_TAGS = frozenset(
    f"tag:yaml.org,2002:{t}" for t in ("str", "int", "float", "bool", "null", "map", "seq")
)


def _check_nodes(root: yaml.Node, file: str) -> None:
    """Reject a document whose aliases expand past :data:`MAX_NODES` nodes or refer to
    themselves, and any tag outside the core schema; nothing is constructed yet."""
    sizes: dict[int, int] = {}
    active: set[int] = set()
    # iterative post-order walk, memoized per node: a shared node is counted by its size
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            active.discard(key)
            kids = _children(node)
            sizes[key] = 1 + sum(sizes[id(k)] for k in kids)
            if sizes[key] > MAX_NODES:
                raise ProfileError(
                    f"the document expands to more than {MAX_NODES:,} values through its "
                    "aliases: not accepted",
                    file=file,
                    line=node.start_mark.line + 1,
                )
            continue
        if key in sizes:
            continue
        if key in active:
            raise ProfileError(
                "an alias refers to the mapping or list that contains it: not accepted",
                file=file,
                line=node.start_mark.line + 1,
            )
        if node.tag not in CORE_TAGS:
            tag = node.tag.replace("tag:yaml.org,2002:", "!!")
            raise ProfileError(
                f"YAML tag {tag!r} is not allowed (only plain mappings, lists, strings, "
                "numbers, booleans and null)",
                file=file,
                line=node.start_mark.line + 1,
            )
        active.add(key)
        stack.append((node, True))
        stack.extend((k, False) for k in _children(node) if id(k) not in sizes)


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def _build(
    node: yaml.Node, loader: _StrictLoader, path: Path_, lines: dict[Path_, int], file: str
) -> Any:
    lines.setdefault(path, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        out: dict[str, Any] = {}
        for key_node, value_node in node.value:
            key = loader.construct_object(key_node, deep=True)
            if not isinstance(key, str):
                key = str(key)
            sub = (*path, key)
            if key in out:
                raise ProfileError(
                    f"duplicate key {key!r} (first at line {lines[sub]})",
                    file=file,
                    key=dotted(sub),
                    line=key_node.start_mark.line + 1,
                )
            lines[sub] = key_node.start_mark.line + 1
            out[key] = _build(value_node, loader, sub, lines, file)
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_build(n, loader, (*path, i), lines, file) for i, n in enumerate(node.value)]
    return loader.construct_object(node, deep=True)


def parse_yaml(text: str, file: str) -> YamlDoc:
    """Parse one YAML document strictly; raise :class:`ProfileError` naming file and line.

    The document's size, its aliases and its nesting depth are checked before anything is
    constructed (:data:`MAX_DOCUMENT_BYTES`, :data:`MAX_ALIASES`, :data:`MAX_NODES`,
    :data:`MAX_DEPTH`), and tags outside YAML 1.2's core schema are rejected.
    """
    if len(text) > MAX_DOCUMENT_BYTES:
        raise ProfileError(
            f"the document is larger than {MAX_DOCUMENT_BYTES // 1024 // 1024} MiB: not accepted",
            file=file,
        )
    try:
        loader = _StrictLoader(text)
    except yaml.YAMLError as exc:
        raise ProfileError(f"invalid YAML: {' '.join(str(exc).split())}", file=file) from None
    try:
        node = loader.get_single_node()
        lines: dict[Path_, int] = {}
        if node is not None:
            _check_nodes(node, file)
        data = {} if node is None else _build(node, loader, (), lines, file)
    except _LimitError as exc:
        raise ProfileError(str(exc), file=file, line=exc.line) from None
    except RecursionError:
        raise ProfileError(
            f"nested deeper than {MAX_DEPTH} levels: not accepted", file=file
        ) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        line = mark.line + 1 if mark is not None else None
        raise ProfileError(f"invalid YAML: {exc.problem}", file=file, line=line) from None
    except yaml.YAMLError as exc:
        raise ProfileError(f"invalid YAML: {' '.join(str(exc).split())}", file=file) from None
    except ValueError as exc:  # e.g. an integer of more than 4300 digits
        raise ProfileError(f"invalid value: {exc}", file=file) from None
    finally:
        loader.dispose()
    return YamlDoc(data=data, lines=lines, file=file)


def read_yaml(path: Path) -> YamlDoc:
    """Parse a YAML file; parses are cached by path, size and modification time.

    The returned document is shared: callers must not modify ``data`` (merges copy it).
    """
    try:
        st = path.stat()
    except OSError as exc:
        raise ProfileError(f"cannot read file: {exc.strerror}", file=str(path)) from None
    return _read_yaml_cached(str(path), st.st_size, st.st_mtime_ns)


@functools.lru_cache(maxsize=512)
def _read_yaml_cached(path: str, size: int, mtime_ns: int) -> YamlDoc:
    if size > MAX_DOCUMENT_BYTES:
        raise ProfileError(
            f"the file is larger than {MAX_DOCUMENT_BYTES // 1024 // 1024} MiB: not a profile "
            "or scenario",
            file=path,
        )
    try:
        with Path(path).open("rb") as fh:
            raw = fh.read(MAX_DOCUMENT_BYTES + 1)  # a device or pipe reports no size
    except OSError as exc:
        raise ProfileError(f"cannot read file: {exc.strerror}", file=path) from None
    if len(raw) > MAX_DOCUMENT_BYTES:
        raise ProfileError(
            f"the file is larger than {MAX_DOCUMENT_BYTES // 1024 // 1024} MiB: not a profile "
            "or scenario",
            file=path,
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise ProfileError(
            f"not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset {exc.start})",
            file=path,
            line=line,
        ) from None
    name = parse_cache.key(path, raw)
    kept = parse_cache.get(name)
    if isinstance(kept, YamlDoc) and kept.file == path and kept.key == name:
        return kept
    if kept is not None:
        parse_cache.damaged(name)
    doc = parse_yaml(text, path)
    doc.key = name
    parse_cache.put(name, doc)
    return doc


def validate(cls: type[Strict], doc: YamlDoc) -> Any:
    if not isinstance(doc.data, dict):
        raise ProfileError("expected a mapping of keys at the top level", file=doc.file, line=1)
    try:
        return cls.model_validate(doc.data)
    except ValidationError as exc:
        raise validation_to_profile_error(exc, cls, doc) from None


def load_file(path: Path, expected_kind: str | None = None) -> Any:
    """Load and validate one profile or scenario file; its ``kind:`` picks the schema.

    A file validated before is read back validated (:func:`pddplan.io.parse_cache.
    validated_key`: keyed by its content, the kind asked for and the schemas' source)."""
    doc = read_yaml(path)
    if not doc.key:
        return _load_doc(path, doc, expected_kind)
    name = parse_cache.validated_key(doc.key, expected_kind)
    kept = parse_cache.get(name, "validated")
    if kept is not None:
        said = doc.data.get("kind") if isinstance(doc.data, dict) else None
        if isinstance(kept, KINDS.get(expected_kind or said or "", ())):
            return kept
        parse_cache.damaged(name, "validated")
    obj = _load_doc(path, doc, expected_kind)
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


def bundled_profiles_dir() -> Path:
    """The profiles shipped with pddplan: inside the wheel, or the source checkout's folder."""
    package = Path(__file__).resolve().parent.parent  # pddplan/
    inside = package / "_profiles"
    if inside.is_dir():
        return inside
    return package.parent / "profiles"


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


#: Suffixes that make a workload value a file path rather than a profile name.
WORKLOAD_FILE_SUFFIXES = (".yaml", ".yml")


def is_workload_path(value: str) -> bool:
    """Whether a scenario's ``workload`` value (or ``--set workload=...``) names a file rather
    than a workload profile: it ends in ``.yaml``/``.yml`` or contains a path separator.

    Profile names are file stems, so they never do.
    """
    seps = {"/", os.sep} | ({os.altsep} if os.altsep else set())
    return value.lower().endswith(WORKLOAD_FILE_SUFFIXES) or any(s in value for s in seps)


@dataclass
class Registry:
    """Profiles by kind and name, from user directories first, then the bundled set.

    A user profile with the same name as a bundled one shadows it; ``profiles list`` shows
    which file each name resolves to.
    """

    dirs: list[Path] = field(default_factory=list)

    @classmethod
    def default(cls, extra: Iterable[Path] = ()) -> Registry:
        dirs: list[Path] = [Path(p) for p in extra]
        env = os.environ.get(ENV_VAR, "")
        dirs += [Path(p) for p in env.split(os.pathsep) if p]
        for d in dirs:
            if not d.is_dir():
                raise NotFoundError(f"profiles directory not found: {d}")
        dirs.append(bundled_profiles_dir())
        return cls(dirs=dirs)

    def index(self, kind: str) -> dict[str, Path]:
        """Profile names of a kind and the files they resolve to (listed once per registry)."""
        cache = self.__dict__.setdefault("_index_cache", {})
        if kind not in cache:
            cache[kind] = self._scan(kind)
        return cache[kind]

    def _scan(self, kind: str) -> dict[str, Path]:
        sub = KIND_DIRS[kind]
        found: dict[str, Path] = {}
        for d in self.dirs:
            for p in sorted((d / sub).glob("*.yaml")) if (d / sub).is_dir() else []:
                found.setdefault(p.stem, p)
        return found

    def path(self, kind: str, name: str, *, base_dir: Path | None = None, origin: str = "") -> Path:
        """The file of the ``kind`` profile ``name``; a workload may also be named by its file
        (:func:`is_workload_path`), relative to ``base_dir`` (default: the working directory).

        ``origin`` says where the value was given (``workload: in scen.yaml``), for the message.

        Raises
        ------
        NotFoundError
            no such profile (with a did-you-mean), or no such workload file.
        """
        if kind == "workload" and is_workload_path(name):
            return self._workload_file(name, base_dir, origin)
        idx = self.index(kind)
        if name not in idx:
            hint = did_you_mean(name, idx)
            if kind == "workload":
                hint += " (a path to a workload file, FILE.yaml, is also accepted)"
            raise NotFoundError(f"no {kind} profile named {name!r}{hint}")
        return idx[name]

    @staticmethod
    def _workload_file(value: str, base_dir: Path | None, origin: str) -> Path:
        p = Path(value).expanduser()
        if not p.is_absolute() and base_dir is not None:
            p = base_dir / p
        if not p.is_file():
            where = [f"looked for {p}"] if str(p) != value else []
            where += [origin] if origin else []
            tail = f" ({'; '.join(where)})" if where else ""
            raise NotFoundError(f"{value}: workload file not found{tail}")
        return p

    def load(self, kind: str, name: str) -> Any:
        return _load_cached(self.path(kind, name), kind)

    def find_any(self, name: str) -> tuple[str, Path]:
        hits = [(k, self.index(k)[name]) for k in KIND_DIRS if name in self.index(k)]
        if not hits:
            names = [n for k in KIND_DIRS for n in self.index(k)]
            raise NotFoundError(f"no profile named {name!r}{did_you_mean(name, names)}")
        return hits[0]

    def scenarios(self) -> dict[str, Path]:
        """Scenario names and their files: each directory's ``scenarios/``, then (in a source
        checkout) the example scenarios, which the wheel bundles under ``scenarios/``."""
        found: dict[str, Path] = {}
        dirs = [d / "scenarios" for d in self.dirs]
        examples = bundled_profiles_dir().parent / "examples"
        if bundled_profiles_dir().name == "profiles" and examples.is_dir():
            dirs.append(examples)
        for d in dirs:
            for p in sorted(d.glob("*.yaml")) if d.is_dir() else []:
                found.setdefault(p.stem, p)
        return found

    def scenario_path(self, name_or_path: str | None) -> Path:
        """A scenario given as a file path, or by name (:meth:`scenarios`)."""
        if name_or_path is None:
            name_or_path = "default"
        p = Path(name_or_path)
        if p.suffix in (".yaml", ".yml") or p.exists():
            if not p.is_file():
                raise NotFoundError(f"scenario file not found: {p}")
            return p
        known = self.scenarios()
        if name_or_path in known:
            return known[name_or_path]
        hint = did_you_mean(name_or_path, known) or f" (bundled: {', '.join(known)})"
        raise NotFoundError(f"no scenario file or bundled scenario named {name_or_path!r}{hint}")


@cache
def _load_cached(path: Path, kind: str) -> Any:
    return load_file(path, kind)


# -------------------------------------------------------------------------------- scenarios


def _deep_merge(base: dict[str, Any], patch: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` with ``patch`` merged in, key by key, as a new document: neither is changed
    and the result shares no container with either (one deep copy of ``base``, patched in
    place: a copy at every level took a document's size times its depth)."""
    out = copy.deepcopy(base)
    _merge_into(out, patch)
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
            out[k] = copy.deepcopy(v)


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


def _in_override(ov: Mapping[str, Any], path: Path_) -> bool:
    cur: Any = ov
    for part in path:
        if isinstance(cur, Mapping) and part in cur:
            cur = cur[part]
        else:
            return isinstance(cur, Mapping) and cur is not ov
    return True


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
    scen: Scenario = validate(Scenario, doc)
    return resolve(scen, doc, registry)


def resolve(
    scen: Scenario,
    doc: YamlDoc,
    registry: Registry,
    read: Callable[[Path], YamlDoc] = read_yaml,
) -> ResolvedScenario:
    """The profiles ``scen`` names, loaded, with its ``overrides`` merged and validated.

    ``read`` parses a profile file that has overrides (a caller that resolves many variants of
    one scenario passes a memoized reader).
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
        group = next(g for g, k in _OVERRIDE_KINDS.items() if k == kind)
        ov = scen.overrides.get(group, {}).get(name)
        if not ov:
            return _load_cached(ppath, kind)
        base = read(ppath)
        merged = YamlDoc(_deep_merge(base.data, ov), base.lines, str(ppath))
        try:
            return KINDS[kind].model_validate(merged.data)
        except ValidationError as exc:
            err = validation_to_profile_error(exc, KINDS[kind], merged)
            path = data_path(exc.errors(include_url=False)[0]["loc"], merged.data)
            okey: Path_ = ("overrides", group, name, *path)
            if _in_override(ov, path):
                # the offending value came from the scenario: name the scenario's key and line
                msg = err.message.split(": ", 2)[-1]
                raise ProfileError(
                    msg, file=file, key=dotted(okey), line=line_for(doc, okey)
                ) from None
            raise ProfileError(f"{err.message} (with the overrides of {file})", file=None) from None

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
