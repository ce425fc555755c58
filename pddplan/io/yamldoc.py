"""The only module that reads YAML: strict parsing with the line of every key.

YAML is read with YAML 1.2 scalars (``1e9`` is a float, only ``true``/``false`` are booleans,
``no`` stays a string), duplicate keys are errors, and every key's line is remembered so that a
validation error names the file, the key path and the line. Nothing here knows a schema: a file
that is not YAML fails with its file and line before any spec (or pydantic) is imported, which
is what lets a command report a YAML error at the cost of its own start
(:func:`pddplan.cli.common.read_scenario_early`).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pddplan.errors import ProfileError, dotted
from pddplan.io import parse_cache

if TYPE_CHECKING:
    import yaml

    from pddplan.spec.validation import Path_


@dataclass
class YamlDoc:
    """A parsed YAML document: plain data plus the line (1-based) of every key path."""

    data: Any
    lines: dict[Path_, int]
    file: str
    #: The parse cache's name for the file's content (:func:`pddplan.io.parse_cache.key`),
    #: "" for a document not read from a file as it is (a merge, a patch).
    key: str = field(default="", compare=False, repr=False)


# ----------------------------------------------------------------------------- strict YAML


class _LimitError(Exception):
    """A document over one of the size limits (raised while composing, before construction)."""

    def __init__(self, message: str, line: int | None) -> None:
        super().__init__(message)
        self.line = line


def _core_int(loader: Any, node: Any) -> int:
    """A YAML 1.2 core-schema integer: ``0o`` octal, ``0x`` hex, anything else decimal."""
    text = loader.construct_scalar(node)
    if text.startswith("0o"):
        return int(text[2:], 8)
    if text.startswith("0x"):
        return int(text[2:], 16)
    return int(text, 10)


@functools.cache
def _strict_loader() -> type[yaml.SafeLoader]:
    """The strict loader class, made on the first parse: a start whose documents all come from
    the parse cache (:mod:`pddplan.io.parse_cache`) does not import PyYAML."""
    import yaml

    class _StrictLoader(yaml.SafeLoader):
        """SafeLoader with YAML 1.2 core-schema booleans, integers and floats, and limits on aliases and depth
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
            if tag
            not in ("tag:yaml.org,2002:bool", "tag:yaml.org,2002:int", "tag:yaml.org,2002:float")
        ]
        for k, v in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }
    _StrictLoader.add_implicit_resolver(
        "tag:yaml.org,2002:bool",
        re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
        list("tTfF"),
    )
    # YAML 1.2's core integers: decimal (a leading 0 is still decimal), 0o octal, 0x hex. YAML
    # 1.1's read 0224 as octal (148), 2:28 as base 60 (148) and 1_000 as 1000; before the
    # floats, whose pattern matches a bare integer too
    _StrictLoader.add_implicit_resolver(
        "tag:yaml.org,2002:int",
        re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$"),
        list("-+0123456789"),
    )
    _StrictLoader.add_constructor("tag:yaml.org,2002:int", _core_int)
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
            not in (
                "tag:yaml.org,2002:timestamp",
                "tag:yaml.org,2002:merge",
                "tag:yaml.org,2002:value",
            )
        ]
    return _StrictLoader


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
    import yaml

    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def _build(
    node: yaml.Node, loader: yaml.SafeLoader, path: Path_, lines: dict[Path_, int], file: str
) -> Any:
    import yaml

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
    import yaml

    try:
        loader = _strict_loader()(text)
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
        from pddplan.io.files import unreadable

        raise unreadable(path, "file", exc) from None
    return _read_yaml_cached(str(path), st.st_size, st.st_mtime_ns)


@functools.lru_cache(maxsize=512)
def _read_yaml_cached(path: str, size: int, mtime_ns: int) -> YamlDoc:
    if size > MAX_DOCUMENT_BYTES:
        raise _too_large(path)
    return doc_from_bytes(path, read_document_bytes(Path(path)))


def _too_large(path: str) -> ProfileError:
    """The error of a file over :data:`MAX_DOCUMENT_BYTES`."""
    return ProfileError(
        f"the file is larger than {MAX_DOCUMENT_BYTES // 1024 // 1024} MiB: not a profile "
        "or scenario",
        file=path,
    )


def read_document_bytes(path: Path) -> bytes:
    """A profile or scenario file's bytes, at most :data:`MAX_DOCUMENT_BYTES` (a device or pipe
    reports no size, so the read itself stops there); ProfileError beyond, or unreadable."""
    try:
        with path.open("rb") as fh:
            raw = fh.read(MAX_DOCUMENT_BYTES + 1)
    except OSError as exc:
        from pddplan.io.files import unreadable

        raise unreadable(path, "file", exc) from None
    if len(raw) > MAX_DOCUMENT_BYTES:
        raise _too_large(str(path))
    return raw


def doc_from_bytes(path: str, raw: bytes) -> YamlDoc:
    """The document of the file ``path`` holding ``raw`` (UTF-8 text), from the parse cache
    (:mod:`pddplan.io.parse_cache`, keyed by the path and these bytes) or parsed and kept."""
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
